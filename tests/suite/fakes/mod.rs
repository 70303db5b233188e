pub mod bridge;
pub mod discord;
pub mod http;
pub mod llm;
pub mod telegram;
