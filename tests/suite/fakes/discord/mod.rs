//! A fake Discord on loopback that the real serenity client (and the bridge's REST layer)
//! talks to: REST (`/api/v10/...`: the bot's user and application, the gateway's address,
//! channels, messages and their edits, files, typing, threads, DMs, interaction callbacks and
//! follow-ups, slash commands, attachment downloads) and the gateway websocket ([`gateway`]).
//! Every REST call is recorded with its `Authorization` header; faults (429 by route or
//! global, 5xx) are injected per route.

pub mod gateway;
pub mod payloads;

use super::http::{Request, accept_all, listener};
use payloads::{APPLICATION, BOT};
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// One REST call as the fake received it.
#[derive(Clone, Debug)]
pub struct Call {
    pub method: String,
    /// Without the `/api/v10` prefix: `/channels/600/messages`.
    pub path: String,
    /// The JSON body (for multipart: `payload_json`, with the raw text under `_raw`).
    pub body: Value,
    pub authorization: Option<String>,
    pub at: Instant,
}

/// An answer injected for the next call matching a route.
#[derive(Clone, Debug)]
pub struct Fault {
    pub status: u16,
    pub body: Value,
    pub headers: String,
}

impl Fault {
    /// A 429 with `retry_after` seconds, for the route or the whole bot.
    pub fn rate_limited(retry_after: f64, global: bool) -> Fault {
        let scope = if global { "global" } else { "user" };
        Fault {
            status: 429,
            body: json!({"message": "You are being rate limited.", "retry_after": retry_after, "global": global}),
            headers: format!(
                "x-ratelimit-scope: {scope}\r\nretry-after: {}\r\n",
                retry_after.ceil()
            ),
        }
    }

    /// The real answer, with headers saying the route's bucket is empty for `reset_after`
    /// seconds.
    pub fn bucket_empty(reset_after: f64) -> Fault {
        Fault {
            status: 0,
            body: Value::Null,
            headers: format!(
                "x-ratelimit-limit: 5\r\nx-ratelimit-remaining: 0\r\nx-ratelimit-reset-after: {reset_after}\r\nx-ratelimit-bucket: fake\r\n"
            ),
        }
    }

    pub fn server_error() -> Fault {
        Fault {
            status: 502,
            body: json!({"message": "Bad Gateway", "code": 0}),
            headers: String::new(),
        }
    }
}

#[derive(Default)]
pub struct State {
    pub calls: Vec<Call>,
    channels: HashMap<u64, Value>,
    next_message: u64,
    /// Route pattern (`POST /channels/*/messages`) → answers to give before the real one.
    faults: HashMap<String, VecDeque<Fault>>,
    files: HashMap<String, Vec<u8>>,
    pub gateway: gateway::GatewayState,
}

