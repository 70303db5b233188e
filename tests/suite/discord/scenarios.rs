//! What a Discord user and an operator see: DMs, threads opened by mentions, strangers, cards
//! and who may press them, slash commands, long answers, rate limits, a dropped gateway, and
//! both platforms served by one process.

use super::*;
use crate::suite::fakes::discord::Fault;
use crate::suite::fakes::telegram::{FakeTelegram, user_message};

#[tokio::test(flavor = "multi_thread")]
async fn a_dm_is_answered_through_the_fake_and_the_token_only_travels_in_the_header() {
    let served = Served::start(vec![text("Hello from the agent. @everyone")], "", "").await;
    served.dm(USER, "hi there");
    served
        .wait_posted(dm_channel(USER), "Hello from the agent.")
        .await;
    let calls = served.discord.calls();
    // serenity asked our fake for the gateway (not discord.com), and identified with the
    // intents in use: guilds, guild messages, direct messages — no privileged Message Content.
    assert!(
        !served.discord.calls_to("GET /gateway").is_empty()
            || !served.discord.calls_to("GET /gateway/bot").is_empty()
    );
    let identify = &served.discord.identifies()[0];
    assert_eq!(identify["token"], format!("Bot {TOKEN}"));
    assert_eq!(identify["intents"], 1 | (1 << 9) | (1 << 12), "{identify}");
    for call in &calls {
        assert_eq!(
            call.authorization.as_deref(),
            Some(format!("Bot {TOKEN}").as_str()),
            "{call:?}"
        );
        assert!(!call.body.to_string().contains(TOKEN), "{call:?}");
    }
    // Nothing the bot posts pings anyone.
    let answer = served
        .discord
        .calls_to("POST /channels/*/messages")
        .into_iter()
        .find(|c| {
            c.body["content"]
                .as_str()
                .unwrap_or("")
                .contains("Hello from")
        })
        .unwrap();
    assert_eq!(answer.body["allowed_mentions"], json!({"parse": []}));
    let asked = served.llm.requests()[0].body.to_string();
    assert!(asked.contains("hi there"), "{asked}");
    assert!(!served.log().contains(TOKEN));
}

