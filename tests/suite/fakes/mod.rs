pub mod llm;
pub mod telegram;
