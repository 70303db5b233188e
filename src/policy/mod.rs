//! The gate: for every tool call, allow / prompt / deny, with who decided and why.

pub mod mode;
pub mod reason;
pub mod shell;
pub mod tier;
