//! Where a Discord conversation lives and what it reads: threads the bot owns or not, the
//! Message Content intent, cards sent to admins' DMs, attachments, typing.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn without_message_content_an_owned_thread_continues_only_by_mention_or_reply() {
    let served = Served::start(
        vec![text("Opened."), text("Mentioned."), text("Replied.")],
        "",
        "",
    )
    .await;
    let thread = served.say_in(Place::guild(GUILD, CHANNEL), USER, &[], "start", true);
    served.wait_posted(thread, "Opened.").await;
    // Unaddressed: not for the bot (Discord would not even show it the text).
    served.say_in(
        Place::guild(GUILD, thread),
        USER,
        &[],
        "just chatting",
        false,
    );
    served.say_in(Place::guild(GUILD, thread), USER, &[], "now you", true);
    served.wait_posted(thread, "Mentioned.").await;
    // A reply to one of the bot's messages, without a mention, continues it too (Discord
    // delivers its text without the privileged intent).
    let mut reply = payloads::message(
        next_id(),
        Place::guild(GUILD, thread),
        (USER, "User", &[]),
        "replying to you",
        &[],
    );
    let answered = next_id();
    reply["referenced_message"] = payloads::bot_message(answered, thread, "Mentioned.");
    reply["message_reference"] = json!({"message_id": answered.to_string(), "channel_id": thread.to_string(), "guild_id": GUILD.to_string()});
    reply["type"] = json!(19);
    served.discord.dispatch("MESSAGE_CREATE", reply);
    served.wait_posted(thread, "Replied.").await;
    let requests = served.llm.requests();
    assert_eq!(requests.len(), 3);
    let second = requests[1].body.to_string();
    assert!(
        second.contains("now you") && !second.contains("just chatting"),
        "{second}"
    );
    assert!(
        requests[2].body.to_string().contains("replying to you"),
        "{}",
        requests[2].body
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn with_message_content_every_message_in_an_owned_thread_continues_it() {
    let served = Served::start(
        vec![text("Opened."), text("Heard you.")],
        "",
        "message_content = true",
    )
    .await;
    let identify = &served.discord.identifies()[0];
    assert_eq!(
        identify["intents"],
        1 | (1 << 9) | (1 << 12) | (1 << 15),
        "{identify}"
    );
    let thread = served.say_in(Place::guild(GUILD, CHANNEL), USER, &[], "start", true);
    served.wait_posted(thread, "Opened.").await;
    let intro = &served.discord.posted_to(thread)[0];
    assert!(
        intro.contains("everything written in this thread"),
        "{intro}"
    );
    served.say_in(
        Place::guild(GUILD, thread),
        USER,
        &[],
        "no mention needed",
        false,
    );
    served.wait_posted(thread, "Heard you.").await;
    // In a thread the bot does not own, an unaddressed message is still not for it.
    served
        .discord
        .add_channel(payloads::channel(801, 11, GUILD, Some(CHANNEL), Some(USER)));
    served.say_in(
        Place::guild(GUILD, 801),
        USER,
        &[],
        "not for the bot",
        false,
    );
    // Its channel looked up, it is handed in; the DM after it is handled after it.
    served
        .discord
        .wait_for(WAIT, "the thread looked up", |d| {
            d.calls_to("GET /channels/*")
                .iter()
                .any(|c| c.path == "/channels/801")
                .then_some(())
        })
        .await;
    served.dm(USER, "ping");
    served.llm.push(text("pong"));
    served.wait_posted(dm_channel(USER), "pong").await;
    assert!(served.discord.posted_to(801).is_empty());
    assert_eq!(served.llm.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mention_in_a_thread_the_bot_does_not_own_makes_that_thread_the_session() {
    let served = Served::start(vec![text("Answered in place.")], "", "").await;
    // A thread someone else opened (or a forum post), under an allowed channel.
    served
        .discord
        .add_channel(payloads::channel(800, 11, GUILD, Some(CHANNEL), Some(USER)));
    served.say_in(Place::guild(GUILD, 800), USER, &[], "help here", true);
    served.wait_posted(800, "Answered in place.").await;
    assert!(
        served
            .discord
            .calls_to("POST /channels/*/messages/*/threads")
            .is_empty(),
        "no thread inside a thread"
    );
    // The thread was looked up once (it names its parent: a thread counts as its parent
    // channel for access), then remembered.
    served.llm.push(text("Again in place."));
    served.say_in(Place::guild(GUILD, 800), USER, &[], "more", true);
    served.wait_posted(800, "Again in place.").await;
    let lookups = served.discord.calls_to("GET /channels/*");
    assert_eq!(lookups.len(), 1, "{lookups:?}");
    assert_eq!(lookups[0].path, "/channels/800");
    let audit = served.audit();
    assert!(audit.contains(r#""session":"discord:800""#), "{audit}");
}

/// Channels the gateway announced (`THREAD_CREATE`) need no REST lookup; a mention in a forum
/// post (a thread under a forum channel, owned by its author) makes the post the session.
#[tokio::test(flavor = "multi_thread")]
async fn a_forum_post_announced_by_the_gateway_is_its_own_session_without_a_lookup() {
    let served = Served::start(
        vec![text("A DM first."), text("Answered in the post.")],
        "",
        "",
    )
    .await;
    const FORUM: u64 = 900;
    const POST: u64 = 950;
    served.discord.dispatch(
        "THREAD_CREATE",
        payloads::channel(POST, 11, GUILD, Some(FORUM), Some(USER)),
    );
    // serenity hands each event to a task of its own: a later event answered means the
    // announcement (a synchronous note in the channel cache) was handled.
    served.dm(USER, "first");
    served.wait_posted(dm_channel(USER), "A DM first.").await;
    served.say_in(Place::guild(GUILD, POST), USER, &[], "a question", true);
    served.wait_posted(POST, "Answered in the post.").await;
    assert!(
        served.discord.calls_to("GET /channels/*").is_empty(),
        "{:?}",
        served.discord.calls_to("GET /channels/*")
    );
    assert!(
        served
            .discord
            .calls_to("POST /channels/*/messages/*/threads")
            .is_empty(),
        "no thread inside a post"
    );
    let audit = served.audit();
    assert!(
        audit.contains(&format!(r#""session":"discord:{POST}""#)),
        "{audit}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn approvals_to_admins_go_to_each_admins_dm() {
    let served = Served::start(
        vec![write_call("w1", "a.txt", "from the DM card"), text("Done.")],
        "",
        "approvals_to = \"admins\"",
    )
    .await;
    served.dm(USER, "write a.txt");
    let (card_id, card) = served.card(dm_channel(ADMIN), 0).await;
    let opened = served.discord.calls_to("POST /users/@me/channels");
    assert_eq!(opened[0].body["recipient_id"], ADMIN.to_string());
    served
        .wait_posted(dm_channel(USER), "waiting for an admin")
        .await;
    served.press(
        Place::dm(dm_channel(ADMIN)),
        ADMIN,
        &[],
        card_id,
        &button(&card, "Approve"),
    );
    served.wait_posted(dm_channel(USER), "Done.").await;
    let written = served.dir.path().join(format!("ws/discord_{USER}/a.txt"));
    assert_eq!(
        std::fs::read_to_string(written).unwrap(),
        "from the DM card"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn attachments_are_fetched_into_the_workspace_under_the_cap() {
    let served = Served::start(vec![text("Got it.")], "", "max_attachment_mb = 1").await;
    let small = served.discord.add_file("notes.txt", b"file body".to_vec());
    let big = served
        .discord
        .add_file("big.bin", vec![b'x'; 1024 * 1024 + 1]);
    served.dm_with_files(
        USER,
        "read these",
        json!([
            payloads::attachment(1, "../../notes.txt", 9, &small),
            // Its size as Discord reports it is under the cap; the bytes are not.
            payloads::attachment(2, "big.bin", 10, &big),
        ]),
    );
    served.wait_posted(dm_channel(USER), "Got it.").await;
    let saved = served
        .dir
        .path()
        .join(format!("ws/discord_{USER}/attachments/notes.txt"));
    assert_eq!(std::fs::read(saved).unwrap(), b"file body");
    let told = served.llm.requests()[0].body["messages"].to_string();
    assert!(told.contains("attachments/notes.txt"), "{told}");
    assert!(
        !served
            .dir
            .path()
            .join(format!("ws/discord_{USER}/attachments/big.bin"))
            .exists()
    );
    let notice = served.discord.posted_to(dm_channel(USER)).join("\n");
    assert!(notice.contains("big.bin"), "{notice}");
    // The download carried no token: the CDN is not the API.
    let downloads: Vec<Call> = served
        .discord
        .calls()
        .into_iter()
        .filter(|c| c.path.starts_with("/attachments/"))
        .collect();
    assert_eq!(downloads.len(), 2);
    assert!(downloads.iter().all(|c| c.authorization.is_none()));
}

#[tokio::test(flavor = "multi_thread")]
async fn typing_and_a_progress_message_edited_at_most_every_interval() {
    let served = Served::start(
        vec![
            tool_calls(&[("r1", "read_file", r#"{"path":"missing.txt"}"#)]),
            Reply::Delayed(Duration::from_millis(3_500), Box::new(text("Slow answer."))),
        ],
        "",
        "typing = true\nprogress_interval_secs = 1",
    )
    .await;
    served.dm(USER, "take your time");
    served.wait_posted(dm_channel(USER), "Slow answer.").await;
    let typing = served.discord.calls_to("POST /channels/*/typing");
    assert!(!typing.is_empty());
    assert_eq!(
        typing[0].path,
        format!("/channels/{}/typing", dm_channel(USER))
    );
    let progress = served.wait_posted(dm_channel(USER), "Working…").await;
    assert!(progress.contains("read_file"), "{progress}");
    // Edits, if any (one that would change nothing is skipped), come no closer than 1 s.
    let edits = served.discord.calls_to("PATCH /channels/*/messages/*");
    for pair in edits.windows(2) {
        assert!(
            pair[1].at - pair[0].at >= Duration::from_millis(900),
            "edits closer than the interval"
        );
        assert_ne!(
            pair[0].body["content"], pair[1].body["content"],
            "an identical edit"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn without_require_mention_the_channel_is_answered_in_place_and_bots_never() {
    let served = Served::start(
        vec![text("Answered in the channel."), text("Second.")],
        "",
        // Without Message Content, Discord would deliver unaddressed messages empty.
        "require_mention = false\nmessage_content = true",
    )
    .await;
    served.say_in(Place::guild(GUILD, CHANNEL), USER, &[], "anyone?", false);
    served
        .wait_posted(CHANNEL, "Answered in the channel.")
        .await;
    assert!(
        served
            .discord
            .calls_to("POST /channels/*/messages/*/threads")
            .is_empty()
    );
    // Another bot's message in the same channel: ignored (and not audited).
    let mut from_bot = payloads::message(
        next_id(),
        Place::guild(GUILD, CHANNEL),
        (77, "OtherBot", &[]),
        "beep",
        &[],
    );
    from_bot["author"]["bot"] = json!(true);
    served.discord.dispatch("MESSAGE_CREATE", from_bot);
    served.say_in(Place::guild(GUILD, CHANNEL), USER, &[], "again", false);
    served.wait_posted(CHANNEL, "Second.").await;
    let asked = served.llm.requests();
    assert_eq!(asked.len(), 2);
    assert!(!asked[1].body.to_string().contains("beep"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_text_command_after_a_mention_works_in_a_thread() {
    let served = Served::start(vec![text("Opened.")], "", "").await;
    let thread = served.say_in(Place::guild(GUILD, CHANNEL), USER, &[], "start", true);
    served.wait_posted(thread, "Opened.").await;
    served.say_in(Place::guild(GUILD, thread), USER, &[], "/status", true);
    let status = served.wait_posted(thread, "Mode `").await;
    assert!(status.contains("sandbox"), "{status}");
    served.say_in(Place::guild(GUILD, thread), USER, &[], "/mode always", true);
    served
        .wait_posted(thread, "Only this bot's admins can use /mode")
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_card_nobody_answers_times_out_and_is_edited() {
    let served = Served::start(
        vec![
            write_call("w1", "late.txt", "never"),
            text("Nobody answered, fine."),
        ],
        "approval_timeout_secs = 1",
        "",
    )
    .await;
    served.dm(USER, "write late.txt");
    let (card_id, _) = served.card(dm_channel(USER), 0).await;
    let edit = served.edit_of(dm_channel(USER), card_id).await;
    assert!(
        edit["content"]
            .as_str()
            .unwrap()
            .contains("Nobody answered in time"),
        "{edit}"
    );
    assert_eq!(edit["components"], json!([]));
    served
        .wait_posted(dm_channel(USER), "Nobody answered, fine.")
        .await;
    assert!(
        !served
            .dir
            .path()
            .join(format!("ws/discord_{USER}/late.txt"))
            .exists()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn slash_stop_cancels_a_run_and_a_pending_card_survives_a_restart() {
    // The first run waits for a slow model; /stop ends it without waiting for the model.
    let mut served = Served::start(
        vec![
            Reply::Delayed(Duration::from_secs(60), Box::new(text("too late"))),
            write_call("w1", "kept.txt", "after the restart"),
            text("Written after the restart."),
        ],
        "",
        "",
    )
    .await;
    let thread = served.say_in(Place::guild(GUILD, CHANNEL), USER, &[], "slow one", true);
    let here = Place::guild(GUILD, thread);
    served
        .discord
        .wait_for(WAIT, "the model asked", |_| {
            (!served.llm.requests().is_empty()).then_some(())
        })
        .await;
    let stop = served.slash(here, USER, &[], "stop", None);
    let stopped = served.follow_up(stop).await;
    assert!(
        stopped.body["content"]
            .as_str()
            .unwrap()
            .contains("Stopped"),
        "{:?}",
        stopped.body
    );

    served.say_in(here, USER, &[], "write kept.txt", true);
    let (card_id, card) = served.card(thread, 0).await;
    let approve = button(&card, "Approve");
    // The card's record is written just after it is posted: wait for it (an admin's press of
    // a choice the card does not offer is refused as "no longer valid" once it is, "Answer on
    // the card itself" before), then kill -9.
    let probe = format!(
        "{}:always-command",
        approve.strip_suffix(":approve").unwrap()
    );
    let start = std::time::Instant::now();
    loop {
        let id = served.press(here, ADMIN, &[], card_id, &probe);
        let answer = served.follow_up(id).await;
        let text = answer.body["content"].as_str().unwrap_or("").to_string();
        if text.contains("no longer valid") {
            break;
        }
        assert!(text.contains("Answer on the card itself"), "{text}");
        assert!(start.elapsed() < WAIT, "card {card_id} was never recorded");
    }
    served.kill();
    served.spawn(&[]);
    served.discord.ready(2).await;
    served.press(here, ADMIN, &[], card_id, &approve);
    served
        .wait_posted(thread, "Written after the restart.")
        .await;
    let written = served
        .dir
        .path()
        .join(format!("ws/discord_{thread}/kept.txt"));
    assert_eq!(
        std::fs::read_to_string(written).unwrap(),
        "after the restart"
    );
    assert_eq!(
        served.discord.cards().len(),
        1,
        "the card was not sent twice"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_picker_of_five_models_is_a_select_beside_cancel() {
    let models: Vec<String> = (1..=5).map(|i| format!("p/vision-{i}")).collect();
    let served = Served::start(
        vec![
            text("Opened."),
            tool_calls(&[(
                "m1",
                "analyze_media",
                r#"{"path":"pic.png","question":"what?"}"#,
            )]),
            Reply::Json(json!({"choices": [{"message": {"content": "a dog"}}]})),
            text("A dog."),
        ],
        &format!(
            "tools = [\"analyze_media\"]\n[agents.a.companion_choices]\n\"analyze:image\" = {}",
            serde_json::to_string(&models).unwrap()
        ),
        "",
    )
    .await;
    let thread = served.say_in(Place::guild(GUILD, CHANNEL), USER, &[], "hi", true);
    served.wait_posted(thread, "Opened.").await;
    // The session's directory is made when something first needs it: here, the test's file.
    let workspace = served.dir.path().join(format!("ws/discord_{thread}"));
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("pic.png"), b"\x89PNG\r\n\x1a\n-pixels").unwrap();
    let here = Place::guild(GUILD, thread);
    served.say_in(here, USER, &[], "look at pic.png", true);
    let (card_id, card) = served.card(thread, 0).await;
    let rows = card["components"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{card}");
    let select = &rows[0]["components"][0];
    assert_eq!(select["type"], 3);
    let options = select["options"].as_array().unwrap();
    assert_eq!(options.len(), 10, "five models, each to pick or to bind");
    assert_eq!(rows[1]["components"][0]["label"], "✖ Cancel");
    let fourth = options.iter().find(|o| o["label"] == "p/vision-4").unwrap()["value"]
        .as_str()
        .unwrap()
        .to_string();
    // Binding holds for the whole agent, in every guild: not for an admin by role.
    let bind = options
        .iter()
        .find_map(|o| o["value"].as_str().filter(|v| v.contains(":bind-")))
        .unwrap()
        .to_string();
    let id = next_id();
    let press = payloads::select_press(
        id,
        here,
        (ROLE_ADMIN, "User8", &[ADMIN_ROLE]),
        card_id,
        &bind,
    );
    served.discord.dispatch("INTERACTION_CREATE", press);
    let told = served.follow_up(id).await;
    assert!(
        told.body["content"]
            .as_str()
            .unwrap()
            .contains("Only admins listed by id"),
        "{:?}",
        told.body
    );
    // Picking once is theirs to do.
    let id = next_id();
    let press = payloads::select_press(
        id,
        here,
        (ROLE_ADMIN, "User8", &[ADMIN_ROLE]),
        card_id,
        &fourth,
    );
    served.discord.dispatch("INTERACTION_CREATE", press);
    served.wait_posted(thread, "A dog.").await;
    assert_eq!(served.llm.requests()[2].body["model"], "vision-4");
}

/// A message with several audio files (Discord allows ten) has its first transcribed, not
/// each: every transcription is paid for. The others stay attached, and the agent is told.
#[tokio::test(flavor = "multi_thread")]
async fn one_voice_note_a_message_is_transcribed() {
    use crate::suite::fakes::llm::Reply;
    let served = Served::start(
        vec![
            Reply::Json(json!({"text": "water the plants"})),
            text("Heard you."),
        ],
        "transcribe_voice = true\n[agents.a.companions]\n\"analyze:audio\" = \"p/whisper-1\"",
        "",
    )
    .await;
    let voice = |name: &str| {
        served
            .discord
            .add_file(name, b"OggS\0\x02pretend-opus-frames".to_vec())
    };
    let (first, second) = (voice("one.ogg"), voice("two.ogg"));
    served.dm_with_files(
        USER,
        "",
        json!([
            payloads::attachment(1, "one.ogg", 25, &first),
            payloads::attachment(2, "two.ogg", 25, &second),
        ]),
    );
    served.wait_posted(dm_channel(USER), "Heard you.").await;
    let requests = served.llm.requests();
    let transcriptions = requests
        .iter()
        .filter(|r| r.path.ends_with("/audio/transcriptions"))
        .count();
    assert_eq!(transcriptions, 1, "one transcription for two voice notes");
    let told = requests.last().unwrap().body["messages"].to_string();
    assert!(
        told.contains("water the plants")
            && told.contains("two.ogg not transcribed: one voice note a message is transcribed"),
        "{told}"
    );
}

/// A thread someone else opened from the message first ("already created") is answered in, but
/// not taken as the bot's own: a later message there without a mention is not answered
/// (`require_mention`), as in any thread the bot did not open.
#[tokio::test(flavor = "multi_thread")]
async fn a_thread_someone_else_opened_is_not_taken_as_the_bots() {
    use crate::suite::fakes::discord::Fault;
    // With the Message Content intent: in the bot's own thread, unmentioned messages count.
    let served = Served::start(
        vec![text("Opened."), text("Mentioned.")],
        "",
        "message_content = true",
    )
    .await;
    served.discord.fail_next(
        "POST /channels/*/messages/*/threads",
        Fault {
            status: 400,
            body: json!({"message": "A thread has already been created for this message", "code": 160004}),
            headers: String::new(),
        },
    );
    let thread = served.say_in(Place::guild(GUILD, CHANNEL), USER, &[], "hello", true);
    // The author's thread, as Discord would describe it.
    served.discord.add_channel(payloads::channel(
        thread,
        11,
        GUILD,
        Some(CHANNEL),
        Some(USER),
    ));
    served.wait_posted(thread, "Opened.").await;
    // Told how to continue: by mention or reply.
    let intro = &served.discord.posted_to(thread)[0];
    assert!(intro.contains("mention me"), "{intro}");
    let here = Place::guild(GUILD, thread);
    served.say_in(here, USER, &[], "no mention here", false);
    served.say_in(here, USER, &[], "with a mention", true);
    served.wait_posted(thread, "Mentioned.").await;
    let requests = served.llm.requests();
    assert_eq!(requests.len(), 2, "the unmentioned message reached nobody");
    assert!(
        !requests[1].body["messages"]
            .to_string()
            .contains("no mention here")
    );
}
