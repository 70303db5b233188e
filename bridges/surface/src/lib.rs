//! `tollgate-surface`: the seam between the tollgate runtime and a chat platform. Data and one
//! trait only — no platform code and no policy.
//!
//! - [`message`]: chats, users, and a message as a bridge hands it in ([`Inbound`])
//! - [`card`]: what a card shows ([`CardView`]: an approval, a question, an "all N" row), as
//!   data; how it ended ([`CardOutcome`]); where it landed ([`CardRef`])
//! - [`press`]: a button press, with the handle its answer goes back through
//! - [`bridge`]: the [`Bridge`] trait the runtime calls, and the [`BridgeEvent`]s a bridge
//!   hands in through a bounded channel the runtime owns
//! - [`fetch`]: a download written into the runtime's sink with a cap
//! - [`error`]: [`BridgeError`] with a kind the runtime acts on (never its text)
//! - [`limits`]: what each platform allows, checked before sending
//! - [`split`]: long answers cut on line boundaries with code fences balanced
//! - [`metered`]: what a bridge counts for `/metrics` (rate-limit waits)
//! - [`text`]: control and invisible characters shown escaped (what a card shows is what runs)
//!
//! A bridge translates platform events in and renders the runtime's data out; it never decides
//! who may do what (the runtime does, from the config). Adding a platform is a crate that
//! implements [`Bridge`], plus the wiring that starts it.

pub mod bridge;
pub mod card;
pub mod error;
pub mod fetch;
pub mod limits;
pub mod message;
pub mod metered;
pub mod press;
pub mod split;
pub mod text;

pub use bridge::{
    Bridge, BridgeEvent, BridgeFuture, CommandInvocation, CommandSpec, EventSender, FetchSink,
    RuntimeGone,
};
pub use card::{ApprovalCard, Button, CardOutcome, CardRef, CardView};
pub use error::{BridgeError, BridgeErrorKind};
pub use limits::Limits;
pub use message::{ChatKind, ChatRef, Inbound, Platform, RemoteFile, UserRef};
pub use press::{Press, PressHandle};
