//! Platform limits a renderer respects (checked before sending, never discovered by a 400), and
//! the few a runtime needs to know.

use std::time::Duration;

/// Telegram: characters of one message's text.
pub const TELEGRAM_MESSAGE: usize = 4096;
/// Telegram: bytes of a button's `callback_data`.
pub const TELEGRAM_CALLBACK_DATA: usize = 64;
/// Telegram: UTF-16 code units (as Telegram counts) of card details before the full text goes
/// out as a file.
pub const TELEGRAM_CARD_DETAILS: usize = 2000;
/// Telegram's Bot API serves files up to this size.
pub const TELEGRAM_DOWNLOAD_BYTES: u64 = 20 * 1024 * 1024;
/// Discord: characters of one message's content.
pub const DISCORD_MESSAGE: usize = 2000;
/// Discord: characters of a component's `custom_id`.
pub const DISCORD_CUSTOM_ID: usize = 100;
/// Discord: buttons in one action row.
pub const DISCORD_BUTTONS_PER_ROW: usize = 5;

/// How long an idle HTTP connection (to a platform's API, to a model endpoint) is kept for
/// reuse. Under the rate-limit window (60 s), so that a burst's connections — hundreds, with
/// their buffers: about 30 MiB after 500 new chats at once — are let go with everything else
/// an idle bot keeps no longer (reqwest's default keeps them 90 s).
pub const IDLE_CONNECTION: Duration = Duration::from_secs(30);

/// What one platform allows, as the runtime needs to know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Characters of one message.
    pub message_chars: usize,
    /// Bytes of a button's data.
    pub button_data: usize,
    /// The largest file the platform lets a bot fetch.
    pub download_bytes: u64,
    /// How long one "typing…" shows (the runtime repeats it a little sooner).
    pub typing_lasts: Duration,
}
