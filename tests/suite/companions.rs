//! `analyze_media` and companion models, end to end through `tollgate run` against scripted
//! model servers: the vision request's shape for OpenAI-compatible and Anthropic providers,
//! the transcription request, usage recorded as `companion`, the media's type read from its
//! bytes, the size cap, video refused, and an unbound kind failing with the fix named.

use super::cli::{stderr, stdout, tollgate};
use super::fakes::llm::{FakeLlm, Reply, text, tool_calls};
use base64::Engine;
use serde_json::{Value, json};

/// A PNG's first bytes and a little more.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDRpretend-pixels";
const OGG: &[u8] = b"OggS\0\x02pretend-voice-note";

struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    /// A config whose agent `a` has `analyze_media`, reads `media/`, and `extra` lines; the
    /// agent's model is `p` at `agent_url`.
    fn new(agent_url: &str, extra_providers: &str, extra: &str) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("media")).unwrap();
        std::fs::write(
            dir.path().join("tollgate.toml"),
            format!(
                "[providers.p]\nkind = \"openai\"\nbase_url = \"{agent_url}\"\nmax_retries = 1\n{extra_providers}\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\ntools = [\"analyze_media\"]\nreadable_roots = [\"media\"]\n{extra}\n"
            ),
        )
        .unwrap();
        Setup { dir }
    }

    fn media(&self, name: &str, bytes: &[u8]) -> String {
        let path = self.dir.path().join("media").join(name);
        std::fs::write(&path, bytes).unwrap();
        path.display().to_string()
    }

    async fn run(&self, prompt: &str) -> std::process::Output {
        let (path, prompt) = (self.dir.path().to_path_buf(), prompt.to_string());
        tokio::task::spawn_blocking(move || {
            tollgate(&["run", "--config", "tollgate.toml", &prompt], &path)
        })
        .await
        .unwrap()
    }

    async fn audit(&self) -> String {
        let path = self.dir.path().to_path_buf();
        let out = tokio::task::spawn_blocking(move || {
            tollgate(&["audit", "--config", "tollgate.toml", "--json"], &path)
        })
        .await
        .unwrap();
        stdout(&out)
    }
}

fn analyze(path: &str, question: &str) -> Reply {
    tool_calls(&[(
        "m1",
        "analyze_media",
        &json!({"path": path, "question": question}).to_string(),
    )])
}

