//! Chat behaviour: access, answers and their splitting, 429s, questions, files, commands,
//! progress, the queue cap and rate limit, and how `serve` fails to start.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn strangers_are_ignored_and_users_answered() {
    let served = Served::start(vec![text("Hello, Ann.")], "", "").await;
    let commands = served.telegram.calls("SetMyCommands");
    let names: Vec<&str> = commands[0]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["command"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "help",
            "new",
            "stop",
            "status",
            "whoami",
            "mode",
            "sandbox",
            "allowlist"
        ]
    );

    served.say(77, "hello?");
    served.say(USER, "hello");
    served.wait_text(USER, "Hello, Ann.").await;
    assert!(
        served.telegram.texts_to(77).is_empty(),
        "a stranger gets nothing"
    );
    assert_eq!(
        served.llm.requests().len(),
        1,
        "the stranger's message never reached the model"
    );

    // While serve holds the store, `audit` reaches it over the control socket.
    let audit = served.tollgate(&["audit"]);
    let out = String::from_utf8_lossy(&audit.stdout);
    assert!(
        audit.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&audit.stderr)
    );
    assert!(
        out.contains("access_denied") && out.contains("telegram:77"),
        "{out}"
    );
    assert!(out.contains("run_completed"), "{out}");
    assert!(
        !served.log().contains("SECRET-bot-token"),
        "{}",
        served.log()
    );
}

