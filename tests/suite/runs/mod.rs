//! Durable runs: a multi-step turn, a crash while a call waits for approval (resumed: it runs
//! once and the run finishes), a crash while a call runs (resumed: reported as interrupted,
//! never run again), and the round cap. This module holds the world (config and store) and
//! `runner`, a fresh process's view over it; the scenarios live in its submodules.

mod assembled;
mod crashes;
mod turns;

use crate::suite::fakes::llm::FakeLlm;
use crate::suite::observed::Observed;
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tollgate::agent::llm::OpenAiProvider;
use tollgate::agent::runner::AgentRunner;
use tollgate::agent::runs::{RunJournal, RunStore};
use tollgate::config::{self, Config};
use tollgate::events::MemoryEvents;
use tollgate::executor::approval::Approver;
use tollgate::executor::session::{SessionPolicy, Snapshot};
use tollgate::executor::{Executor, NoClassifier};
use tollgate::policy::mode::Dials;
use tollgate::sandbox::ShellRunner;
use tollgate::store::Store;
use tollgate::tools::{ToolRegistry, Toolset};

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    config: Config,
    store: Arc<Observed>,
}

fn world(extra: &str) -> World {
    let dir = tempfile::tempdir().unwrap();
    let root = tollgate::policy::paths::canonical_root(dir.path());
    let text = format!(
        "[store]\npath = \"store\"\n[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\ntools = [\"read_file\", \"write_file\", \"execute_command\"]\nworkspace = \"ws\"\n{extra}\n"
    );
    let file = root.join("tollgate.toml");
    std::fs::write(&file, &text).unwrap();
    let config = config::load_with_env(Some(file), Some(&text), HashMap::new()).unwrap();
    std::fs::create_dir_all(root.join("ws/console_op")).unwrap();
    World {
        _dir: dir,
        root,
        config,
        store: Arc::new(Observed::default()),
    }
}

/// A fresh process's view: a new executor, journal and runner over the same store.
fn runner(
    w: &World,
    llm: &FakeLlm,
    approver: Arc<dyn Approver>,
) -> (AgentRunner, Arc<SessionPolicy>) {
    let agent = &w.config.agents["a"];
    let runs = RunStore::new(w.store.clone() as Arc<dyn Store>);
    let journal = Arc::new(RunJournal::new(runs.clone()));
    let executor = Arc::new(
        Executor::new(
            Arc::new(w.config.clone()),
            Arc::new(ToolRegistry::builtin()),
            Toolset::for_agent(agent, std::iter::empty()),
            ShellRunner::new(PathBuf::from(env!("CARGO_BIN_EXE_tollgate"))),
            approver,
            Arc::new(NoClassifier),
            Arc::new(MemoryEvents::default()),
        )
        .with_store(w.store.clone() as Arc<dyn Store>)
        .with_journal(journal.clone())
        .with_max_concurrent(10),
    );
    let session = Arc::new(SessionPolicy::new(
        "console:op",
        "a",
        agent.sandbox,
        Snapshot {
            dials: Dials {
                mode: agent.approval,
                sandbox: agent.sandbox,
            },
            tool_allowlist: BTreeSet::new(),
            command_allowlist: BTreeSet::new(),
        },
        None,
    ));
    let runner = AgentRunner {
        runs,
        journal,
        executor,
        provider: Arc::new(
            OpenAiProvider::new(&llm.url, None, Duration::from_secs(10), 1).unwrap(),
        ),
        agent: "a".into(),
        model: "m".into(),
        system_prompt: "system".into(),
        max_rounds: agent.max_rounds,
        max_tokens: None,
        classifier_usage: None,
        staged_for: tollgate::agent::runner::STAGED_FOR,
    };
    (runner, session)
}

fn ws(w: &World, rel: &str) -> PathBuf {
    w.root.join("ws/console_op").join(rel)
}