/// What the agent's model was told the tool returned (its second request's last message).
fn tool_result(fake: &FakeLlm, request: usize) -> String {
    let body = &fake.requests()[request].body;
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_image_goes_to_a_bound_openai_compatible_companion_as_a_data_url() {
    let fake = FakeLlm::start(vec![]).await;
    let setup = Setup::new(
        &fake.url,
        "",
        "[agents.a.companions]\n\"analyze:image\" = \"p/vision-1\"\n",
    );
    let photo = setup.media("photo.png", PNG);
    fake.push(analyze(&photo, "What is in the picture?"));
    fake.push(Reply::Json(json!({
        "choices": [{"message": {"role": "assistant", "content": "A red square on white."}}],
        "usage": {"prompt_tokens": 90, "completion_tokens": 7},
    })));
    fake.push(text("It shows a red square."));
    let ran = setup.run("look at the photo").await;
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    assert_eq!(stdout(&ran).trim(), "It shows a red square.");
    let companion = &fake.requests()[1];
    assert!(companion.path.ends_with("/chat/completions"));
    let body = &companion.body;
    assert_eq!(body["model"], "vision-1");
    assert_eq!(body["stream"], false);
    let content = &body["messages"][0]["content"];
    assert_eq!(
        content[0],
        json!({"type": "text", "text": "What is in the picture?"})
    );
    let expected = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(PNG)
    );
    assert_eq!(content[1]["image_url"]["url"], expected.as_str());
    assert!(tool_result(&fake, 2).contains("A red square on white."));
    let audit = setup.audit().await;
    let usage: Vec<Value> = audit
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "llm_usage")
        .collect();
    assert!(
        usage
            .iter()
            .any(|e| e.to_string().contains("\"purpose\":\"companion\"")
                && e.to_string().contains("p/vision-1")
                && e.to_string().contains("90")),
        "{audit}"
    );
    assert!(
        usage
            .iter()
            .any(|e| e.to_string().contains("\"purpose\":\"agent\"")),
        "{audit}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_image_goes_to_an_anthropic_companion_as_an_image_block() {
    let agent = FakeLlm::start(vec![]).await;
    let vision = FakeLlm::start(vec![Reply::Json(json!({
        "content": [{"type": "text", "text": "A bar chart."}],
        "usage": {"input_tokens": 50, "output_tokens": 4},
    }))])
    .await;
    let setup = Setup::new(
        &agent.url,
        &format!(
            "[providers.q]\nkind = \"anthropic\"\nbase_url = \"{}\"\n",
            vision.url
        ),
        "[agents.a.companions]\n\"analyze:image\" = \"q/claude-vision\"\n",
    );
    // Named .txt: the type comes from the bytes.
    let photo = setup.media("chart.txt", PNG);
    agent.push(analyze(&photo, "Describe it."));
    agent.push(text("A chart."));
    let ran = setup.run("see").await;
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    let sent = &vision.requests()[0];
    assert!(sent.path.ends_with("/v1/messages"));
    assert!(sent.head.contains("anthropic-version"));
    let content = &sent.body["messages"][0]["content"];
    assert_eq!(content[0]["type"], "image");
    assert_eq!(content[0]["source"]["type"], "base64");
    assert_eq!(content[0]["source"]["media_type"], "image/png");
    assert_eq!(
        content[0]["source"]["data"],
        base64::engine::general_purpose::STANDARD
            .encode(PNG)
            .as_str()
    );
    assert_eq!(content[1], json!({"type": "text", "text": "Describe it."}));
    assert_eq!(sent.body["model"], "claude-vision");
    assert!(tool_result(&agent, 1).contains("A bar chart."));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_voice_note_is_transcribed_by_the_audio_companion() {
    let fake = FakeLlm::start(vec![]).await;
    let setup = Setup::new(
        &fake.url,
        "",
        "[agents.a.companions]\n\"analyze:audio\" = \"p/whisper-1\"\n",
    );
    let voice = setup.media("voice-7.ogg", OGG);
    fake.push(analyze(&voice, ""));
    fake.push(Reply::Json(
        json!({"text": "remind me to water the plants"}),
    ));
    fake.push(text("Noted."));
    let ran = setup.run("what did I say?").await;
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    let sent = &fake.requests()[1];
    assert!(
        sent.path.ends_with("/audio/transcriptions"),
        "{}",
        sent.path
    );
    assert!(sent.head.contains("multipart/form-data"), "{}", sent.head);
    assert!(
        sent.raw.contains("name=\"model\"\r\n\r\nwhisper-1"),
        "{}",
        sent.raw
    );
    assert!(sent.raw.contains("filename=\"audio.ogg\""), "{}", sent.raw);
    assert!(sent.raw.contains("Content-Type: audio/ogg"), "{}", sent.raw);
    assert!(sent.raw.contains("pretend-voice-note"));
    assert!(tool_result(&fake, 2).contains("remind me to water the plants"));
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_is_sent_without_a_binding_and_the_fix_is_named() {
    let fake = FakeLlm::start(vec![]).await;
    let setup = Setup::new(
        &fake.url,
        "",
        "media_max_mb = 1\n[agents.a.companion_choices]\n\"analyze:image\" = [\"p/vision-1\", \"p/vision-2\"]\n",
    );
    let photo = setup.media("photo.png", PNG);
    let script = setup.media("photo.jpg", b"#!/bin/sh\nrm -rf ~\n");
    let video = setup.media("clip.mp4", b"\0\0\0\x20ftypisom-pretend-video");
    // Audio has no choices listed: no picker, and the size is checked before anything else.
    let mut big = OGG.to_vec();
    big.resize(1024 * 1024 + 1, b'x');
    let large = setup.media("large.ogg", &big);
    for (i, path) in [&photo, &script, &video, &large].iter().enumerate() {
        // The first call also tries to pick a model itself: the key is taken out (and noted).
        let mut args = json!({"path": path, "question": "what?"});
        if i == 0 {
            args["_selectedOptionId"] = json!("p/vision-1");
        }
        fake.push(tool_calls(&[(
            &format!("m{i}"),
            "analyze_media",
            &args.to_string(),
        )]));
    }
    fake.push(text("Could not look."));
    let ran = setup.run("look at everything").await;
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    // Every request went to the agent's model: no companion was called.
    assert_eq!(fake.requests().len(), 5);
    assert!(fake.requests().iter().all(|r| r.body["model"] == "m"));
    // Choices are listed: a picker, and nobody can pick in a run — the fix is named.
    let unbound = tool_result(&fake, 1);
    assert!(
        unbound.contains("nobody can pick in this run")
            && unbound.contains("bind a model for analyze:image in [agents.a.companions]")
            && unbound.contains("p/vision-1, p/vision-2"),
        "{unbound}"
    );
    let audit = setup.audit().await;
    assert!(
        audit.contains("\"reserved_key_removed\":\"_selectedOptionId\""),
        "{audit}"
    );
    assert!(tool_result(&fake, 2).contains("not an image or audio file"));
    assert!(tool_result(&fake, 3).contains("no provider supports video yet"));
    assert!(tool_result(&fake, 4).contains("media_max_mb"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_console_picks_by_number() {
    use super::cli::Live;
    let fake = FakeLlm::start(vec![]).await;
    let setup = Setup::new(
        &fake.url,
        "",
        "[agents.a.companion_choices]\n\"analyze:image\" = [\"p/vision-1\", \"p/vision-2\"]\n",
    );
    let photo = setup.media("photo.png", PNG);
    fake.push(analyze(&photo, "What is it?"));
    fake.push(Reply::Json(
        json!({"choices": [{"message": {"content": "A cat."}}]}),
    ));
    fake.push(text("It is a cat."));
    let path = setup.dir.path().to_path_buf();
    let transcript = tokio::task::spawn_blocking(move || {
        let mut chat = Live::start(&path, &["chat", "--config", "tollgate.toml"]);
        chat.send("look");
        let card = chat.wait_for("\n? ");
        // A typed "a" approves nothing on a picker: it asks for a number.
        chat.send("a");
        chat.wait_for("pick an option by its number");
        chat.send("2");
        let text = chat.wait_for("It is a cat.");
        drop(chat.child.stdin.take());
        assert!(chat.child.wait().unwrap().success());
        format!("{card}{text}")
    })
    .await
    .unwrap();
    assert!(
        transcript.contains("[1] p/vision-1  [b1] Bind p/vision-1 for this agent")
            && transcript.contains("[2] p/vision-2  [b2] Bind p/vision-2 for this agent")
            && transcript.contains("asking: What is it?")
            && transcript.contains("[d] ✖ Cancel"),
        "{transcript}"
    );
    assert_eq!(fake.requests()[1].body["model"], "vision-2");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fifo_under_a_media_name_is_refused_without_hanging() {
    let fake = FakeLlm::start(vec![]).await;
    let setup = Setup::new(
        &fake.url,
        "",
        "[agents.a.companions]\n\"analyze:image\" = \"p/vision-1\"\n[agents.a.companion_choices]\n\"analyze:audio\" = [\"p/whisper-1\"]\n",
    );
    let mut paths = Vec::new();
    for name in ["pipe.png", "pipe.ogg"] {
        let path = setup.dir.path().join("media").join(name);
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success());
        paths.push(path.display().to_string());
    }
    for (i, path) in paths.iter().enumerate() {
        fake.push(tool_calls(&[(
            &format!("f{i}"),
            "analyze_media",
            &json!({"path": path, "question": "what?"}).to_string(),
        )]));
    }
    fake.push(text("Nothing to see."));
    let ran = setup.run("look at the pipes").await;
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    // Neither read blocked; neither reached a companion (no picker offered for the second:
    // its kind could not be read at proposal).
    assert_eq!(fake.requests().len(), 3);
    for i in 1..=2 {
        let told = tool_result(&fake, i);
        assert!(told.contains("not a regular file"), "{told}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_card_binding_is_listed_and_revoked_at_the_cli() {
    let fake = FakeLlm::start(vec![]).await;
    let setup = Setup::new(
        &fake.url,
        "",
        "[agents.a.companions]\n\"generate:image\" = \"p/painter\"\n",
    );
    let check = {
        let path = setup.dir.path().to_path_buf();
        tokio::task::spawn_blocking(move || {
            tollgate(&["check", "--config", "tollgate.toml"], &path)
        })
        .await
        .unwrap()
    };
    assert!(
        stdout(&check).contains("generate:image is reserved: no tool generates media yet"),
        "{}",
        stdout(&check)
    );
    {
        let store = tollgate::store::open_dir(&setup.dir.path().join("data/store"), 8).unwrap();
        tollgate::companions::bindings::bind(&store, "a", "analyze:image", "p/vision-1", "Ann")
            .unwrap();
    }
    let cli = |args: &'static [&'static str]| {
        let path = setup.dir.path().to_path_buf();
        tokio::task::spawn_blocking(move || {
            let mut all = args.to_vec();
            all.extend(["--config", "tollgate.toml"]);
            tollgate(&all, &path)
        })
    };
    let listed = cli(&["allowlist", "list"]).await.unwrap();
    assert!(
        stdout(&listed).contains("agent a\tcompanion analyze:image\tbound to p/vision-1 by Ann"),
        "{}",
        stdout(&listed)
    );
    let revoked = cli(&[
        "allowlist",
        "revoke",
        "--agent",
        "a",
        "--companion",
        "analyze:image",
    ])
    .await
    .unwrap();
    assert_eq!(revoked.status.code(), Some(0), "{}", stderr(&revoked));
    let again = cli(&[
        "allowlist",
        "revoke",
        "--agent",
        "a",
        "--companion",
        "analyze:image",
    ])
    .await
    .unwrap();
    assert_ne!(again.status.code(), Some(0), "nothing left to revoke");
    assert!(!stdout(&cli(&["allowlist", "list"]).await.unwrap()).contains("analyze:image"));
}
