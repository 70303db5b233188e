//! From platform events to sessions: access control (fail closed), mention gating and session
//! keys. Pure functions over the config and a bridge's [`Inbound`](tollgate_surface::Inbound):
//! bridges translate, this decides.

mod access;

pub use access::{Access, discord_access, session_key, should_answer, telegram_access};