pub struct FakeDiscord {
    /// The REST base (`api_url` in the config).
    pub url: String,
    pub state: Arc<Mutex<State>>,
    pub changed: Arc<Notify>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for FakeDiscord {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// `path` with every number replaced by `*` (and an interaction's token too): the route.
pub fn pattern(method: &str, path: &str) -> String {
    let segments: Vec<&str> = path.split('/').collect();
    let mut out = Vec::new();
    for (i, s) in segments.iter().enumerate() {
        let token_slot = i > 0 && matches!(segments[i - 1], "webhooks" | "interactions")
            || (i > 1 && matches!(segments[i - 2], "webhooks" | "interactions"));
        if !s.is_empty() && (s.chars().all(|c| c.is_ascii_digit()) || token_slot) {
            out.push("*");
        } else {
            out.push(s);
        }
    }
    format!("{method} {}", out.join("/"))
}

impl FakeDiscord {
    pub async fn start() -> FakeDiscord {
        let rest = listener();
        let ws = listener();
        let url = format!("http://{}", rest.local_addr().unwrap());
        let ws_url = format!("ws://{}", ws.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State {
            next_message: 10_000,
            ..State::default()
        }));
        state.lock().unwrap().gateway.url = ws_url;
        let changed = Arc::new(Notify::new());
        let (shared, notify) = (state.clone(), changed.clone());
        let base = url.clone();
        let rest_task = accept_all(rest, Arc::default(), move |mut connection| {
            let (shared, notify, base) = (shared.clone(), notify.clone(), base.clone());
            async move {
                while let Some(request) = connection.next_request().await {
                    let (status, headers, body) = handle(&shared, &notify, &base, &request);
                    connection
                        .respond(status, "application/json", &headers, body.as_bytes())
                        .await;
                }
            }
        });
        let gateway_task = tokio::spawn(gateway::serve(ws, state.clone(), changed.clone()));
        FakeDiscord {
            url,
            state,
            changed,
            tasks: vec![rest_task, gateway_task],
        }
    }

    /// A channel `GET /channels/{id}` knows (see [`payloads::channel`]).
    pub fn add_channel(&self, channel: Value) {
        let id = channel["id"].as_str().unwrap().parse().unwrap();
        self.state.lock().unwrap().channels.insert(id, channel);
    }

    /// A file at `/attachments/{name}`; its URL.
    pub fn add_file(&self, name: &str, bytes: Vec<u8>) -> String {
        self.state
            .lock()
            .unwrap()
            .files
            .insert(name.to_string(), bytes);
        format!("{}/attachments/{name}", self.url)
    }

    /// The next call matching `route` (see [`pattern`]) gets `fault` instead of its answer.
    pub fn fail_next(&self, route: &str, fault: Fault) {
        self.state
            .lock()
            .unwrap()
            .faults
            .entry(route.to_string())
            .or_default()
            .push_back(fault);
    }

    pub fn calls(&self) -> Vec<Call> {
        self.state.lock().unwrap().calls.clone()
    }

    /// How many calls have been recorded: where a later [`Self::picked_since`] starts.
    #[allow(dead_code)] // The benchmarks' (they share these fakes with the tests).
    pub fn call_count(&self) -> usize {
        self.state.lock().unwrap().calls.len()
    }

    /// What `pick` takes from each call recorded from call `from` on, copying no call: what
    /// the benchmarks wait on, at every call recorded, so looking costs the same whatever the
    /// fake's history (a copy of every call at each look grew with it).
    #[allow(dead_code)] // The benchmarks'.
    pub fn picked_since<T>(&self, from: usize, pick: impl Fn(&Call) -> Option<T>) -> Vec<T> {
        let state = self.state.lock().unwrap();
        state
            .calls
            .get(from..)
            .unwrap_or_default()
            .iter()
            .filter_map(pick)
            .collect()
    }

    /// Calls on `route` (see [`pattern`]), answered or not.
    pub fn calls_to(&self, route: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| pattern(&c.method, &c.path) == route)
            .collect()
    }

    /// Contents of messages posted to `channel`.
    pub fn posted_to(&self, channel: u64) -> Vec<String> {
        self.calls()
            .into_iter()
            .filter(|c| c.method == "POST" && c.path == format!("/channels/{channel}/messages"))
            .filter(|c| c.body.get("_refused").is_none())
            .map(|c| c.body["content"].as_str().unwrap_or("").to_string())
            .collect()
    }

    /// Posted messages (to any channel) that carry buttons: `(channel, message id, body)`.
    pub fn cards(&self) -> Vec<(u64, u64, Value)> {
        self.calls()
            .into_iter()
            .filter(|c| {
                c.method == "POST"
                    && c.path.ends_with("/messages")
                    && c.body.get("_refused").is_none()
            })
            .filter(|c| {
                c.body["components"]
                    .as_array()
                    .is_some_and(|a| !a.is_empty())
            })
            .map(|c| {
                let channel = c.path.split('/').nth(2).unwrap().parse().unwrap();
                (channel, c.body["_id"].as_u64().unwrap(), c.body)
            })
            .collect()
    }

    /// Waits until `check` holds, or panics after `limit` with the calls so far.
    pub async fn wait_for<T>(
        &self,
        limit: Duration,
        what: &str,
        check: impl Fn(&FakeDiscord) -> Option<T>,
    ) -> T {
        let start = Instant::now();
        loop {
            let notified = self.changed.notified();
            if let Some(value) = check(self) {
                return value;
            }
            if start.elapsed() > limit {
                let calls: Vec<String> = self
                    .calls()
                    .iter()
                    .map(|c| format!("{} {} {}", c.method, c.path, c.body))
                    .collect();
                panic!("timed out waiting for {what}; calls: {calls:#?}");
            }
            let _ = tokio::time::timeout(Duration::from_millis(50), notified).await;
        }
    }
}

fn header(request: &Request, name: &str) -> Option<String> {
    request.head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then(|| value.trim().to_string())
    })
}

/// The JSON of a request: its body, or a multipart body's `payload_json` part.
fn body_of(request: &Request) -> Value {
    let text = String::from_utf8_lossy(&request.body).to_string();
    if let Ok(value) = serde_json::from_str::<Value>(&text) {
        return value;
    }
    if let Some(at) = text.find("name=\"payload_json\"") {
        let rest = &text[at..];
        if let Some(start) = rest.find("\r\n\r\n") {
            let json_text = rest[start + 4..].split("\r\n--").next().unwrap_or("");
            let mut value: Value = serde_json::from_str(json_text).unwrap_or(json!({}));
            value["_raw"] = json!(text);
            return value;
        }
    }
    json!({ "_raw": text })
}

