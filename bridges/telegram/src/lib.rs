//! `tollgate-telegram`: the Telegram platform behind the seam. [`bridge::TelegramBridge`]
//! implements `tollgate_surface::Bridge` over teloxide: it translates Bot API updates into the
//! surface's events, renders what the runtime sends (answers as Telegram HTML split under the
//! limit, cards with inline keyboards) and maps Telegram's errors to the seam's kinds. It never
//! decides who may do what: that is the runtime's business.
//!
//! - [`bridge`]: the `Bridge` implementation; [`bot`]: every Bot API call
//! - [`updates`]: updates in; [`card`] and [`render`]: HTML out; [`errors`]: error kinds

pub mod bot;
pub mod bridge;
pub mod card;
pub mod errors;
pub mod render;
mod sent;
pub mod updates;

pub use bridge::TelegramBridge;
