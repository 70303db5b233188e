//! `tollgate serve` on Discord end to end: the real binary and the real serenity client
//! against a fake Discord (REST and gateway) and a scripted model on loopback. Each test drives
//! gateway events and asserts on what the fake was sent, what ran and what the model was told.

use super::fakes::discord::payloads::{self, BOT, Place};
use super::fakes::discord::{Call, FakeDiscord};
use super::fakes::llm::{FakeLlm, Reply, text, tool_calls};
use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const TOKEN: &str = "discord-SECRET-token-value";
const WAIT: Duration = Duration::from_secs(20);
/// An allowed user, an admin, a holder of the admin role, a stranger.
const USER: u64 = 7;
const ADMIN: u64 = 1;
const ROLE_ADMIN: u64 = 8;
const STRANGER: u64 = 99;
const ADMIN_ROLE: u64 = 55;
/// The allowed guild and its text channel; a guild nobody allowed and its channel.
const GUILD: u64 = 10;
const CHANNEL: u64 = 600;
const FOREIGN_GUILD: u64 = 20;
const FOREIGN_CHANNEL: u64 = 700;
/// The DM channel of user N, as the fake opens it.
fn dm_channel(user: u64) -> u64 {
    500_000 + user
}

/// Ids for events (messages, interactions), unique within a test process.
fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1_000_000);
    NEXT.fetch_add(1, Ordering::SeqCst)
}

