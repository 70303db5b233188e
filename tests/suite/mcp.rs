//! MCP over stdio through rmcp: a deterministic Rust server (tests/fixtures/mcp_fixture.rs)
//! and a real third-party one from npm (`@modelcontextprotocol/server-filesystem`, installed
//! by `.ci/run`), both started under the agent's sandbox.

use serde_json::json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tollgate::config::{self, Config};
use tollgate::tools::mcp::client::McpServers;
use tollgate::tools::{ApprovedCall, ExecContext, Tool};

fn helper() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_tollgate"))
}

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mcp-fixture"))
}

/// The tool `name` of `listing` (the test fails if it is not there).
fn tool_in(
    listing: &tollgate::tools::mcp::client::McpListing,
    name: &str,
) -> Arc<tollgate::tools::mcp::McpTool> {
    listing
        .tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
        .clone()
}

/// A config whose agent `a` has the fixture server `fx`, trusted as read-only.
fn fixture_config(root: &Path) -> Config {
    config_with(
        root,
        &format!(
            "[agents.a.mcp.fx]\ncommand = {:?}\ntrusted = true\ntier = \"read-only\"\ntimeout_secs = 5\n",
            fixture().display().to_string()
        ),
    )
}

fn config_with(root: &Path, mcp: &str) -> Config {
    let text = format!(
        r#"
[store]
path = "store"
[providers.p]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
[agents.a]
provider = "p"
model = "m"
tools = []
workspace = "ws"
readable_roots = [{bin:?}]
{mcp}
"#,
        bin = fixture().parent().unwrap().display().to_string()
    );
    let file = root.join("tollgate.toml");
    std::fs::write(&file, &text).unwrap();
    config::load_with_env(Some(file), Some(&text), HashMap::new()).unwrap()
}

async fn call(tool: &dyn Tool, args: serde_json::Value) -> tollgate::tools::ToolOutput {
    // The gate and executor are covered elsewhere; here the execute half is driven directly
    // through the executor's public pieces: a proposal, approved.
    let proposal = tool.propose(&args, &dummy_propose()).unwrap();
    let approved = approve(proposal);
    tool.execute(&approved, &dummy_exec()).await
}

fn dummy_propose() -> tollgate::tools::ProposeContext {
    tollgate::tools::ProposeContext {
        workspace: PathBuf::from("/"),
        prefix_binaries: vec![],
        roots: tollgate::policy::sandbox::Roots {
            workspace: PathBuf::from("/nonexistent"),
            writable: vec![],
            readable: vec![],
            protected: vec![],
        },
        sandbox: tollgate::policy::mode::SandboxPolicy::WorkspaceWrite,
        companions: Default::default(),
    }
}

fn dummy_exec() -> ExecContext {
    ExecContext {
        agent: "a".into(),
        session: "console:t".into(),
        workspace: PathBuf::from("/nonexistent"),
        roots: dummy_propose().roots,
        sandbox: tollgate::policy::mode::SandboxPolicy::WorkspaceWrite,
        network_access: false,
        private_hosts: Vec::new(),
        trust_git_config: false,
        runner: tollgate::sandbox::ShellRunner::new(helper()),
        child_env: Default::default(),
        default_timeout: std::time::Duration::from_secs(5),
        cancel: tokio_util::sync::CancellationToken::new(),
        store: None,
        memory: Default::default(),
        subagents: None,
        context: None,
        approver: None,
        companions: None,
    }
}

fn approve(proposal: tollgate::tools::Proposal) -> ApprovedCall {
    tollgate::executor::testing::approve_for_tests(proposal)
}

