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
