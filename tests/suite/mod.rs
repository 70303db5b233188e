mod cli;
mod corpus;
mod executor;
mod gate_scenarios;
mod mcp;
mod sandbox;
