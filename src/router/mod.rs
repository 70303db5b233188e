//! From platform events to sessions: access control (fail closed), mention gating and session
//! keys. Pure functions over the config and a bridge's [`Inbound`](tollgate_surface::Inbound):
//! bridges translate, this decides.

mod access;

pub use access::{
    Access, chat_session_key, discord_access, discord_admin, discord_agent_admin, should_answer,
    telegram_access, telegram_admin,
};
