//! Bot API updates translated into the surface's terms: a message (with the files it carries,
//! not yet fetched) or a button press. Nothing here decides who may do what.

use teloxide::types::{CallbackQuery, Message, MessageEntityKind};
use tollgate_surface::{
    CardRef, ChatKind, ChatRef, Inbound, Platform, Press, PressHandle, RemoteFile, UserRef,
};

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
            id: document.file.id.0.clone(),
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
            id: largest.file.id.0.clone(),
            name: format!("photo-{}.jpg", message.id.0),
            bytes: u64::from(largest.file.size),
        });
    }
    if let Some(voice) = message.voice() {
        files.push(RemoteFile {
            id: voice.file.id.0.clone(),
            name: format!("voice-{}.ogg", message.id.0),
            bytes: u64::from(voice.file.size),
        });
    }
    files
}

/// A message as the runtime sees it; `None` for what carries neither text nor files (joins,
/// pins) or has no sender. The bot's own mention is taken out of the text, and a command
/// addressed to it is written without the address (`/stop@bot` is `/stop`); one addressed to
/// another bot keeps its address, so the runtime does not take it as a command.
#[must_use]
pub fn translate_message(message: &Message, bot_id: i64, bot_username: &str) -> Option<Inbound> {
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
    let own_mentions = own_mentions(message, bot_username);
    let mentioned = !own_mentions.is_empty();
    let reply_to_bot = message
        .reply_to_message()
        .and_then(|r| r.from.as_ref())
        .is_some_and(|u| i64::try_from(u.id.0).ok() == Some(bot_id));
    let thread = message
        .is_topic_message
        .then(|| message.thread_id.map(|t| i64::from(t.0.0)))
        .flatten();
    Some(Inbound {
        chat: chat_ref(&message.chat, thread),
        sender: user(from),
        roles: Vec::new(),
        message_id: i64::from(message.id.0),
        mentioned,
        text: without_own_mention(&text, &own_mentions, bot_username),
        reply_to_bot,
        files,
        // Telegram conversations stay where they started; nothing is read without a mention.
        starts_thread: false,
        in_bot_thread: false,
    })
}

/// Where the message mentions this bot, as Telegram marked it (its entities, never a substring:
/// `@toll_bot2` is another bot): byte ranges of `@bot` mentions, and of `/cmd@bot` commands.
fn own_mentions(message: &Message, bot_username: &str) -> Vec<(std::ops::Range<usize>, bool)> {
    if bot_username.is_empty() {
        return Vec::new();
    }
    let entities = message
        .parse_entities()
        .or_else(|| message.parse_caption_entities())
        .unwrap_or_default();
    entities
        .iter()
        .filter_map(|entity| match entity.kind() {
            // Usernames are case-insensitive on Telegram.
            MessageEntityKind::Mention => entity
                .text()
                .strip_prefix('@')
                .is_some_and(|name| name.eq_ignore_ascii_case(bot_username))
                .then(|| (entity.range(), true)),
            MessageEntityKind::BotCommand => entity
                .text()
                .split_once('@')
                .is_some_and(|(_, name)| name.eq_ignore_ascii_case(bot_username))
                .then(|| (entity.range(), false)),
            _ => None,
        })
        .collect()
}

/// `text` without the bot's @-mentions (`mentions`, from [`own_mentions`]); `/cmd@bot args`
/// becomes `/cmd args`.
fn without_own_mention(
    text: &str,
    mentions: &[(std::ops::Range<usize>, bool)],
    username: &str,
) -> String {
    if mentions.is_empty() {
        return text.to_string();
    }
    let trimmed = text.trim_start();
    if let Some(command) = trimmed.strip_prefix('/') {
        let (head, rest) = command
            .split_once(char::is_whitespace)
            .unwrap_or((command, ""));
        if let Some((name, addressee)) = head.split_once('@')
            && addressee.eq_ignore_ascii_case(username)
        {
            return format!("/{name} {}", rest.trim_start()).trim().to_string();
        }
    }
    let mut kept = String::with_capacity(text.len());
    let mut from = 0;
    for (range, _) in mentions.iter().filter(|(_, is_mention)| *is_mention) {
        if range.start < from || range.end > text.len() {
            continue;
        }
        kept.push_str(text.get(from..range.start).unwrap_or_default());
        from = range.end;
    }
    kept.push_str(text.get(from..).unwrap_or_default());
    kept.trim().to_string()
}

