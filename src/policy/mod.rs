//! The gate: for every tool call, allow / prompt / deny, with who decided and why.

pub mod classifier;
pub mod declaration;
pub mod effect;
pub mod env;
pub mod glob;
pub mod mode;
pub mod paths;
pub mod private_hosts;
pub mod reason;
pub mod redact;
pub mod resolve;
pub mod sandbox;
pub mod shell;
pub mod tier;

// The gate's vocabulary, in one place for the rest of the runtime: what a decision is, who
// made it and why, and the two dials it is made against.
pub use effect::Effect;
pub use mode::{ApprovalMode, Dials, SandboxPolicy};
pub use reason::{DecisionSource, ReasonCode};
pub use resolve::{AlwaysOffer, GateCall, GateContext, GateDecision};
pub use tier::{Decision, Tier, ToolPolicy};
