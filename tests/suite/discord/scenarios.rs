//! What a Discord user and an operator see: DMs, threads opened by mentions, strangers, cards
//! and who may press them, slash commands, long answers, rate limits, a dropped gateway, and
//! both platforms served by one process.

use super::*;
use crate::suite::fakes::discord::Fault;
use crate::suite::fakes::llm::Condition;
use crate::suite::fakes::telegram::{FakeTelegram, user_message};
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread")]
async fn a_dm_is_answered_through_the_fake_and_the_token_only_travels_in_the_header() {
    let served = Served::start(
        vec![text(
            "Hello from the agent. @everyone <@999> ||hidden|| `<@1>`",
        )],
        "",
        "",
    )
    .await;
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
    // Discord's own syntax in the model's text is shown as written, code left alone.
    assert_eq!(
        answer.body["content"],
        "Hello from the agent. @everyone \\<@999> \\|\\|hidden\\|\\| `<@1>`"
    );
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
    // A stranger's slash command gets a private, bare refusal; nothing public.
    let slash = served.slash(Place::guild(GUILD, CHANNEL), STRANGER, &[], "status", None);
    let refused = served.follow_up(slash).await;
    assert_eq!(refused.body["content"], "Not available here.");
    assert_eq!(refused.body["flags"], 64);
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
    // Only the channel was looked up: the bot knows the thread it opened (its parent too).
    let lookups = served.discord.calls_to("GET /channels/*");
    assert_eq!(lookups.len(), 1, "{lookups:?}");
    assert_eq!(lookups[0].path, format!("/channels/{CHANNEL}"));
}

