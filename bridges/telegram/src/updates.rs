//! Bot API updates translated into the surface's terms: a message (with the files it carries,
//! not yet downloaded) or a button press. Nothing here decides who may do what.

use teloxide::types::{CallbackQuery, Message};
use tollgate_surface::{ChatKind, ChatRef, Inbound, Platform, Press, UserRef};

/// A file a message carries, to be downloaded where the runtime says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteFile {
    pub file_id: String,
    /// The name the sender gave (unsanitized), or one made from the kind of file.
    pub name: String,
    /// As Telegram reported it: the runtime refuses big files before downloading them.
    pub bytes: u64,
}

/// A message and its files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TelegramMessage {
    pub inbound: Inbound,
    pub files: Vec<RemoteFile>,
}

/// A press of an inline button.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TelegramPress {
    /// Answered with `answerCallbackQuery` (the presser sees the text).
    pub callback_id: String,
    pub press: Press,
    /// The message whose button was pressed.
    pub message_id: Option<i64>,
}

/// One thing that happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TelegramUpdate {
    Message(TelegramMessage),
    Press(TelegramPress),
}

fn user(from: &teloxide::types::User) -> UserRef {
    UserRef {
        id: i64::try_from(from.id.0).unwrap_or(i64::MAX),
        display: from.full_name(),
        is_bot: from.is_bot,
    }
}

fn chat_ref(chat: &teloxide::types::Chat, thread: Option<i64>) -> ChatRef {
    ChatRef {
        platform: Platform::Telegram,
        id: chat.id.0,
        kind: if chat.is_private() {
            ChatKind::Private
        } else {
            ChatKind::Group
        },
        thread,
        guild: None,
        parent: None,
    }
}

fn files(message: &Message) -> Vec<RemoteFile> {
    let mut files = Vec::new();
    if let Some(document) = message.document() {
        files.push(RemoteFile {
            file_id: document.file.id.0.clone(),
            name: document
                .file_name
                .clone()
                .unwrap_or_else(|| "document".into()),
            bytes: u64::from(document.file.size),
        });
    }
    // Telegram sends each photo in several sizes: the largest is the photo.
    if let Some(largest) = message
        .photo()
        .and_then(|sizes| sizes.iter().max_by_key(|p| p.width * p.height))
    {
        files.push(RemoteFile {
            file_id: largest.file.id.0.clone(),
            name: format!("photo-{}.jpg", message.id.0),
            bytes: u64::from(largest.file.size),
        });
    }
    if let Some(voice) = message.voice() {
        files.push(RemoteFile {
            file_id: voice.file.id.0.clone(),
            name: format!("voice-{}.ogg", message.id.0),
            bytes: u64::from(voice.file.size),
        });
    }
    files
}

/// A message as the runtime sees it; `None` for what carries neither text nor files (joins,
/// pins) or has no sender.
#[must_use]
pub fn translate_message(
    message: &Message,
    bot_id: i64,
    bot_username: &str,
) -> Option<TelegramMessage> {
    let files = files(message);
    let text = message
        .text()
        .or_else(|| message.caption())
        .map(str::to_string);
    if text.is_none() && files.is_empty() {
        return None;
    }
    let text = text.unwrap_or_default();
    let from = message.from.as_ref()?;
    let mention = format!("@{bot_username}");
    let reply_to_bot = message
        .reply_to_message()
        .and_then(|r| r.from.as_ref())
        .is_some_and(|u| i64::try_from(u.id.0).ok() == Some(bot_id));
    let thread = message
        .is_topic_message
        .then(|| message.thread_id.map(|t| i64::from(t.0.0)))
        .flatten();
    Some(TelegramMessage {
        inbound: Inbound {
            chat: chat_ref(&message.chat, thread),
            sender: user(from),
            roles: Vec::new(),
            message_id: i64::from(message.id.0),
            mentioned: !bot_username.is_empty() && text.contains(&mention),
            text,
            reply_to_bot,
            attachments: Vec::new(),
        },
        files,
    })
}

/// A button press; `None` for presses without data or on messages too old to see.
#[must_use]
pub fn translate_press(query: &CallbackQuery) -> Option<TelegramPress> {
    let data = query.data.clone()?;
    let message = query.message.as_ref()?;
    let thread = message
        .regular_message()
        .filter(|m| m.is_topic_message)
        .and_then(|m| m.thread_id.map(|t| i64::from(t.0.0)));
    Some(TelegramPress {
        callback_id: query.id.0.clone(),
        press: Press {
            token: data,
            presser: user(&query.from),
            chat: chat_ref(message.chat(), thread),
            roles: Vec::new(),
        },
        message_id: Some(i64::from(message.id().0)),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn message(extra: serde_json::Value) -> Message {
        let mut base = json!({
            "message_id": 7, "date": 1_700_000_000,
            "chat": {"id": 10, "type": "private", "first_name": "Ann"},
            "from": {"id": 10, "is_bot": false, "first_name": "Ann"},
        });
        for (k, v) in extra.as_object().unwrap() {
            base[k] = v.clone();
        }
        serde_json::from_value(base).unwrap()
    }

    #[test]
    fn photos_take_the_largest_size_and_voice_gets_a_name() {
        let photo = message(json!({"caption": "look", "photo": [
            {"file_id": "small", "file_unique_id": "s", "width": 90, "height": 90, "file_size": 1000},
            {"file_id": "large", "file_unique_id": "l", "width": 1280, "height": 960, "file_size": 90000},
        ]}));
        let got = translate_message(&photo, 999, "toll_bot").unwrap();
        assert_eq!(got.inbound.text, "look");
        assert_eq!(
            got.files,
            vec![RemoteFile {
                file_id: "large".into(),
                name: "photo-7.jpg".into(),
                bytes: 90000
            }]
        );
        let voice = message(
            json!({"voice": {"file_id": "v", "file_unique_id": "v", "duration": 3, "file_size": 5000, "mime_type": "audio/ogg"}}),
        );
        assert!(voice.voice().is_some(), "{voice:?}");
        let got = translate_message(&voice, 999, "toll_bot").unwrap();
        assert_eq!(got.inbound.text, "");
        assert_eq!(got.files[0].name, "voice-7.ogg");
        // Neither text nor a file (a pin, a join): nothing to answer.
        assert!(
            translate_message(&message(json!({"new_chat_title": "x"})), 999, "toll_bot").is_none()
        );
    }
}