fn handle(
    state: &Mutex<State>,
    changed: &Notify,
    base: &str,
    request: &Request,
) -> (u16, String, String) {
    let method = request
        .head
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_string();
    let full = request.path();
    let path = full
        .split('?')
        .next()
        .unwrap_or("")
        .trim_start_matches("/api/v10")
        .to_string();
    let mut body = body_of(request);
    let route = pattern(&method, &path);
    let mut state = state.lock().unwrap();
    let fault = state.faults.get_mut(&route).and_then(VecDeque::pop_front);
    let answer = match fault {
        // Status 0: the real answer, with the fault's headers.
        Some(fault) if fault.status == 0 => {
            let (status, headers, text) = answer(&mut state, base, &method, &path, &mut body);
            (status, format!("{headers}{}", fault.headers), text)
        }
        Some(fault) => {
            body["_refused"] = json!(fault.status);
            (fault.status, fault.headers, fault.body.to_string())
        }
        None => answer(&mut state, base, &method, &path, &mut body),
    };
    state.calls.push(Call {
        method,
        path,
        body,
        authorization: header(request, "authorization"),
        at: Instant::now(),
    });
    drop(state);
    changed.notify_waiters();
    answer
}

fn ok(body: Value) -> (u16, String, String) {
    (200, String::new(), body.to_string())
}

fn answer(
    state: &mut State,
    base: &str,
    method: &str,
    path: &str,
    body: &mut Value,
) -> (u16, String, String) {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (method, parts.as_slice()) {
        ("GET", ["users", "@me"]) => ok(payloads::user(BOT, "tollbot", true)),
        ("GET", ["oauth2", "applications", "@me"]) => {
            ok(json!({"id": APPLICATION.to_string(), "name": "tollgate", "flags": 0}))
        }
        ("GET", ["gateway"]) => ok(json!({"url": state.gateway.url})),
        ("GET", ["gateway", "bot"]) => ok(json!({
            "url": state.gateway.url, "shards": 1,
            "session_start_limit": {"total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": 1},
        })),
        ("GET", ["channels", id]) => {
            match id.parse().ok().and_then(|id: u64| state.channels.get(&id)) {
                Some(channel) => ok(channel.clone()),
                None => (
                    404,
                    String::new(),
                    json!({"message": "Unknown Channel", "code": 10003}).to_string(),
                ),
            }
        }
        ("POST", ["channels", channel, "messages"]) => {
            state.next_message += 1;
            let id = state.next_message;
            body["_id"] = json!(id);
            ok(json!({"id": id.to_string(), "channel_id": channel, "content": body["content"]}))
        }
        ("PATCH", ["channels", channel, "messages", id]) => {
            ok(json!({"id": id, "channel_id": channel, "content": body["content"]}))
        }
        ("POST", ["channels", _, "typing"]) => (204, String::new(), String::new()),
        ("POST", ["channels", parent, "messages", message, "threads"]) => {
            let (parent, thread): (u64, u64) = (parent.parse().unwrap(), message.parse().unwrap());
            let guild = state
                .channels
                .get(&parent)
                .and_then(|c| c["guild_id"].as_str())
                .unwrap_or("1")
                .parse()
                .unwrap_or(1);
            let channel = payloads::channel(thread, 11, guild, Some(parent), Some(BOT));
            state.channels.insert(thread, channel.clone());
            ok(channel)
        }
        ("POST", ["users", "@me", "channels"]) => {
            let user: u64 = body["recipient_id"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            // The DM channel of user N is 500000 + N.
            ok(json!({"id": (500_000 + user).to_string(), "type": 1}))
        }
        ("POST", ["interactions", _, _, "callback"]) => (204, String::new(), String::new()),
        ("POST", ["webhooks", _, _]) => {
            state.next_message += 1;
            ok(json!({"id": state.next_message.to_string(), "content": body["content"]}))
        }
        ("PUT", ["applications", _, "commands"]) => ok(body.clone()),
        ("GET", ["attachments", name]) => match state.files.get(*name) {
            Some(bytes) => (
                200,
                String::new(),
                String::from_utf8_lossy(bytes).to_string(),
            ),
            None => (404, String::new(), String::new()),
        },
        _ => {
            let _ = base;
            (
                404,
                String::new(),
                json!({"message": "404: Not Found", "code": 0}).to_string(),
            )
        }
    }
}