#[tokio::test(flavor = "multi_thread")]
async fn only_admins_answer_cards_and_the_first_press_wins() {
    let long = format!("approved text{}", " and padded".repeat(300));
    let served = Served::start(
        vec![text("Opening."), write_call("w1", "out.txt", &long)],
        "",
        "",
    )
    .await;
    // "Acknowledged in time": the model's answer after the approving press is held until
    // Discord has that press's acknowledgement (the refused press's is the first). A bridge
    // that acknowledged only after the runtime's work would never see the answer.
    let state = served.discord.state.clone();
    let both_acknowledged = Condition(Arc::new(move || {
        let state = state.lock().unwrap();
        let acks = state
            .calls
            .iter()
            .filter(|c| c.path.ends_with("/callback"))
            .count();
        acks >= 2
    }));
    served
        .llm
        .push(Reply::Until(both_acknowledged, Box::new(text("Written."))));
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
    // Details cut to fit; the whole text beside the card as a file (multipart, files[0]).
    assert!(content.contains("attached file"), "{content}");
    let file = served
        .discord
        .wait_for(WAIT, "the details file", |d| {
            d.calls_to("POST /channels/*/messages")
                .into_iter()
                .find(|c| c.body.get("_raw").is_some())
        })
        .await;
    let raw = file.body["_raw"].as_str().unwrap();
    assert!(
        raw.contains("name=\"files[0]\"; filename=\"approval-details.txt\""),
        "{}",
        &raw[..raw.len().min(600)]
    );
    // The card and its file are one message: the file part holds the whole text.
    assert!(
        file.body["components"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
    );
    let (_, file_part) = raw.split_once("filename=\"approval-details.txt\"").unwrap();
    let file_text = file_part.split("\r\n--").next().unwrap();
    assert_eq!(file_text.matches(" and padded").count(), 300);
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
    assert_eq!(std::fs::read_to_string(&written).unwrap(), long);
    let edit = served.edit_of(thread, card_id).await;
    assert!(
        edit["content"]
            .as_str()
            .unwrap()
            .contains(&format!("Approved by discord:{ROLE_ADMIN} (User)")),
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
            .contains(&format!("Already answered by discord:{ROLE_ADMIN} (User)")),
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
            "whoami",
            "mode",
            "sandbox",
            "allowlist"
        ]
    );
    assert_eq!(commands.body[5]["options"][0]["name"], "args");

    // A global 429 on the acknowledgement: retried within Discord's three seconds.
    served.discord.fail_next(
        "POST /interactions/*/*/callback",
        Fault::rate_limited(0.5, true),
    );
    let status = served.slash(Place::dm(dm_channel(USER)), USER, &[], "status", None);
    let answer = served.follow_up(status).await;
    let callbacks: Vec<Call> = served
        .discord
        .calls()
        .into_iter()
        .filter(|c| c.path == format!("/interactions/{status}/itoken-{status}/callback"))
        .collect();
    assert_eq!(callbacks.len(), 2, "refused once, then acknowledged");
    let (refused, callback) = (&callbacks[0], &callbacks[1]);
    assert_eq!(callback.body["type"], 5);
    assert_eq!(callback.body["data"]["flags"], 64);
    let waited = callback.at.duration_since(refused.at);
    assert!(
        waited >= Duration::from_millis(500) && waited < Duration::from_millis(2500),
        "{waited:?}"
    );
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
    // /whoami names the ids the operator writes into the config.
    let whoami = served.slash(Place::guild(GUILD, CHANNEL), USER, &[], "whoami", None);
    let ids = served.follow_up(whoami).await;
    let ids = ids.body["content"].as_str().unwrap().to_string();
    assert!(
        ids.contains(&format!("discord user {USER}"))
            && ids.contains(&format!("channel {CHANNEL}"))
            && ids.contains(&format!("guild {GUILD}")),
        "{ids}"
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
    // Each 429's wait was honoured: the route's 0.2 s, then the global 0.3 s.
    let after_route = tries[1].at.duration_since(tries[0].at);
    let after_global = tries[2].at.duration_since(tries[1].at);
    assert!(after_route >= Duration::from_millis(200), "{after_route:?}");
    assert!(
        after_global >= Duration::from_millis(300),
        "{after_global:?}"
    );
    // Every try was the same message: Discord creates it once whatever reached it.
    let nonces: Vec<&Value> = tries.iter().map(|c| &c.body["nonce"]).collect();
    assert!(
        nonces.iter().all(|n| *n == nonces[0] && n.is_string()),
        "{nonces:?}"
    );
    assert!(tries.iter().all(|c| c.body["enforce_nonce"] == true));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_empty_bucket_makes_the_next_send_wait_and_a_ban_length_limit_parks_nobody() {
    let mut long = String::new();
    for i in 0..120 {
        long.push_str(&format!("line {i} of a long answer\n"));
    }
    long.push_str("The end.");
    let served = Served::start(vec![text(&long)], "", "").await;
    // The first part's answer says the channel's bucket is empty for 0.4 s.
    let route = "POST /channels/*/messages";
    served.discord.fail_next(route, Fault::bucket_empty(0.4));
    served.dm(USER, "long please");
    served.wait_posted(dm_channel(USER), "The end.").await;
    let parts = served.discord.calls_to(route);
    assert!(parts.len() >= 2);
    let gap = parts[1].at.duration_since(parts[0].at);
    assert!(gap >= Duration::from_millis(400), "{gap:?}");

    // An hour-long 429 on one chat: its answer is given up (not waited for), and another
    // chat is answered meanwhile.
    served
        .discord
        .fail_next(route, Fault::rate_limited(3600.0, false));
    served.llm.push(text("never shown"));
    served.dm(USER, "again");
    served
        .discord
        .wait_for(WAIT, "the refused answer", |d| {
            d.calls_to(route)
                .into_iter()
                .find(|c| c.body["_refused"] == 429)
        })
        .await;
    served.llm.push(text("other chat answered"));
    served.dm(ADMIN, "hello");
    served
        .wait_posted(dm_channel(ADMIN), "other chat answered")
        .await;
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
async fn heartbeats_are_kept_and_a_shard_range_identifies_each_shard() {
    let mut served = Served::new(
        vec![],
        "",
        "shards = { first = 0, last = 1, total = 2 }",
        "",
    )
    .await;
    served.discord.set_heartbeat(150);
    served.spawn(&[]);
    served.discord.ready(2).await;
    let mut shards: Vec<Value> = served
        .discord
        .identifies()
        .iter()
        .map(|i| i["shard"].clone())
        .collect();
    shards.sort_by_key(|s| s[0].as_u64());
    assert_eq!(shards, [json!([0, 2]), json!([1, 2])]);
    served
        .discord
        .wait_for(WAIT, "heartbeats", |d| (d.heartbeats() >= 4).then_some(()))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn one_process_serves_telegram_and_discord() {
    use crate::suite::serve::metrics::{free_port, get, sample, until_status};
    let telegram = FakeTelegram::start().await;
    let port = free_port();
    let more = format!(
        "[telegram]\napi_url = \"{}\"\nallowed_users = [10]\nadmins = [1]\nprogress_interval_secs = 0\ntyping = false\n[metrics]\nlisten = \"127.0.0.1:{port}\"\n",
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
    // Healthy only with both connected: Telegram polled, and the Discord shard said READY.
    until_status(&format!("http://127.0.0.1:{port}/healthz"), 200).await;
    let (_, scrape) = get(&format!("http://127.0.0.1:{port}/metrics")).await;
    for platform in ["telegram", "discord"] {
        assert_eq!(
            sample(
                &scrape,
                &format!(
                    "tollgate_messages_total{{platform=\"{platform}\",agent=\"a\",outcome=\"queued\"}}"
                )
            ),
            1.0
        );
    }
}

/// A bridge that cannot connect (Telegram refuses the token) does not stop the other: Discord
/// answers, the log and `/healthz` say which bridge did not start and why.
#[tokio::test(flavor = "multi_thread")]
async fn a_bridge_that_cannot_connect_leaves_the_other_serving() {
    use crate::suite::serve::metrics::{free_port, until_status};
    let telegram = FakeTelegram::start().await;
    telegram.fail_next(
        "GetMe",
        json!({"ok": false, "error_code": 401, "description": "Unauthorized"}),
    );
    let port = free_port();
    let more = format!(
        "[telegram]\napi_url = \"{}\"\nallowed_users = [10]\nadmins = [1]\n[metrics]\nlisten = \"127.0.0.1:{port}\"\n",
        telegram.url
    );
    let mut served = Served::new(vec![text("still here")], "", "", &more).await;
    served.spawn(&[("TELEGRAM_BOT_TOKEN", "123:revoked-token".to_string())]);
    served.discord.ready(1).await;
    served.dm(USER, "hello");
    served
        .discord
        .wait_for(WAIT, "the Discord answer", |d| {
            d.posted_to(dm_channel(USER))
                .into_iter()
                .find(|m| m == "still here")
        })
        .await;
    let health = until_status(&format!("http://127.0.0.1:{port}/healthz"), 503).await;
    assert!(
        health.contains("the telegram bridge did not start"),
        "{health}"
    );
    let log = served.log();
    assert!(log.contains("not starting the telegram bridge"), "{log}");
    assert!(!log.contains("revoked-token"), "{log}");
}

/// An admin by role is an admin of that role's guild only: they answer its cards, but cannot
/// save what would hold for the whole agent — an "Always" for a command runs it unasked in
/// every guild and chat the agent serves. An admin listed by id can.
#[tokio::test(flavor = "multi_thread")]
async fn an_admin_by_role_cannot_grant_for_the_whole_agent() {
    let served = Served::start(
        vec![
            tool_calls(&[(
                "c1",
                "execute_command",
                &json!({"command": "touch made.txt"}).to_string(),
            )]),
            text("Made."),
        ],
        "tools = [\"execute_command\"]\n",
        "",
    )
    .await;
    served.llm.classify_as("high-risk");
    let thread = served.say_in(Place::guild(GUILD, CHANNEL), USER, &[], "make it", true);
    let (card_id, card) = served.card(thread, 0).await;
    let here = Place::guild(GUILD, thread);
    let always = button(&card, "Always");
    assert!(always.ends_with(":always-command"), "{always}");
    let refused = served.press(here, ROLE_ADMIN, &[ADMIN_ROLE], card_id, &always);
    let answer = served.follow_up(refused).await;
    assert!(
        answer.body["content"]
            .as_str()
            .unwrap()
            .contains("Only admins listed by id"),
        "{:?}",
        answer.body
    );
    let made = served
        .dir
        .path()
        .join(format!("ws/discord_{thread}/made.txt"));
    assert!(!made.exists());
    // Approving once is theirs to do.
    served.press(
        here,
        ROLE_ADMIN,
        &[ADMIN_ROLE],
        card_id,
        &button(&card, "Approve"),
    );
    served.wait_posted(thread, "Made.").await;
    assert!(made.exists());
    let listed = served.tollgate(&["allowlist", "list"]);
    assert!(listed.status.success(), "{listed:?}");
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(!listed.contains("touch"), "no key was saved: {listed}");
    assert!(
        served
            .audit()
            .contains("a grant for the whole agent by an admin by role"),
        "the refusal is audited"
    );
    // Nor do they see or revoke what an admin listed by id saved for the whole agent.
    let added = served.tollgate(&["allowlist", "add", "--agent", "a", "--command", "git pull"]);
    assert!(added.status.success(), "{added:?}");
    async fn allowlist(
        served: &Served,
        place: Place,
        user: u64,
        roles: &[u64],
        args: &str,
    ) -> String {
        let asked = served.slash(place, user, roles, "allowlist", Some(args));
        let answer = served.follow_up(asked).await;
        answer.body["content"].as_str().unwrap().to_string()
    }
    let listed = allowlist(&served, here, ROLE_ADMIN, &[ADMIN_ROLE], "list").await;
    assert!(
        !listed.contains("git pull") && listed.contains("admins listed by id"),
        "{listed}"
    );
    for revoke in ["revoke command git pull", "revoke companion analyze:image"] {
        let refused = allowlist(&served, here, ROLE_ADMIN, &[ADMIN_ROLE], revoke).await;
        assert!(refused.contains("admins listed by id"), "{refused}");
    }
    // The chat's own grants are theirs to revoke.
    let revoked = allowlist(
        &served,
        here,
        ROLE_ADMIN,
        &[ADMIN_ROLE],
        "revoke tool write_file",
    )
    .await;
    assert_eq!(revoked, "`write_file` was not allowed.");
    let listed = served.tollgate(&["allowlist", "list"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("git pull"),
        "{listed:?}"
    );
    let listed = allowlist(&served, here, ADMIN, &[], "list").await;
    assert!(
        listed.contains("git pull") && !listed.contains("admins listed by id"),
        "{listed}"
    );
}