#[tokio::test(flavor = "multi_thread")]
async fn strangers_and_foreign_guilds_are_ignored_silently_and_audited() {
    let served = Served::start(vec![text("only for the allowed")], "", "").await;
    served.dm(STRANGER, "hello?");
    served.say_in(
        Place::guild(FOREIGN_GUILD, FOREIGN_CHANNEL),
        USER,
        &[],
        "over here",
        true,
    );
    served.say_in(
        Place::guild(GUILD, CHANNEL),
        STRANGER,
        &[],
        "and here",
        true,
    );
    let audit = served
        .discord
        .wait_for(WAIT, "three access_denied entries", |_| {
            let audit = served.audit();
            (audit.matches("access_denied").count() >= 3).then_some(audit)
        })
        .await;
    assert!(audit.contains("guild and channel not allowed"), "{audit}");
    assert!(audit.contains(&format!("discord:{STRANGER}")), "{audit}");
    // Then an allowed DM is answered: everything before it was handled, and nothing answered
    // the strangers or opened a thread for them.
    served.dm(USER, "me");
    served
        .wait_posted(dm_channel(USER), "only for the allowed")
        .await;
    let calls = served.discord.calls();
    assert!(
        calls.iter().all(|c| !c.path.ends_with("/threads")),
        "no thread opened"
    );
    for channel in [dm_channel(STRANGER), FOREIGN_CHANNEL, CHANNEL] {
        assert!(served.discord.posted_to(channel).is_empty(), "{channel}");
    }
    assert_eq!(served.llm.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mention_opens_a_thread_that_is_the_session() {
    let served = Served::start(vec![text("First answer."), text("Second answer.")], "", "").await;
    let started = served.say_in(
        Place::guild(GUILD, CHANNEL),
        USER,
        &[],
        "summarize the plan",
        true,
    );
    // The thread is opened from the message (its id is the message's), and answered in.
    let thread = started;
    served.wait_posted(thread, "First answer.").await;
    let opened = served
        .discord
        .calls_to("POST /channels/*/messages/*/threads");
    assert_eq!(opened.len(), 1);
    assert_eq!(
        opened[0].path,
        format!("/channels/{CHANNEL}/messages/{started}/threads")
    );
    assert_eq!(opened[0].body["name"], "summarize the plan");
    let intro = &served.discord.posted_to(thread)[0];
    assert!(
        intro.contains("mention me") && intro.contains("reply"),
        "{intro}"
    );
    assert!(
        served.discord.posted_to(CHANNEL).is_empty(),
        "nothing in the channel itself"
    );
    // A mention inside the thread continues the same session: the model sees the first turn.
    served.say_in(
        Place::guild(GUILD, thread),
        USER,
        &[],
        "and the risks?",
        true,
    );
    served.wait_posted(thread, "Second answer.").await;
    let second = served.llm.requests()[1].body.to_string();
    assert!(
        second.contains("summarize the plan") && second.contains("and the risks?"),
        "{second}"
    );
    // The thread's parent was looked up once (GET /channels/{thread} would be a second).
    assert_eq!(
        served
            .discord
            .calls_to("POST /channels/*/messages/*/threads")
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn only_admins_answer_cards_and_the_first_press_wins() {
    let served = Served::start(
        vec![
            text("Opening."),
            write_call("w1", "out.txt", "approved text"),
            text("Written."),
        ],
        "",
        "",
    )
    .await;
    let thread = served.say_in(Place::guild(GUILD, CHANNEL), USER, &[], "hello", true);
    served.wait_posted(thread, "Opening.").await;
    served.say_in(
        Place::guild(GUILD, thread),
        USER,
        &[],
        "write out.txt",
        true,
    );
    let (card_id, card) = served.card(thread, 0).await;
    let content = card["content"].as_str().unwrap();
    assert!(
        content.contains("write\\_file") && content.contains("approved text"),
        "{content}"
    );
    assert!(content.chars().count() <= 2000);
    let approve = button(&card, "Approve");
    let deny = button(&card, "Deny");
    assert!(approve.len() <= 100);
    let here = Place::guild(GUILD, thread);
    let written = served
        .dir
        .path()
        .join(format!("ws/discord_{thread}/out.txt"));

    // A member without the role: a private "only admins", an audit entry, nothing runs.
    let refused = served.press(here, USER, &[], card_id, &approve);
    let answer = served.follow_up(refused).await;
    assert!(
        answer.body["content"]
            .as_str()
            .unwrap()
            .contains("Only admins"),
        "{:?}",
        answer.body
    );
    assert_eq!(answer.body["flags"], 64, "ephemeral");
    assert!(served.audit().contains("press_rejected"));
    assert!(!written.exists());
    // Every interaction was acknowledged (a deferred update) before it was answered.
    let callbacks = served.discord.calls_to("POST /interactions/*/*/callback");
    assert_eq!(callbacks[0].body["type"], 6);
    assert!(callbacks[0].at <= answer.at);

    // A holder of the admin role, in the guild where the card is: approved, run once.
    served.press(here, ROLE_ADMIN, &[ADMIN_ROLE], card_id, &approve);
    served.wait_posted(thread, "Written.").await;
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "approved text");
    let edit = served.edit_of(thread, card_id).await;
    assert!(
        edit["content"]
            .as_str()
            .unwrap()
            .contains("Approved by User8"),
        "{edit}"
    );
    assert_eq!(edit["components"], json!([]));
    // A later press is told who answered.
    let late = served.press(here, ADMIN, &[], card_id, &deny);
    let told = served.follow_up(late).await;
    assert!(
        told.body["content"]
            .as_str()
            .unwrap()
            .contains("Already answered by User8"),
        "{:?}",
        told.body
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn slash_commands_are_deferred_then_answered_and_admin_ones_checked_here() {
    let served = Served::start(vec![], "", "").await;
    let commands = served
        .discord
        .wait_for(WAIT, "the slash commands", |d| {
            d.calls_to("PUT /applications/*/commands").pop()
        })
        .await;
    let names: Vec<&str> = commands
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "help",
            "new",
            "stop",
            "status",
            "mode",
            "sandbox",
            "allowlist"
        ]
    );
    assert_eq!(commands.body[4]["options"][0]["name"], "args");

    let status = served.slash(Place::dm(dm_channel(USER)), USER, &[], "status", None);
    let answer = served.follow_up(status).await;
    let callback = served
        .discord
        .calls()
        .into_iter()
        .find(|c| c.path == format!("/interactions/{status}/itoken-{status}/callback"))
        .unwrap();
    assert_eq!(callback.body["type"], 5);
    assert!(callback.at <= answer.at, "deferred before it was answered");
    assert!(
        answer.body["content"].as_str().unwrap().contains("Agent"),
        "{:?}",
        answer.body
    );
    // `/mode` is checked against tollgate's admins, whatever Discord's permissions hint says.
    let mode = served.slash(
        Place::dm(dm_channel(USER)),
        USER,
        &[],
        "mode",
        Some("always"),
    );
    let refused = served.follow_up(mode).await;
    assert!(
        refused.body["content"].as_str().unwrap().contains("admin"),
        "{:?}",
        refused.body
    );
    let by_admin = served.slash(
        Place::guild(GUILD, CHANNEL),
        ROLE_ADMIN,
        &[ADMIN_ROLE],
        "mode",
        Some("read-only"),
    );
    let set = served.follow_up(by_admin).await;
    assert!(
        set.body["content"].as_str().unwrap().contains("read-only"),
        "{:?}",
        set.body
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_answer_is_split_under_two_thousand_characters() {
    let mut long = String::from("Here:\n```text\n");
    for i in 0..200 {
        long.push_str(&format!("line {i}: some words to fill the answer\n"));
    }
    long.push_str("```\nDone.");
    let served = Served::start(vec![text(&long)], "", "").await;
    served.dm(USER, "the log please");
    served.wait_posted(dm_channel(USER), "Done.").await;
    let parts = served.discord.posted_to(dm_channel(USER));
    assert!(parts.len() >= 4, "{}", parts.len());
    for part in &parts {
        assert!(part.chars().count() <= 2000);
        assert_eq!(
            part.matches("```").count() % 2,
            0,
            "fences balanced: {part}"
        );
    }
    let all = parts.join("\n");
    for i in 0..200 {
        assert_eq!(all.matches(&format!("line {i}:")).count(), 1, "line {i}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_429_storm_delivers_the_answer_exactly_once() {
    let served = Served::start(vec![text("Through the storm.")], "", "").await;
    let route = "POST /channels/*/messages";
    served
        .discord
        .fail_next(route, Fault::rate_limited(0.2, false));
    served
        .discord
        .fail_next(route, Fault::rate_limited(0.3, true));
    served.discord.fail_next(route, Fault::server_error());
    served
        .discord
        .fail_next(route, Fault::rate_limited(0.1, false));
    served.dm(USER, "go");
    served
        .wait_posted(dm_channel(USER), "Through the storm.")
        .await;
    let tries = served.discord.calls_to(route);
    let refused = tries
        .iter()
        .filter(|c| c.body.get("_refused").is_some())
        .count();
    let delivered = served.discord.posted_to(dm_channel(USER));
    assert_eq!(refused, 4);
    assert_eq!(
        delivered
            .iter()
            .filter(|m| m.contains("Through the storm."))
            .count(),
        1
    );
    // The global 429's wait was honoured: the try after it came at least 0.3 s later.
    let after_global = tries[2].at.duration_since(tries[1].at);
    assert!(
        after_global >= Duration::from_millis(300),
        "{after_global:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_gateway_resumes_and_an_invalid_session_identifies_again_answering_once() {
    let served = Served::start(vec![text("one"), text("two"), text("three")], "", "").await;
    served.dm(USER, "first");
    served.wait_posted(dm_channel(USER), "one").await;
    served.discord.drop_connection();
    // Sent while the connection is down: Discord replays it on RESUME.
    served.dm(USER, "second");
    served.discord.ready(2).await;
    served.wait_posted(dm_channel(USER), "two").await;
    assert_eq!(
        served.discord.resumes().len(),
        1,
        "resumed, not identified again"
    );
    assert_eq!(served.discord.identifies().len(), 1);
    served.discord.invalidate_session();
    served.discord.ready(3).await;
    assert_eq!(served.discord.identifies().len(), 2);
    served.dm(USER, "third");
    served.wait_posted(dm_channel(USER), "three").await;
    let posted = served.discord.posted_to(dm_channel(USER));
    for answer in ["one", "two", "three"] {
        assert_eq!(
            posted.iter().filter(|m| *m == answer).count(),
            1,
            "{posted:?}"
        );
    }
    assert_eq!(served.llm.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn one_process_serves_telegram_and_discord() {
    let telegram = FakeTelegram::start().await;
    let more = format!(
        "[telegram]\napi_url = \"{}\"\nallowed_users = [10]\nadmins = [1]\nprogress_interval_secs = 0\ntyping = false\n",
        telegram.url
    );
    let mut served = Served::new(vec![text("answer A"), text("answer B")], "", "", &more).await;
    served.spawn(&[("TELEGRAM_BOT_TOKEN", "123:telegram-token".to_string())]);
    served.discord.ready(1).await;
    telegram.polling(WAIT, 1).await;
    telegram.push_message(user_message(10, "private", 10, "from telegram"));
    telegram
        .wait_for(WAIT, "the Telegram answer", |t| {
            t.texts_to(10).into_iter().find(|m| m.starts_with("answer"))
        })
        .await;
    served.dm(USER, "from discord");
    served
        .discord
        .wait_for(WAIT, "the Discord answer", |d| {
            d.posted_to(dm_channel(USER))
                .into_iter()
                .find(|m| m.starts_with("answer"))
        })
        .await;
}
