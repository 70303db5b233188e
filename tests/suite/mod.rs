mod cli;
mod corpus;
mod executor;
mod fakes;
mod gate_scenarios;
mod llm;
mod mcp;
mod sandbox;
