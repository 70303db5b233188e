//! The gate: for every tool call, allow / prompt / deny, with who decided and why.

pub mod classifier;
pub mod declaration;
pub mod effect;
pub mod env;
pub mod glob;
pub mod mode;
pub mod paths;
pub mod reason;
pub mod redact;
pub mod resolve;
pub mod sandbox;
pub mod shell;
pub mod tier;