#[tokio::test]
async fn the_fixture_server_runs_sandboxed_and_misbehaves_safely() {
    let dir = tempfile::tempdir().unwrap();
    let root = tollgate::policy::paths::canonical_root(dir.path());
    // SAFETY: unique to this test; read only by the child processes it starts.
    unsafe { std::env::set_var("TOLLGATE_TEST_MCP_SECRET_TOKEN", "mcp-canary-9f3") };
    let config = config_with(
        &root,
        &format!(
            "[agents.a.mcp.fx]\ncommand = {:?}\ntrusted = true\ntier = \"read-only\"\ntool_tiers = {{ die = \"high-risk\" }}\ntimeout_secs = 1\n[agents.a.mcp.broken]\ncommand = \"/nonexistent/mcp-server\"\n",
            fixture().display().to_string()
        ),
    );
    let servers = McpServers::new(Arc::new(config), "a", helper());
    let listing = servers.tools().await;
    let names: Vec<&str> = listing.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "mcp_fx_echo",
            "mcp_fx_add",
            "mcp_fx_fail",
            "mcp_fx_die",
            "mcp_fx_hang",
            "mcp_fx_env_probe",
            "mcp_fx_instance",
            "mcp_fx_read",
            "mcp_fx_link"
        ]
    );
    assert_eq!(listing.problems.len(), 1, "{:?}", listing.problems);
    assert!(
        listing.problems[0].contains("broken"),
        "{:?}",
        listing.problems
    );
    let tool = |name: &str| tool_in(&listing, name);
    assert_eq!(
        tool("mcp_fx_die").declaration.tier,
        tollgate::policy::tier::Tier::HighRisk
    );
    assert_eq!(
        tool("mcp_fx_echo").declaration.tier,
        tollgate::policy::tier::Tier::ReadOnly
    );

    let echoed = call(tool("mcp_fx_echo").as_ref(), json!({"x": [1, 2]})).await;
    assert_eq!(echoed.text, r#"{"x":[1,2]}"#);
    let added = call(tool("mcp_fx_add").as_ref(), json!({"a": 2, "b": 40})).await;
    assert_eq!(added.text, "42");
    let failed = call(tool("mcp_fx_fail").as_ref(), json!({})).await;
    assert!(failed.is_error && failed.text == "fixture failure");
    // The service's secrets never reach the server; HOME is the agent's workspace.
    let secret = call(
        tool("mcp_fx_env_probe").as_ref(),
        json!({"name": "TOLLGATE_TEST_MCP_SECRET_TOKEN"}),
    )
    .await;
    assert_eq!(secret.text, "<unset>");
    // HOME is the server's own directory, not the agent's workspace.
    let home = call(tool("mcp_fx_env_probe").as_ref(), json!({"name": "HOME"})).await;
    assert_eq!(home.text, root.join("ws/.mcp/fx").display().to_string());
    // A call that never answers times out; one that kills the server is an error result.
    let hung = call(tool("mcp_fx_hang").as_ref(), json!({})).await;
    assert!(
        hung.is_error && hung.text.contains("did not answer"),
        "{}",
        hung.text
    );
    let died = call(tool("mcp_fx_die").as_ref(), json!({})).await;
    assert!(died.is_error, "{}", died.text);
    let after = call(tool("mcp_fx_echo").as_ref(), json!({})).await;
    assert!(
        after.is_error,
        "a dead server's tools fail cleanly: {}",
        after.text
    );
    servers.shutdown().await;
}

/// One server serves every session of the agent, so it works in a directory of its own: it
/// cannot read a session's files, nor plant a link where another session's directory will be
/// (a session's file tools would then write where the planter reads).
#[tokio::test]
async fn a_server_cannot_reach_the_sessions_directories() {
    let dir = tempfile::tempdir().unwrap();
    let root = tollgate::policy::paths::canonical_root(dir.path());
    let config = fixture_config(&root);
    let agent = config.agents["a"].clone();
    let session_dir = tollgate::gate::workspace_for(&agent, Some("telegram:1"));
    std::fs::create_dir_all(&session_dir).unwrap();
    std::fs::write(session_dir.join("secret.txt"), "chat one's file").unwrap();
    let own = tollgate::tools::mcp::client::server_workspace(&agent, "fx");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::write(own.join("notes.txt"), "the server's own file").unwrap();
    let servers = McpServers::new(Arc::new(config), "a", helper());
    let listing = servers.tools().await;
    let tool = |name: &str| tool_in(&listing, name);
    let path = |p: &std::path::Path| json!({"path": p.display().to_string()});
    let mine = call(tool("mcp_fx_read").as_ref(), path(&own.join("notes.txt"))).await;
    assert_eq!(mine.text, "the server's own file", "{mine:?}");
    let theirs = call(
        tool("mcp_fx_read").as_ref(),
        path(&session_dir.join("secret.txt")),
    )
    .await;
    assert!(
        theirs.is_error && !theirs.text.contains("chat one"),
        "{theirs:?}"
    );
    let planted = tollgate::gate::workspace_for(&agent, Some("telegram:2"));
    let link = call(
        tool("mcp_fx_link").as_ref(),
        json!({"target": own.display().to_string(), "path": planted.display().to_string()}),
    )
    .await;
    assert!(link.is_error, "{link:?}");
    assert!(std::fs::symlink_metadata(&planted).is_err());
    servers.shutdown().await;
}

