//! The Telegram bridge's client side against the fake Bot API, through the real teloxide:
//! connecting, polling and translating messages, answers split and rendered, 429s waited out,
//! and a plain-text retry when Telegram rejects the markup.

use super::fakes::telegram::{FakeTelegram, user_message};
use serde_json::json;
use std::time::Duration;
use tollgate_surface::{BridgeEvent, ChatKind, ChatRef, Platform};
use tollgate_telegram::bot::TelegramBot;

fn private_chat(id: i64) -> ChatRef {
    ChatRef::private(Platform::Telegram, id)
}

#[tokio::test]
async fn connects_polls_and_translates() {
    let fake = FakeTelegram::start().await;
    let bot = TelegramBot::connect("123:SECRET", &fake.url).await.unwrap();
    assert_eq!((bot.id, bot.username.as_str()), (999, "toll_bot"));
    assert_eq!(
        fake.methods()[..2],
        ["GetMe".to_string(), "DeleteWebhook".to_string()]
    );

    fake.push_message(user_message(10, "private", 10, "hello @toll_bot"));
    let mut reply = user_message(-100, "supergroup", 11, "and this?");
    reply["reply_to_message"] = json!({"message_id": 5, "date": 1_700_000_000, "chat": {"id": -100, "type": "supergroup", "title": "Team"}, "from": {"id": 999, "is_bot": true, "first_name": "Toll"}, "text": "earlier"});
    fake.push_message(reply);
    let got: Vec<_> = bot
        .poll(Duration::from_secs(1))
        .await
        .unwrap()
        .into_iter()
        .map(|u| match u {
            BridgeEvent::Message(m) => m,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].chat.kind, ChatKind::Private);
    assert_eq!(got[0].sender.id, 10);
    assert!(got[0].mentioned);
    assert_eq!(got[1].chat.kind, ChatKind::Group);
    assert!(got[1].reply_to_bot && !got[1].mentioned);
    // The offset moves past what was read: the next poll sees nothing new.
    assert!(bot.poll(Duration::from_secs(1)).await.unwrap().is_empty());
    let offsets: Vec<i64> = fake
        .calls("GetUpdates")
        .iter()
        .map(|b| b["offset"].as_i64().unwrap_or(0))
        .collect();
    assert_eq!(offsets.last(), Some(&3));
}

#[tokio::test]
async fn long_answers_split_rate_limits_waited_and_bad_markup_resent_plain() {
    let fake = FakeTelegram::start().await;
    let bot = TelegramBot::connect("123:SECRET", &fake.url).await.unwrap();
    let mut answer = String::new();
    for i in 0..300 {
        answer.push_str(&format!("line {i}: <tag> & **bold**\n"));
    }
    assert!(answer.len() > 7_000);
    fake.fail_next("SendMessage", json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 1", "parameters": {"retry_after": 1}}));
    bot.send_answer(&private_chat(10), &answer).await.unwrap();
    let sent = fake.calls("SendMessage");
    let delivered: Vec<&serde_json::Value> = sent.iter().skip(1).collect();
    assert!(delivered.len() >= 2, "{}", delivered.len());
    for message in &delivered {
        let text = message["text"].as_str().unwrap();
        assert!(text.chars().count() <= 4096);
        assert_eq!(message["parse_mode"], "HTML");
        assert!(!text.contains("<tag>"));
    }
    let all: String = delivered
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect();
    for i in 0..300 {
        assert!(all.contains(&format!("line {i}:")), "line {i} lost");
    }

    fake.fail_next(
        "SendMessage",
        json!({"ok": false, "error_code": 400, "description": "Bad Request: can't parse entities"}),
    );
    bot.send_answer(&private_chat(10), "a *broken* answer")
        .await
        .unwrap();
    let last = fake.calls("SendMessage").last().unwrap().clone();
    assert_eq!(last["text"], "a *broken* answer");
    assert!(last.get("parse_mode").is_none());
}
