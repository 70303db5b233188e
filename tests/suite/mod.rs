mod cli;
mod corpus;
mod gate_scenarios;
mod sandbox;
