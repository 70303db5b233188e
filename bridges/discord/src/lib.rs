//! `tollgate-discord`: the Discord surface of tollgate, over serenity. It translates gateway
//! events into the surface's terms and renders the runtime's answers and cards as Discord
//! messages with components; sessions, access, cards and commands are the runtime's.
//!
//! - [`bridge`]: the [`tollgate_surface::Bridge`] the runtime calls, and the gateway client
//! - [`handler`]: gateway events handed in (interactions acknowledged at once)
//! - [`translate`]: messages, presses and slash commands in the surface's terms
//! - [`render`]: answers split under 2,000 characters, cards and their components
//! - [`bot`]: the REST calls; [`rest`]: requests with rate limits of our own
//!   ([`ratelimit`]); [`channels`]: threads, their parents, DM channels

pub mod bot;
pub mod bridge;
pub mod channels;
pub mod handler;
pub mod markdown;
pub mod ratelimit;
pub mod render;
pub mod rest;
pub mod shards_up;
pub mod translate;

pub use bridge::{DiscordBridge, DiscordOptions, Shards};