/// A button press. Every callback is handed in, even one without data or whose message is too
/// old to see (its chat is then the presser's private chat): each gets an answer.
#[must_use]
pub fn translate_press(query: &CallbackQuery) -> Press {
    let presser = user(&query.from);
    let (chat, message) = match &query.message {
        Some(message) => {
            let thread = message
                .regular_message()
                .filter(|m| m.is_topic_message)
                .and_then(|m| m.thread_id.map(|t| i64::from(t.0.0)));
            let chat = chat_ref(message.chat(), thread);
            let at = CardRef {
                chat: chat.clone(),
                message_id: i64::from(message.id().0),
            };
            (chat, Some(at))
        }
        None => (ChatRef::private(Platform::Telegram, presser.id), None),
    };
    Press {
        token: query.data.clone().unwrap_or_default(),
        presser,
        chat,
        roles: Vec::new(),
        message,
        handle: PressHandle(query.id.0.clone()),
    }
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
        assert_eq!(got.text, "look");
        assert_eq!(
            got.files,
            vec![RemoteFile {
                id: "large".into(),
                name: "photo-7.jpg".into(),
                bytes: 90000
            }]
        );
        let voice = message(
            json!({"voice": {"file_id": "v", "file_unique_id": "v", "duration": 3, "file_size": 5000, "mime_type": "audio/ogg"}}),
        );
        assert!(voice.voice().is_some(), "{voice:?}");
        let got = translate_message(&voice, 999, "toll_bot").unwrap();
        assert_eq!(got.text, "");
        assert_eq!(got.files[0].name, "voice-7.ogg");
        // Neither text nor a file (a pin, a join): nothing to answer.
        assert!(
            translate_message(&message(json!({"new_chat_title": "x"})), 999, "toll_bot").is_none()
        );
    }

    /// `text` with one entity of `kind` at UTF-16 `offset` and `length`, through the real
    /// translation.
    fn read(text: &str, kind: &str, offset: usize, length: usize) -> (bool, String) {
        let m = message(
            json!({"text": text, "entities": [{"type": kind, "offset": offset, "length": length}]}),
        );
        let got = translate_message(&m, 999, "toll_bot").unwrap();
        (got.mentioned, got.text)
    }

    #[test]
    fn mentions_come_from_entities_and_commands_addressed_here_are_kept() {
        assert_eq!(
            read("@toll_bot hello", "mention", 0, 9),
            (true, "hello".into())
        );
        assert_eq!(
            read("hi @Toll_Bot, ça va", "mention", 3, 9),
            (true, "hi , ça va".into())
        );
        // Another bot whose name starts with ours is not a mention of ours.
        assert_eq!(
            read("@toll_bot2 look", "mention", 0, 10),
            (false, "@toll_bot2 look".into())
        );
        // Text Telegram did not mark (inside code) is not a mention either.
        assert_eq!(
            read("run `@toll_bot`", "code", 4, 11),
            (false, "run `@toll_bot`".into())
        );
        // Offsets count UTF-16 units: an emoji before the mention takes two.
        assert_eq!(
            read("😀 @toll_bot hi", "mention", 3, 9),
            (true, "😀  hi".into())
        );
        assert_eq!(
            read("/stop@toll_bot", "bot_command", 0, 14),
            (true, "/stop".into())
        );
        assert_eq!(
            read("/mode@Toll_Bot  high-risk", "bot_command", 0, 14),
            (true, "/mode high-risk".into())
        );
        assert_eq!(
            read("/stop@other_bot", "bot_command", 0, 15),
            (false, "/stop@other_bot".into())
        );
        let captioned = message(
            json!({"caption": "@toll_bot see", "caption_entities": [{"type": "mention", "offset": 0, "length": 9}], "document": {"file_id": "d", "file_unique_id": "d", "file_size": 3}}),
        );
        let got = translate_message(&captioned, 999, "toll_bot").unwrap();
        assert!(got.mentioned);
        assert_eq!(got.text, "see");
    }
}
