//! tollgate runs AI agents inside Discord and Telegram behind one policy gate.

pub mod policy;
pub mod config;
pub mod tools;
pub mod store;
pub mod gate;
pub mod cli;
