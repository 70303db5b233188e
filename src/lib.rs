//! tollgate runs AI agents inside Discord and Telegram behind one policy gate.

pub mod policy;
