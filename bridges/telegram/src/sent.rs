//! `sendMessage`, with Telegram's answer read for the one thing the bridge keeps of it: the new
//! message's id. teloxide's own request builds a whole `Message` from the answer (chat,
//! sender, entities, every optional part): about sixty-five allocations a message sent,
//! counted with a `malloc` uprobe over the Telegram benchmark's repeat bursts. This builds one
//! number. (serde still buffers the answer before reading it: teloxide's response type is an
//! untagged enum.)

use serde::{Deserialize, Serialize};
use std::time::Duration;
use teloxide::payloads::SendMessage;
use teloxide::requests::Payload;

/// teloxide's `SendMessage`, sent unchanged, whose answer is read for its id only.
#[derive(Clone, Serialize)]
#[serde(transparent)]
pub(crate) struct SendMessageForId(pub SendMessage);

impl Payload for SendMessageForId {
    type Output = SentId;
    const NAME: &'static str = SendMessage::NAME;

    fn timeout_hint(&self) -> Option<Duration> {
        self.0.timeout_hint()
    }
}

/// What is read of a sent message.
#[derive(Deserialize)]
pub(crate) struct SentId {
    pub message_id: i32,
}
