//! Tools: their declarations and arguments, the two-phase `propose` half, the registry and an
//! agent's toolset. Execution arrives with the tools issue.

pub mod approved;
pub mod args;
pub mod blocking;
pub mod builtin;
pub mod definitions;
pub mod exec;
pub mod fs;
pub mod hosts;
pub mod mcp;
pub mod proposal;
pub mod registry;
pub mod tool;

pub use approved::{ApprovedCall, Provenance, RuntimeReason, ToolOutput};
pub use definitions::{DefinitionsCache, ToolDefinitions};
pub use exec::ExecContext;
pub use proposal::Proposal;
pub use registry::{ToolDefinition, ToolRegistry, Toolset};
pub use tool::{ProposeContext, Tool, ToolError, ToolFuture};
