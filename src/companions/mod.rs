//! Companion models: models an agent sends media to (a photo to a vision model, a voice note
//! to a transcription endpoint), one per role, bound in `[agents.X.companions]`. Binding is the
//! operator's consent to send that kind of file to that model; nothing is sent to a model that
//! is not bound.
//!
//! - [`role`]: `"<analyze|generate>:<image|audio|video>"` and `"provider/model"`
//! - [`media`]: what a file is, from its first bytes (never its name)
//! - [`call`]: the requests — OpenAI-compatible `image_url` data URLs, Anthropic image blocks,
//!   `/audio/transcriptions`
//! - [`bindings`]: bindings made on a picker card, stored per agent and role
//! - [`host`]: the agent's companions as the `analyze_media` tool reaches them

pub mod bindings;
pub mod call;
pub mod host;
pub mod media;
pub mod role;

pub use host::AgentCompanions;
pub use media::{MediaKind, detect};
pub use role::{Companion, Role};
