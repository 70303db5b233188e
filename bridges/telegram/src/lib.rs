//! `tollgate-telegram`: the Telegram surface. So far its rendering: the model's Markdown as
//! Telegram's HTML subset, split under the message limit measured on the rendered text, code
//! fences kept balanced across messages. (The teloxide bridge that sends it comes next.)

pub mod bot;
pub mod render;