/// The model endpoint keeps connections open, as OpenAI's does: turns of one session and of
/// another session of the same agent go over the connection the first turn opened, not a TCP
/// (and, against a real endpoint, TLS) handshake each.
#[tokio::test(flavor = "multi_thread")]
async fn turns_reuse_the_model_connection_across_sessions() {
    let served = Served::start(vec![text("one."), text("two."), text("three.")], "", "").await;
    served.say(USER, "first");
    served.wait_text(USER, "one.").await;
    served.say(USER, "second");
    served.wait_text(USER, "two.").await;
    served.say(11, "third, from another chat");
    served.wait_text(11, "three.").await;
    assert_eq!(served.llm.requests().len(), 3);
    assert_eq!(
        served
            .llm
            .connections
            .load(std::sync::atomic::Ordering::SeqCst),
        1,
        "three turns, one after another, should share one model connection"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_answer_is_split_and_429s_a_500_and_a_slow_api_lose_nothing() {
    let mut long = String::new();
    let mut i = 0;
    while long.len() < 10_000 {
        long.push_str(&format!("line {i} with <angle> & **bold** text\n"));
        i += 1;
    }
    let served = Served::start(vec![text(&long)], "", "").await;
    for _ in 0..3 {
        served.telegram.fail_next(
            "SendMessage",
            json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 1", "parameters": {"retry_after": 1}}),
        );
    }
    // Then Telegram fails once with a 500 (retried after a second),
    served.telegram.fail_next(
        "SendMessage",
        json!({"ok": false, "error_code": 500, "description": "Internal Server Error"}),
    );
    // and is slow: the first delivered message takes 1.5 s to be answered.
    served
        .telegram
        .delay_next("SendMessage", Duration::from_millis(1_500));
    served.say(USER, "tell me a lot");
    let last = format!("line {}", i - 1);
    served.wait_text(USER, &last).await;
    let refused = served
        .telegram
        .calls("SendMessage")
        .into_iter()
        .filter(|b| b.get("_refused").is_some())
        .count();
    assert_eq!(refused, 4);
    let delivered = served.telegram.texts_to(USER);
    assert!(delivered.len() >= 3, "{}", delivered.len());
    let unique: Vec<&String> = delivered.iter().collect();
    for message in &unique {
        assert!(message.chars().count() <= 4096);
        assert!(!message.contains("<angle>"));
    }
    let all: String = unique.iter().map(|s| s.as_str()).collect();
    for n in 0..i {
        assert_eq!(all.matches(&format!("line {n} ")).count(), 1, "line {n}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn questions_files_commands_and_the_leak_guard() {
    let served = Served::start(
        vec![
            ask_colour(),
            text(&format!("You chose it. (token {TOKEN})")),
            text("Got the file."),
        ],
        "",
        "",
    )
    .await;
    served.say(USER, "ask me");
    let (card_id, card) = served.card(USER, 0).await;
    assert!(card["text"].as_str().unwrap().contains("Which colour?"));
    // Only the requester answers a question.
    served
        .telegram
        .push_press(USER, ADMIN, card_id, &button(&card, "blue"));
    served
        .telegram
        .push_press(USER, USER, card_id, &button(&card, "blue"));
    let answer = served.wait_text(USER, "You chose it.").await;
    assert!(!answer.contains("SECRET-bot-token"), "{answer}");
    let told = served.llm.requests()[1].body["messages"].to_string();
    assert!(told.contains("blue"), "{told}");

    // A document: downloaded into the session's workspace, named to the agent by path.
    served.telegram.add_file("F1", b"file body".to_vec());
    let mut message = user_message(USER, "private", USER, "");
    message.as_object_mut().unwrap().remove("text");
    message["caption"] = json!("read this");
    message["document"] = json!({"file_id": "F1", "file_unique_id": "U1", "file_size": 9, "file_name": "../../notes.txt"});
    served.telegram.push_message(message);
    served.wait_text(USER, "Got the file.").await;
    let saved = served.path("ws/telegram_10/attachments/notes.txt");
    assert_eq!(
        std::fs::read(saved).unwrap(),
        b"file body",
        "{:?}\n{}",
        served.telegram.texts_to(USER),
        served.log()
    );
    let told = served.llm.requests()[2].body["messages"].to_string();
    assert!(told.contains("attachments/notes.txt"), "{told}");

    // Admin-only commands refuse others; /status answers anyone admitted.
    served.say(USER, "/mode high-risk");
    served
        .wait_text(USER, "Only this bot's admins can use /mode")
        .await;
    served.say(USER, "/whoami");
    let ids = served.wait_text(USER, "You are telegram user").await;
    assert!(
        ids.contains(&format!("user {USER}")) && ids.contains("private chat"),
        "{ids}"
    );
    served.say(USER, "/status");
    let status = served.wait_text(USER, "Mode `").await;
    assert!(
        status.contains("idle") && status.contains("sandbox"),
        "{status}"
    );
}

#[tokio::test]
async fn serve_without_a_token_exits_2_and_names_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tollgate.toml"),
        "[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\n[telegram]\nadmins = [1]\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(["serve", "--config", "tollgate.toml"])
        .current_dir(dir.path())
        .env_remove("TELEGRAM_BOT_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("TELEGRAM_BOT_TOKEN"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn typing_and_a_progress_message_edited_at_most_every_interval() {
    let served = Served::start(
        vec![
            tool_calls(&[("r1", "read_file", r#"{"path":"missing.txt"}"#)]),
            Reply::Delayed(Duration::from_millis(3_500), Box::new(text("Slow answer."))),
        ],
        "",
        "progress_interval_secs = 1\ntyping = true",
    )
    .await;
    served.say(USER, "take your time");
    served.wait_text(USER, "Slow answer.").await;
    let typing = served.telegram.calls("SendChatAction");
    assert!(
        !typing.is_empty() && typing.iter().all(|b| b["action"] == "typing"),
        "{typing:?}"
    );
    let progress = served.wait_text(USER, "Working…").await;
    assert!(progress.contains("read_file"), "{progress}");
    let edits = served.telegram.timed_calls("EditMessageText");
    let mut shown = vec![progress];
    for pair in edits.windows(2) {
        assert!(
            pair[1].1 - pair[0].1 >= Duration::from_millis(900),
            "edits closer than the interval"
        );
    }
    for (edit, _) in &edits {
        let text = edit["text"].as_str().unwrap().to_string();
        assert_ne!(shown.last(), Some(&text), "an identical edit");
        shown.push(text);
    }
}

#[tokio::test]
async fn a_failed_connection_is_reported_without_the_token() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tollgate.toml"),
        "[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\n[telegram]\napi_url = \"http://127.0.0.1:9\"\nadmins = [1]\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(["serve", "--config", "tollgate.toml"])
        .current_dir(dir.path())
        .env("TELEGRAM_BOT_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("connecting to the Telegram Bot API"), "{err}");
    assert!(!err.contains("SECRET-bot-token"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_queue_and_a_fast_sender_get_one_notice_each() {
    let served = Served::start(
        vec![
            Reply::Delayed(Duration::from_millis(1_500), Box::new(text("first answer"))),
            text("second answer"),
            text("third answer"),
        ],
        "",
        "queue_cap = 1\nrate_limit_per_minute = 3",
    )
    .await;
    served.say(USER, "one");
    served
        .telegram
        .wait_for(WAIT, "the first model call", |t| {
            let _ = t;
            (!served.llm.requests().is_empty()).then_some(())
        })
        .await;
    for text in ["two", "three", "four", "five"] {
        served.say(USER, text);
    }
    served.wait_text(USER, "second answer").await;
    let texts = served.telegram.texts_to(USER);
    let busy = texts
        .iter()
        .filter(|t| t.contains("this one was dropped"))
        .count();
    let fast = texts
        .iter()
        .filter(|t| t.contains("faster than 3 a minute"))
        .count();
    assert_eq!((busy, fast), (1, 1), "{texts:?}");
    // A barrier: another allowed user's message in this chat is the same session (and not
    // rate-limited: the limit is per user). The session lets messages in one at a time, in
    // order, and its worker answers them in order: once this one is answered, anything of
    // three, four and five that had got through would have reached the model before it.
    served
        .telegram
        .push_message(user_message(USER, "private", 11, "six"));
    served.wait_text(USER, "third answer").await;
    let asked: Vec<String> = served
        .llm
        .requests()
        .iter()
        .map(|r| {
            let messages = r.body["messages"].as_array().unwrap();
            let last = messages.last().unwrap();
            assert_eq!(last["role"], "user", "{last}");
            last["content"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(
        asked.len(),
        3,
        "three, four and five never reached the model: {asked:?}"
    );
    for (said, message) in ["one", "two", "six"].iter().zip(&asked) {
        assert!(message.ends_with(said), "{asked:?}");
    }
}

/// Typing shares the chat's rate limit with the answer: it is renewed every 4.5 s (Telegram
/// shows it for 5), not at every wake of the progress loop, and refused with a 429 it waits as
/// long as Telegram asks (7 s here) before the next one.
#[tokio::test(flavor = "multi_thread")]
async fn typing_waits_out_a_429() {
    let served = Served::start(
        vec![Reply::Delayed(
            Duration::from_secs(13),
            Box::new(text("Slow answer.")),
        )],
        "",
        "progress_interval_secs = 0\ntyping = true",
    )
    .await;
    served.telegram.fail_next(
        "SendChatAction",
        json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 7", "parameters": {"retry_after": 7}}),
    );
    served.say(USER, "take your time");
    served.wait_text(USER, "Slow answer.").await;
    let typing = served.telegram.timed_calls("SendChatAction");
    assert!(typing.len() >= 3, "{typing:?}");
    let waited = typing[1].1 - typing[0].1;
    assert!(waited >= Duration::from_secs(7), "{waited:?}");
    for pair in typing[1..].windows(2) {
        let renewed = pair[1].1 - pair[0].1;
        assert!(renewed >= Duration::from_secs(4), "{renewed:?}");
    }
}
