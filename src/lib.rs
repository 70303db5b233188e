//! tollgate runs AI agents inside Discord and Telegram behind one policy gate.

pub mod cli;
pub mod config;
pub mod gate;
pub mod policy;
pub mod sandbox;
pub mod store;
pub mod tools;
