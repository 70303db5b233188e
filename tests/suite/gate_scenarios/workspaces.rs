//! Where a session's workspace is: inside the agent's workspace.

use super::world;
use std::path::Path;
use tollgate::gate::workspace_for;

#[test]
fn session_workspaces_are_inside_the_agent_workspace() {
    let w = world();
    let agent = &w.config.agents["a"];
    let ws = workspace_for(agent, Some("telegram:-100:7"));
    assert!(ws.starts_with(w.root.join("ws")));
    assert!(Path::new(&ws).ends_with("telegram_-100_7"));
}