/// A served tollgate with its Discord bridge.
pub struct Served {
    pub dir: tempfile::TempDir,
    child: Option<Child>,
    pub discord: FakeDiscord,
    pub llm: FakeLlm,
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Served {
    /// Starts `tollgate serve` with extra lines in the agent's and the `[discord]` sections,
    /// and waits for the gateway to be ready.
    pub async fn start(script: Vec<Reply>, agent_extra: &str, discord_extra: &str) -> Served {
        let mut served = Served::new(script, agent_extra, discord_extra, "").await;
        served.spawn(&[]);
        served.discord.ready(1).await;
        served
    }

    /// The fakes and the config; `more` is appended (another bridge's section).
    pub async fn new(
        script: Vec<Reply>,
        agent_extra: &str,
        discord_extra: &str,
        more: &str,
    ) -> Served {
        let discord = FakeDiscord::start().await;
        discord.add_channel(payloads::channel(CHANNEL, 0, GUILD, None, None));
        discord.add_channel(payloads::channel(
            FOREIGN_CHANNEL,
            0,
            FOREIGN_GUILD,
            None,
            None,
        ));
        let llm = FakeLlm::start(script).await;
        let dir = tempfile::tempdir().unwrap();
        let quiet = if discord_extra.contains("progress_interval_secs") {
            ""
        } else {
            "progress_interval_secs = 0\ntyping = false\n"
        };
        // A test that names the agent's tools replaces the default three.
        let tools = if agent_extra.contains("tools =") {
            ""
        } else {
            "tools = [\"read_file\", \"write_file\", \"ask_user_question\"]\n"
        };
        let config = format!(
            "[store]\npath = \"store\"\ncache_capacity_mb = 8\n[providers.p]\nkind = \"openai\"\nbase_url = \"{}\"\nmax_retries = 1\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\n{tools}workspace = \"ws\"\n{agent_extra}\n[discord]\napi_url = \"{}\"\nallowed_users = [\"{USER}\"]\nallowed_guilds = [{GUILD}]\nadmins = [{ADMIN}]\nadmin_roles = [\"{ADMIN_ROLE}\"]\n{quiet}{discord_extra}\n{more}",
            llm.url, discord.url
        );
        std::fs::write(dir.path().join("tollgate.toml"), &config).unwrap();
        Served {
            dir,
            child: None,
            discord,
            llm,
        }
    }

    pub fn spawn(&mut self, env: &[(&str, String)]) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("serve.log"))
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .args(["serve", "--config", "tollgate.toml"])
            .current_dir(self.dir.path())
            .env("DISCORD_TOKEN", TOKEN)
            .env_remove("TELEGRAM_BOT_TOKEN")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    /// kill -9.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("serve.log")).unwrap_or_default()
    }

    pub fn tollgate(&self, args: &[&str]) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .args(args)
            .args(["--config", "tollgate.toml"])
            .current_dir(self.dir.path())
            .output()
            .unwrap()
    }

    /// `tollgate audit --json`, as text.
    pub fn audit(&self) -> String {
        String::from_utf8_lossy(&self.tollgate(&["audit", "--json"]).stdout).to_string()
    }

    /// A DM from `user` (its DM channel is [`dm_channel`]); the message's id.
    pub fn dm(&self, user: u64, content: &str) -> u64 {
        self.dm_with_files(user, content, json!([]))
    }

    /// A DM from `user` carrying `attachments` (made with `payloads::attachment`); the
    /// message's id.
    pub fn dm_with_files(&self, user: u64, content: &str, attachments: Value) -> u64 {
        let id = next_id();
        let name = format!("User{user}");
        let mut message = payloads::message(
            id,
            Place::dm(dm_channel(user)),
            (user, &name, &[]),
            content,
            &[],
        );
        message["attachments"] = attachments;
        self.discord.dispatch("MESSAGE_CREATE", message);
        id
    }

    /// A message in a guild channel (or thread) from `user` with `roles`, mentioning the bot
    /// when `mention`; the message's id.
    pub fn say_in(
        &self,
        place: Place,
        user: u64,
        roles: &[u64],
        content: &str,
        mention: bool,
    ) -> u64 {
        let id = next_id();
        let name = format!("User{user}");
        let (content, mentions) = if mention {
            (format!("<@{BOT}> {content}"), vec![BOT])
        } else {
            (content.to_string(), vec![])
        };
        let message = payloads::message(id, place, (user, &name, roles), &content, &mentions);
        self.discord.dispatch("MESSAGE_CREATE", message);
        id
    }

    /// A press of the button `custom_id` on `card` by `user` with `roles`; the interaction id.
    pub fn press(&self, place: Place, user: u64, roles: &[u64], card: u64, custom_id: &str) -> u64 {
        let id = next_id();
        let name = format!("User{user}");
        let press = payloads::button_press(id, place, (user, &name, roles), card, custom_id);
        self.discord.dispatch("INTERACTION_CREATE", press);
        id
    }

    /// The slash command `/name args` from `user`; the interaction id.
    pub fn slash(
        &self,
        place: Place,
        user: u64,
        roles: &[u64],
        name: &str,
        args: Option<&str>,
    ) -> u64 {
        let id = next_id();
        let who = format!("User{user}");
        let command = payloads::slash_command(id, place, (user, &who, roles), name, args);
        self.discord.dispatch("INTERACTION_CREATE", command);
        id
    }

    /// Waits for a message posted to `channel` that contains `needle`.
    pub async fn wait_posted(&self, channel: u64, needle: &str) -> String {
        self.discord
            .wait_for(WAIT, needle, |d| {
                d.posted_to(channel)
                    .into_iter()
                    .find(|m| m.contains(needle))
            })
            .await
    }

    /// The `skip`th card posted to `channel`: its message id and body.
    pub async fn card(&self, channel: u64, skip: usize) -> (u64, Value) {
        self.discord
            .wait_for(WAIT, "a card", |d| {
                d.cards()
                    .into_iter()
                    .filter(|(c, _, _)| *c == channel)
                    .nth(skip)
                    .map(|(_, id, body)| (id, body))
            })
            .await
    }

    /// The follow-up answering interaction `id` (its token is `itoken-<id>`).
    pub async fn follow_up(&self, id: u64) -> Call {
        let path = format!("/webhooks/{}/itoken-{id}", payloads::APPLICATION);
        self.discord
            .wait_for(WAIT, "the interaction's answer", |d| {
                d.calls()
                    .into_iter()
                    .find(|c| c.method == "POST" && c.path == path)
            })
            .await
    }

    /// The edit of message `message` in `channel`.
    pub async fn edit_of(&self, channel: u64, message: u64) -> Value {
        let path = format!("/channels/{channel}/messages/{message}");
        self.discord
            .wait_for(WAIT, "the card's edit", |d| {
                d.calls()
                    .into_iter()
                    .find(|c| c.method == "PATCH" && c.path == path)
                    .map(|c| c.body)
            })
            .await
    }
}

/// The `custom_id` of the button whose label says `label`.
pub fn button(card: &Value, label: &str) -> String {
    card["components"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row["components"].as_array().unwrap().iter())
        .find(|b| b["label"].as_str().unwrap_or("").contains(label))
        .unwrap_or_else(|| panic!("no button {label} on {card}"))["custom_id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn write_call(id: &str, path: &str, content: &str) -> Reply {
    tool_calls(&[(
        id,
        "write_file",
        &json!({"path": path, "content": content}).to_string(),
    )])
}

mod fake;
mod scenarios;
mod sessions;