/// One server serves every session of the agent; when it exits, the next call starts it again
/// (the tools listed before reach the new process).
#[tokio::test]
async fn a_server_that_exits_is_started_again_for_every_session() {
    let dir = tempfile::tempdir().unwrap();
    let root = tollgate::policy::paths::canonical_root(dir.path());
    let config = fixture_config(&root);
    let servers = McpServers::new(Arc::new(config), "a", helper());
    let first = servers.tools().await;
    let second = servers.tools().await;
    let tool = tool_in;
    // Two listings (two sessions) reach one process.
    let a = call(tool(&first, "mcp_fx_instance").as_ref(), json!({})).await;
    let b = call(tool(&second, "mcp_fx_instance").as_ref(), json!({})).await;
    assert!(!a.is_error, "{}", a.text);
    assert_eq!(a.text, b.text, "one process for both");
    let died = call(tool(&first, "mcp_fx_die").as_ref(), json!({})).await;
    assert!(died.is_error, "{}", died.text);
    // The other session's next call starts it again.
    let after = call(tool(&second, "mcp_fx_echo").as_ref(), json!({"x": 1})).await;
    assert!(!after.is_error, "{}", after.text);
    let again = call(tool(&first, "mcp_fx_instance").as_ref(), json!({})).await;
    assert!(!again.is_error, "{}", again.text);
    assert_ne!(a.text, again.text, "a new process");
    servers.shutdown().await;
}

#[tokio::test]
async fn a_policy_key_naming_no_listed_tool_withholds_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let root = tollgate::policy::paths::canonical_root(dir.path());
    let config = config_with(
        &root,
        &format!(
            "[agents.a.tool_approval]\nmcp_fx_ech0 = \"deny\"\n[agents.a.mcp.fx]\ncommand = {:?}\n",
            fixture().display().to_string()
        ),
    );
    let servers = McpServers::new(Arc::new(config), "a", helper());
    let listing = servers.tools().await;
    assert!(listing.tools.is_empty());
    assert_eq!(listing.problems.len(), 1);
    assert!(
        listing.problems[0].contains("`mcp_fx_ech0`"),
        "{}",
        listing.problems[0]
    );
    servers.shutdown().await;
}

/// A `tool_tiers` key that names no listed tool is a typo that leaves the real tool at the
/// server's (here lower) tier: the server's tools are withheld until it is fixed.
#[tokio::test]
async fn a_tool_tier_naming_no_listed_tool_withholds_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let root = tollgate::policy::paths::canonical_root(dir.path());
    let config = config_with(
        &root,
        &format!(
            "[agents.a.mcp.fx]\ncommand = {:?}\ntrusted = true\ntier = \"read-only\"\ntool_tiers = {{ dei = \"high-risk\" }}\n",
            fixture().display().to_string()
        ),
    );
    let servers = McpServers::new(Arc::new(config), "a", helper());
    let listing = servers.tools().await;
    let names: Vec<&str> = listing.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.is_empty(), "{names:?}");
    assert_eq!(listing.problems.len(), 1, "{:?}", listing.problems);
    assert!(
        listing.problems[0].contains("`tool_tiers.dei`") && listing.problems[0].contains("die"),
        "{}",
        listing.problems[0]
    );
    servers.shutdown().await;
}

/// Where `.ci/run` installs the npm server.
fn npm_server() -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    path.exists().then_some(path)
}

#[tokio::test]
async fn the_npm_filesystem_server_works_sandboxed() {
    let Some(server) = npm_server() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install the npm MCP server (.ci/run does: npm install into target/npm)"
        );
        eprintln!("SKIPPED: run .ci/run (or its npm install line) to test the npm MCP server");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = tollgate::policy::paths::canonical_root(dir.path());
    // The server's own directory (it serves every session, so not the agent's workspace).
    let served = root.join("ws/.mcp/fs");
    std::fs::create_dir_all(&served).unwrap();
    std::fs::write(served.join("hello.txt"), "hi from the workspace").unwrap();
    let modules = server.ancestors().nth(4).unwrap().to_path_buf();
    let config = config_with(
        &root,
        &format!(
            "[agents.a.mcp.fs]\ncommand = \"node\"\nargs = [{:?}, {:?}]\ncwd = {:?}\n",
            server.display().to_string(),
            served.display().to_string(),
            modules.display().to_string(),
        ),
    );
    let servers = McpServers::new(Arc::new(config), "a", helper());
    let listing = servers.tools().await;
    assert!(listing.problems.is_empty(), "{:?}", listing.problems);
    let names: Vec<&str> = listing.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"mcp_fs_list_directory"), "{names:?}");
    let tool = |name: &str| tool_in(&listing, name);
    let listed = call(
        tool("mcp_fs_list_directory").as_ref(),
        json!({"path": served.display().to_string()}),
    )
    .await;
    assert!(
        !listed.is_error && listed.text.contains("hello.txt"),
        "{}",
        listed.text
    );
    let read = call(
        tool("mcp_fs_read_text_file").as_ref(),
        json!({"path": served.join("hello.txt").display().to_string()}),
    )
    .await;
    assert_eq!(read.text, "hi from the workspace");
    // The server's own rule and the sandbox both keep it to its directory.
    let outside = call(
        tool("mcp_fs_read_text_file").as_ref(),
        json!({"path": "/etc/hostname"}),
    )
    .await;
    assert!(outside.is_error, "{}", outside.text);
    servers.shutdown().await;
}
