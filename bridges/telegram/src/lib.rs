//! `tollgate-telegram`: the Telegram surface. It translates Bot API updates into the surface's
//! messages and presses, and renders what the runtime sends (answers as Telegram HTML split
//! under the limit, approval cards with inline keyboards), through teloxide. It never decides
//! who may do what: that is the runtime's business.

pub mod bot;
pub mod card;
pub mod render;
pub mod updates;
