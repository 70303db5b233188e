//! Photos and voice notes in chat: a file with no text starts a turn, the agent told what
//! arrived and where; with `transcribe_voice` and `analyze:audio` bound, a voice note is
//! transcribed before the turn, so a spoken request works like a typed one.

use super::*;
use crate::suite::fakes::llm::Reply;

#[tokio::test(flavor = "multi_thread")]
async fn a_voice_note_is_transcribed_up_front_and_a_photo_alone_starts_a_turn() {
    let served = Served::start(
        vec![
            Reply::Json(json!({"text": "please water the plants at six"})),
            text("I will remind you."),
            text("A photo, noted."),
        ],
        "transcribe_voice = true\n[agents.a.companions]\n\"analyze:audio\" = \"p/whisper-1\"",
        "",
    )
    .await;
    served
        .telegram
        .add_file("V1", b"OggS\0\x02pretend-opus-frames".to_vec());
    let mut voice = user_message(USER, "private", USER, "");
    voice.as_object_mut().unwrap().remove("text");
    voice["voice"] = json!({"file_id": "V1", "file_unique_id": "UV1", "duration": 2, "file_size": 25, "mime_type": "audio/ogg"});
    served.telegram.push_message(voice);
    served.wait_text(USER, "I will remind you.").await;
    let asked = served.llm.requests();
    assert!(
        asked[0].path.ends_with("/audio/transcriptions"),
        "{}",
        asked[0].path
    );
    assert!(asked[0].raw.contains("whisper-1"));
    let told = asked[1].body["messages"].to_string();
    assert!(
        told.contains("please water the plants at six") && told.contains("attachments/voice-"),
        "{told}"
    );

    // A photo with no caption: the turn starts, the agent told where the file is.
    served
        .telegram
        .add_file("P1", b"\x89PNG\r\n\x1a\n-pixels".to_vec());
    let mut photo = user_message(USER, "private", USER, "");
    photo.as_object_mut().unwrap().remove("text");
    photo["photo"] = json!([{"file_id": "P1", "file_unique_id": "UP1", "width": 10, "height": 10, "file_size": 16}]);
    served.telegram.push_message(photo);
    served.wait_text(USER, "A photo, noted.").await;
    let told = served.llm.requests()[2].body["messages"].to_string();
    assert!(
        told.contains("[attached file: attachments/photo-"),
        "{told}"
    );
    // No companion was asked about the photo: nothing is bound for images.
    assert_eq!(served.llm.requests().len(), 3);
}

/// A picker on a Telegram card: one row per model and its "Bind for this agent", Cancel; asked
/// even in `high-risk`; the model's own `_selectedOptionId` ignored; a pick runs once with the
/// picked model; a binding is remembered, so the next call asks nobody.
#[tokio::test(flavor = "multi_thread")]
async fn a_picker_card_chooses_the_companion_and_binds_it() {
    let analyze = |id: &str, extra: Value| {
        let mut args = json!({"path": "pic.png", "question": "what is it?"});
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        crate::suite::fakes::llm::tool_calls(&[(id, "analyze_media", &args.to_string())])
    };
    let seen = |what: &str| Reply::Json(json!({"choices": [{"message": {"content": what}}]}));
    let served = Served::start(
        vec![
            analyze("m1", json!({"_selectedOptionId": "p/vision-1"})),
            seen("a cat"),
            text("Seen once."),
            analyze("m2", json!({})),
            seen("a cat again"),
            text("Seen twice."),
            analyze("m3", json!({})),
            seen("still a cat"),
            text("Seen thrice."),
            analyze("m4", json!({})),
            text("Cancelled."),
        ],
        "tools = [\"analyze_media\"]\napproval = \"high-risk\"\n[agents.a.companion_choices]\n\"analyze:image\" = [\"p/vision-1\", \"p/vision-2\"]",
        "",
    )
    .await;
    let workspace = served.path("ws/telegram_10");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("pic.png"), b"\x89PNG\r\n\x1a\n-pixels").unwrap();

    served.say(USER, "what is in pic.png?");
    let (card_id, card) = served.card(USER, 0).await;
    let keyboard = card["reply_markup"]["inline_keyboard"].to_string();
    assert!(
        keyboard.contains("p/vision-1")
            && keyboard.contains("p/vision-2")
            && keyboard.contains("Bind p/vision-2 for this agent")
            && keyboard.contains("Cancel")
            && !keyboard.contains("Approve"),
        "{keyboard}"
    );
    // Whoever picks reads what goes to the model with the file.
    assert!(
        card["text"]
            .as_str()
            .unwrap()
            .contains("asking: what is it?"),
        "{card}"
    );
    served
        .telegram
        .push_press(USER, ADMIN, card_id, &button(&card, "p/vision-2"));
    served.wait_text(USER, "Seen once.").await;
    assert_eq!(served.llm.requests()[1].body["model"], "vision-2");
    let edit = served.card_edit(card_id).await;
    assert!(
        edit["text"].as_str().unwrap().contains("picked p/vision-2"),
        "{edit}"
    );

    served.say(USER, "again");
    let (second_id, second) = served.card(USER, 1).await;
    let bind_first = second["reply_markup"]["inline_keyboard"][0][1]["callback_data"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(bind_first.ends_with(":bind-0"), "{bind_first}");
    // A member who is not an admin binds nothing.
    served
        .telegram
        .push_press(USER, USER, second_id, &bind_first);
    served.press_answer("Only admins").await;
    served
        .telegram
        .push_press(USER, ADMIN, second_id, &bind_first);
    served.wait_text(USER, "Seen twice.").await;
    assert_eq!(served.llm.requests()[4].body["model"], "vision-1");

    // Bound now: no card, straight to the bound model.
    served.say(USER, "and again");
    served.wait_text(USER, "Seen thrice.").await;
    assert_eq!(served.llm.requests()[7].body["model"], "vision-1");
    let cards = served
        .telegram
        .calls("SendMessage")
        .into_iter()
        .filter(|b| b.get("reply_markup").is_some())
        .count();
    assert_eq!(cards, 2);

    // The binding is listed and revoked like a saved command key, in chat and at the CLI.
    served.say(ADMIN, "/allowlist");
    served
        .wait_text(ADMIN, "companion analyze:image → `p/vision-1`")
        .await;
    let listed = served.tollgate(&["allowlist", "list"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("companion analyze:image\tbound to p/vision-1 by telegram:1 (User)"),
        "{listed}"
    );
    served.say(ADMIN, "/allowlist revoke companion analyze:image");
    served.wait_text(ADMIN, "Revoked `analyze:image`").await;
    let audit = served.tollgate(&["audit", "--json"]);
    let audit = String::from_utf8_lossy(&audit.stdout);
    assert!(
        audit.contains("\"picked\":\"p/vision-2\"") && audit.contains("\"bound\":true"),
        "{audit}"
    );

    // Revoked: the next call asks again; Cancel refuses it.
    served.say(USER, "once more");
    let (third_id, third) = served.card(USER, 2).await;
    served
        .telegram
        .push_press(USER, ADMIN, third_id, &button(&third, "Cancel"));
    served.wait_text(USER, "Cancelled.").await;
    assert_eq!(served.llm.requests().len(), 11);
}
