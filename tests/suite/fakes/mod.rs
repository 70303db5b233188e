pub mod bridge;
pub mod http;
pub mod llm;
pub mod telegram;
