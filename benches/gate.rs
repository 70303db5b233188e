//! The gate's full decision for one call, as `evaluate` runs it: propose (lex and judge the
//! command, or resolve the path with its symlinks) then the resolution order. A baseline that
//! only parses the call's JSON arguments runs in the same process, so figures can be read as
//! ratios on a noisy machine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use tollgate::config;
use tollgate::gate::{Evaluation, evaluate, roots_for, workspace_for};
use tollgate::policy::mode::Dials;
use tollgate::policy::resolve::GateContext;
use tollgate::tools::{ProposeContext, ToolRegistry, Toolset};

/// A realistic compound command of about 1 KB.
fn compound_command() -> String {
    let unit = "cd src && grep -rn 'TODO' . | sort | uniq -c | head -n 20; ls -la build/ 2>/dev/null && cat Cargo.toml | grep -E '^(name|version)' ; for f in *.rs; do wc -l \"$f\"; done\n";
    let mut command = String::new();
    while command.len() < 1024 {
        command.push_str(unit);
    }
    command.truncate(1024);
    // End on a whole segment so it lexes.
    let cut = command.rfind('\n').unwrap();
    command.truncate(cut);
    command
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = tollgate::policy::paths::canonical_root(dir.path());
    std::fs::create_dir_all(root.join("ws/console_bench/src/deep/er")).unwrap();
    std::fs::write(
        root.join("ws/console_bench/src/deep/er/main.rs"),
        "fn main() {}",
    )
    .unwrap();
    let text = r#"
[store]
path = "store"
[providers.p]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
[agents.a]
provider = "p"
model = "m"
tools = ["read_file", "execute_command"]
workspace = "ws"
readable_roots = ["/usr/share"]
"#;
    let file = root.join("tollgate.toml");
    std::fs::write(&file, text).unwrap();
    let config = config::load_with_env(Some(file), Some(text), HashMap::new()).unwrap();
    let agent = &config.agents["a"];
    let registry = ToolRegistry::builtin();
    let toolset = Toolset::for_agent(agent, std::iter::empty());
    let workspace = workspace_for(agent, Some("console:bench"));
    let roots = roots_for(&config, agent, &workspace);
    let tool_allowlist = BTreeSet::new();
    let command_allowlist = BTreeSet::new();
    let ctx = GateContext {
        agent_name: "a",
        agent,
        dials: Dials {
            mode: agent.approval,
            sandbox: agent.sandbox,
        },
        roots: &roots,
        tool_allowlist: &tool_allowlist,
        command_allowlist: &command_allowlist,
        support: tollgate::sandbox::probe(),
    };
    let propose = ProposeContext {
        workspace,
        prefix_binaries: agent.prefix_binaries.clone(),
        roots: roots.clone(),
        sandbox: ctx.dials.sandbox,
        companions: Default::default(),
    };

    let command = compound_command();
    assert!((900..=1024).contains(&command.len()), "{}", command.len());
    let shell_args = json!({ "command": command });
    // The shape that took exponential time before: a secret directory and a few dozen stars.
    let glob_args = json!({ "command": format!("cat /etc/{}x", "*".repeat(40)) });
    let read_args = json!({ "path": "src/deep/er/main.rs" });
    // The decision must be a real one, not an early error.
    for (tool, args) in [
        ("execute_command", &shell_args),
        ("execute_command", &glob_args),
        ("read_file", &read_args),
    ] {
        match evaluate(&ctx, &toolset, &registry, &propose, tool, args) {
            Evaluation::Refused(r) => panic!("{tool}: refused: {r:?}"),
            Evaluation::Decided { decision, .. } => {
                eprintln!("{tool}: {} ({})", decision.decision, decision.reason_code)
            }
            Evaluation::Classify { .. } => eprintln!("{tool}: classifier's turn"),
        }
    }
    let shell_json = shell_args.to_string();

    let mut group = c.benchmark_group("gate");
    group.bench_function("baseline_parse_args_json_1kb", |b| {
        b.iter(|| black_box(serde_json::from_str::<Value>(black_box(&shell_json)).unwrap()))
    });
    group.bench_function("execute_command_1kb_compound", |b| {
        b.iter(|| {
            black_box(evaluate(
                &ctx,
                &toolset,
                &registry,
                &propose,
                "execute_command",
                black_box(&shell_args),
            ))
        })
    });
    group.bench_function("execute_command_pathological_glob", |b| {
        b.iter(|| {
            black_box(evaluate(
                &ctx,
                &toolset,
                &registry,
                &propose,
                "execute_command",
                black_box(&glob_args),
            ))
        })
    });
    group.bench_function("read_file_with_path_resolution", |b| {
        b.iter(|| {
            black_box(evaluate(
                &ctx,
                &toolset,
                &registry,
                &propose,
                "read_file",
                black_box(&read_args),
            ))
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
