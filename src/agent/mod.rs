//! The agent runtime's pieces: model providers and the model-backed command classifier.
//! (Durable runs, sessions and the console surface arrive with the rest of the runtime issue.)

pub mod classifier;
pub mod error;
pub mod journal;
pub mod llm;
pub mod runner;
pub mod runs;
pub mod scheduler;
pub mod setup;
