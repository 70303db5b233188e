//! tollgate runs AI agents inside Discord and Telegram behind one policy gate.

pub mod agent;
pub mod approvals;
pub mod cli;
pub mod clock;
pub mod companions;
pub mod config;
pub mod events;
pub mod executor;
pub mod gate;
pub mod metrics;
pub mod policy;
pub mod reminders;
pub mod retention;
pub mod router;
pub mod sandbox;
pub mod serve;
pub mod step_aside;
pub mod store;
pub mod tools;
