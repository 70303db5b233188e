//! The store's hot paths read only what they need, however much history the store holds:
//! counted with a store that tallies every record it hands out, over 10,000 settled approvals
//! and 10,000 finished runs.

use crate::suite::observed::Observed;
use std::collections::HashMap;
use std::sync::Arc;
use tollgate::agent::runs::{RunPhase, RunRecord, RunStore};
use tollgate::approvals::{
    ApprovalChoice, ApprovalToken, PendingApproval, PendingApprovals, PendingState,
};
use tollgate::store::{MemoryStore, Store};
use tollgate_surface::{CardRef, ChatRef, Platform};

const HISTORY: usize = 10_000;

fn approval(token: &ApprovalToken, n: usize, expires: u64) -> PendingApproval {
    PendingApproval {
        token: token.to_string(),
        session: format!("telegram:{}", n % 97),
        call_id: format!("c{n}"),
        agent: "a".into(),
        tool: "write_file".into(),
        posted: 1_000,
        expires,
        choices: vec![ApprovalChoice::Approve, ApprovalChoice::Deny],
        state: PendingState::Waiting,
        run: format!("run{n}"),
        chat: None,
        card: None,
        posted_to: Vec::new(),
        options: Vec::new(),
        asked: String::new(),
    }
}

/// A run running tools: `calls` (all `execute_command`, proposed).
fn run_with_calls(id: &str, calls: &[&str]) -> RunRecord {
    use tollgate::agent::llm::ToolCall;
    use tollgate::agent::runs::{CallRecord, CallState};
    let mut record = run(id, RunPhase::RunningTools);
    record.calls = calls
        .iter()
        .map(|id| CallRecord {
            call: ToolCall {
                id: (*id).into(),
                name: "execute_command".into(),
                arguments: "{}".into(),
            },
            state: CallState::Proposed,
        })
        .collect();
    record
}

fn run(id: &str, phase: RunPhase) -> RunRecord {
    RunRecord {
        requester: None,
        id: id.into(),
        session: "telegram:1".into(),
        agent: "a".into(),
        round: 1,
        phase,
        calls: Vec::new(),
        usage: Default::default(),
        transcript_len: None,
        message: None,
    }
}

#[test]
fn a_prompt_a_card_edit_and_the_expiry_sweep_read_only_what_they_need() {
    let store = Arc::new(Observed::default());
    let approvals = PendingApprovals::new(store.clone());
    for n in 0..HISTORY {
        let token = ApprovalToken::generate().unwrap();
        approvals.create(&approval(&token, n, 1_600)).unwrap();
        approvals
            .settle(
                &token,
                PendingState::Withdrawn {
                    outcome: "allowed".into(),
                },
            )
            .unwrap();
    }
    let runs = RunStore::new(store.clone());
    for n in 0..HISTORY {
        runs.save(&run(&format!("old{n}"), RunPhase::AskingModel))
            .unwrap();
        runs.save(&run(
            &format!("old{n}"),
            RunPhase::Finished {
                answer: "done".into(),
            },
        ))
        .unwrap();
    }
    store.reset();

    // A prompt: its record is created, and a resumed run looks its card up by call.
    let token = ApprovalToken::generate().unwrap();
    let fresh = approval(&token, HISTORY, 2_000);
    approvals.create(&fresh).unwrap();
    let found = approvals
        .for_call(&fresh.session, &fresh.run, &fresh.call_id)
        .unwrap();
    assert_eq!(found.as_ref().map(|r| &r.token), Some(&fresh.token));
    assert!(store.take("approvals") <= 2, "a prompt read too much");

    // A card edit: where it was posted.
    let at = CardRef {
        chat: ChatRef::private(Platform::Telegram, 5),
        message_id: 9,
    };
    approvals.set_posted(&token, &[at]).unwrap();
    assert!(store.take("approvals") <= 2, "a card edit read too much");

    // The expiry sweep, before and at the fresh card's deadline.
    assert!(approvals.expire_due(1_999).unwrap().is_empty());
    assert_eq!(store.take("approvals"), 0);
    let expired = approvals.expire_due(2_000).unwrap();
    assert_eq!(expired.len(), 1);
    let read = store.take("approvals");
    assert!(read <= 3, "the expiry sweep read {read} approvals");
    // Only the due head of the waiting index is read: nothing before the deadline, the one
    // card at it, and nothing of the settled history.
    assert_eq!(store.take("approvals_waiting"), 1);

    // The waiting cards after a restart, and the open runs: only the live ones are read.
    assert!(approvals.waiting().unwrap().is_empty());
    runs.save(&run("live", RunPhase::RunningTools)).unwrap();
    store.reset();
    let open = runs.open_runs().unwrap();
    assert_eq!(
        open.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["live"]
    );
    assert_eq!(store.take("runs"), 1);
}

#[test]
fn a_store_written_before_the_indexes_is_indexed_once_and_stale_entries_are_dropped() {
    let store = Arc::new(MemoryStore::new());
    // Records written the old way: no index entries.
    let token = ApprovalToken::generate().unwrap();
    let old = approval(&token, 1, 1_600);
    store
        .insert(
            "approvals",
            old.token.as_bytes(),
            &serde_json::to_vec(&old).unwrap(),
        )
        .unwrap();
    store
        .insert(
            "runs",
            b"r-old",
            &serde_json::to_vec(&run("r-old", RunPhase::AskingModel)).unwrap(),
        )
        .unwrap();
    PendingApprovals::index_existing(store.as_ref()).unwrap();
    let approvals = PendingApprovals::new(store.clone());
    assert_eq!(approvals.waiting().unwrap(), vec![old.clone()]);
    assert_eq!(
        approvals
            .for_call(&old.session, &old.run, &old.call_id)
            .unwrap(),
        Some(old.clone())
    );
    let runs = RunStore::new(store.clone());
    runs.index_existing().unwrap();
    assert_eq!(runs.open_runs().unwrap().len(), 1);

    // A kill between a record's settle and its index removal leaves a stale entry: it is read
    // once, found settled, and dropped.
    let settled = PendingApproval {
        state: PendingState::TimedOut,
        ..old.clone()
    };
    store
        .insert(
            "approvals",
            old.token.as_bytes(),
            &serde_json::to_vec(&settled).unwrap(),
        )
        .unwrap();
    assert!(approvals.waiting().unwrap().is_empty());
    assert!(
        store
            .scan_prefix("approvals_waiting", b"")
            .unwrap()
            .is_empty()
    );
    assert!(approvals.expire_due(u64::MAX).unwrap().is_empty());
}

#[test]
fn retention_prunes_what_is_older_than_the_window_and_keeps_what_is_live() {
    use tollgate::agent::llm::{ChatMessage, Role};
    use tollgate::events::{Event, EventKind, EventSink, StoreEvents};
    let dir = tempfile::tempdir().unwrap();
    let root = tollgate::policy::paths::canonical_root(dir.path());
    let toml = "[store]\npath = \"store\"\nprune_workspaces = true\n[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\nworkspace = \"ws\"\n";
    let file = root.join("tollgate.toml");
    std::fs::write(&file, toml).unwrap();
    let config = tollgate::config::load_with_env(Some(file), Some(toml), HashMap::new()).unwrap();
    assert_eq!(config.store.retain_days, 30);
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let approvals = PendingApprovals::new(store.clone());
    let runs = RunStore::new(store.clone());

    // The past: a settled card, a finished run with its session's transcript, dials and
    // workspace, a stored result, an audit event.
    let settled = ApprovalToken::generate().unwrap();
    approvals.create(&approval(&settled, 1, 1_600)).unwrap();
    approvals.settle(&settled, PendingState::TimedOut).unwrap();
    let mut finished = run(
        "done-run",
        RunPhase::Finished {
            answer: "ok".into(),
        },
    );
    finished.session = "telegram:7".into();
    runs.save(&finished).unwrap();
    runs.save_transcript("telegram:7", &[ChatMessage::new(Role::User, "hi")])
        .unwrap();
    store.insert("session_dials", b"telegram:7", b"{}").unwrap();
    // The session's own bookkeeping goes with it; the agent's memory stays.
    store.insert("todos", b"telegram:7", b"[]").unwrap();
    store
        .insert("memory", b"session\0telegram:7\0k", b"mine")
        .unwrap();
    store
        .insert("memory", b"agent\0a\0k", b"the agent's")
        .unwrap();
    tollgate::store::Allowlists::new(store.clone())
        .add_tool(&tollgate::store::ToolEntry {
            session: "telegram:7".into(),
            tool: "write_file".into(),
            by: "admin".into(),
            at: "then".into(),
        })
        .unwrap();
    // A session that never finished a run, whose dials an admin set: dated all the same.
    store.insert("session_dials", b"telegram:9", b"{}").unwrap();
    runs.note_activity("telegram:9", "a", tollgate::clock::now_secs())
        .unwrap();
    let workspace = made_workspace(&config, "telegram_7");
    tollgate::tools::builtin::store_result(store.as_ref(), "telegram:7", "c1", "big").unwrap();
    StoreEvents::new(store.clone(), None).record(Event {
        kind: EventKind::RunCompleted,
        session: "telegram:7".into(),
        run: Some("done-run".into()),
        call_id: String::new(),
        tool: String::new(),
        fields: serde_json::json!({}),
    });
    // An "Approve all" row that was used, and one still on screen.
    let bulks = tollgate::approvals::BulkApprovals::new(store.clone());
    let (used_row, live_row) = (bulk_row(&bulks), bulk_row(&bulks));
    assert!(matches!(
        bulks.take(&used_row).unwrap(),
        tollgate::approvals::Taken::Row(_)
    ));
    // What is live whatever its age: a waiting card and an open run (its session is kept).
    let waiting = ApprovalToken::generate().unwrap();
    approvals.create(&approval(&waiting, 2, u64::MAX)).unwrap();
    let mut open = run("open-run", RunPhase::RunningTools);
    open.session = "telegram:8".into();
    runs.save(&open).unwrap();
    runs.save_transcript("telegram:8", &[ChatMessage::new(Role::User, "still here")])
        .unwrap();
    // Dated as old as the others: only its open run keeps it.
    runs.note_activity("telegram:8", "a", tollgate::clock::now_secs())
        .unwrap();
    // The idle session 9's directory is a link to the live session's: only the link goes.
    let live_workspace = made_workspace(&config, "telegram_8");
    std::fs::write(live_workspace.join("kept.txt"), "live").unwrap();
    let planted = config.agents["a"]
        .workspace
        .clone()
        .unwrap()
        .join("telegram_9");
    std::os::unix::fs::symlink(&live_workspace, &planted).unwrap();

    let now = tollgate::clock::now_secs();
    let day = 86_400;
    // Inside the window nothing goes.
    let early = tollgate::retention::prune(&store, &config, now + 29 * day).unwrap();
    assert!(early.is_empty(), "{early:?}");
    // Past it, everything of the past goes, and nothing live.
    let report = tollgate::retention::prune(&store, &config, now + 31 * day).unwrap();
    assert_eq!(
        (
            report.approvals,
            report.rows,
            report.runs,
            report.results,
            report.events,
            report.workspaces
        ),
        (1, 1, 1, 1, 1, 1),
        "{report:?}"
    );
    assert!(bulks.get(&used_row).unwrap().is_none());
    assert!(bulks.get(&live_row).unwrap().is_some(), "a live row stays");
    let mut sessions: Vec<&str> = report.sessions.iter().map(|s| s.session.as_str()).collect();
    sessions.sort_unstable();
    assert_eq!(sessions, ["telegram:7", "telegram:9"]);
    assert!(store.get("session_dials", b"telegram:9").unwrap().is_none());
    assert!(store.get("todos", b"telegram:7").unwrap().is_none());
    assert!(
        store
            .get("memory", b"session\0telegram:7\0k")
            .unwrap()
            .is_none()
    );
    assert!(store.get("memory", b"agent\0a\0k").unwrap().is_some());
    assert!(
        tollgate::store::Allowlists::new(store.clone())
            .tools("telegram:7")
            .unwrap()
            .is_empty()
    );
    assert!(approvals.get(&settled).unwrap().is_none());
    assert_eq!(approvals.waiting().unwrap().len(), 1);
    assert!(runs.load("done-run").unwrap().is_none());
    assert_eq!(runs.open_runs().unwrap().len(), 1);
    assert!(runs.transcript("telegram:7").unwrap().is_empty());
    assert_eq!(runs.transcript("telegram:8").unwrap().len(), 1);
    assert!(store.get("session_dials", b"telegram:7").unwrap().is_none());
    assert!(!workspace.exists());
    assert!(
        std::fs::symlink_metadata(&planted).is_err(),
        "the link went"
    );
    assert_eq!(
        std::fs::read_to_string(live_workspace.join("kept.txt")).unwrap(),
        "live"
    );
    assert!(
        StoreEvents::read(store.as_ref(), None, None)
            .unwrap()
            .is_empty()
    );
    // A second pass finds nothing more.
    assert!(
        tollgate::retention::prune(&store, &config, now + 31 * day)
            .unwrap()
            .is_empty()
    );
}

/// Without `prune_workspaces`, a session idle past the window loses its transcript, and its
/// workspace stays where it was (files a user may still want).
#[test]
fn an_idle_sessions_workspace_is_kept_by_default() {
    use tollgate::agent::llm::{ChatMessage, Role};
    let dir = tempfile::tempdir().unwrap();
    let root = tollgate::policy::paths::canonical_root(dir.path());
    let config = config_in(&root, "[store]\npath = \"store\"\n");
    assert!(
        !config.store.prune_workspaces,
        "the default keeps workspaces"
    );
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let runs = RunStore::new(store.clone());
    runs.save_transcript("telegram:7", &[ChatMessage::new(Role::User, "hi")])
        .unwrap();
    let now = tollgate::clock::now_secs();
    runs.note_activity("telegram:7", "a", now).unwrap();
    let workspace = made_workspace(&config, "telegram_7");
    std::fs::write(workspace.join("notes.txt"), "mine").unwrap();

    let report = tollgate::retention::prune(&store, &config, now + 31 * 86_400).unwrap();
    let sessions: Vec<&str> = report.sessions.iter().map(|s| s.session.as_str()).collect();
    assert_eq!(sessions, ["telegram:7"], "{report:?}");
    assert!(runs.transcript("telegram:7").unwrap().is_empty());
    assert_eq!(report.workspaces, 0, "{report:?}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes.txt")).unwrap(),
        "mine"
    );
}

/// Agent `a`'s directory for the session whose directory name is `name`, made.
fn made_workspace(config: &tollgate::config::Config, name: &str) -> std::path::PathBuf {
    let workspace = config.agents["a"].workspace.clone().unwrap().join(name);
    std::fs::create_dir_all(&workspace).unwrap();
    workspace
}

/// A config file in `dir`: `extra` and one agent `a` on a provider nobody calls.
pub(crate) fn config_in(dir: &std::path::Path, extra: &str) -> tollgate::config::Config {
    let toml = format!(
        "{extra}[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\n"
    );
    let file = dir.join("tollgate.toml");
    std::fs::write(&file, &toml).unwrap();
    tollgate::config::load_with_env(Some(file), Some(&toml), HashMap::new()).unwrap()
}

/// A new "Approve all" row over two cards.
pub(crate) fn bulk_row(bulks: &tollgate::approvals::BulkApprovals) -> ApprovalToken {
    let token = ApprovalToken::generate().unwrap();
    bulks
        .create(&tollgate::approvals::BulkApproval {
            token: token.to_string(),
            cards: vec!["t1".into(), "t2".into()],
            tools: vec!["shell".into(), "shell".into()],
            posted_to: None,
            used: false,
            replaced: false,
        })
        .unwrap();
    token
}

#[test]
fn a_store_written_before_the_age_indexes_is_dated_at_the_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path(), "[store]\npath = \"store\"\n");
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    // One of each kind retention deletes by age, written as this version writes it...
    let approvals = PendingApprovals::new(store.clone());
    let settled = ApprovalToken::generate().unwrap();
    approvals.create(&approval(&settled, 1, 1_600)).unwrap();
    approvals.settle(&settled, PendingState::TimedOut).unwrap();
    let bulks = tollgate::approvals::BulkApprovals::new(store.clone());
    let row = bulk_row(&bulks);
    bulks.retire(&row).unwrap();
    let runs = RunStore::new(store.clone());
    runs.save(&run(
        "old-run",
        RunPhase::Finished {
            answer: "ok".into(),
        },
    ))
    .unwrap();
    tollgate::tools::builtin::store_result(store.as_ref(), "telegram:1", "c1", "big").unwrap();
    // ...then stripped of their age index entries, as an older tollgate left them.
    let indexes = [
        "approvals_settled",
        "approval_bulks_done",
        "runs_finished",
        "tool_results_aged",
    ];
    for index in indexes {
        let entries = store.scan_prefix(index, b"").unwrap();
        assert_eq!(entries.len(), 1, "{index} dates its record");
        store.remove(index, &entries[0].0).unwrap();
    }
    let day = 86_400;
    let upgraded = tollgate::clock::now_secs() + 100 * day;
    let nothing = tollgate::retention::prune(&store, &config, upgraded + 31 * day).unwrap();
    assert_eq!(
        (
            nothing.approvals,
            nothing.rows,
            nothing.runs,
            nothing.results,
            nothing.events
        ),
        (0, 0, 0, 0, 0),
        "undated records are never pruned: {nothing:?}"
    );

    tollgate::retention::date_undated(&store, upgraded).unwrap();
    for index in indexes {
        assert_eq!(store.scan_prefix(index, b"").unwrap().len(), 1, "{index}");
    }
    // Once: a second opening dates nothing more (its marker says it ran).
    tollgate::retention::date_undated(&store, upgraded + day).unwrap();
    assert_eq!(store.scan_prefix("runs_finished", b"").unwrap().len(), 1);
    // They carry no time of their own: kept retain_days from the upgrade.
    let early = tollgate::retention::prune(&store, &config, upgraded + 29 * day).unwrap();
    assert_eq!(
        (
            early.approvals,
            early.rows,
            early.runs,
            early.results,
            early.events
        ),
        (0, 0, 0, 0, 0),
        "{early:?}"
    );
    let report = tollgate::retention::prune(&store, &config, upgraded + 31 * day).unwrap();
    assert_eq!(
        (
            report.approvals,
            report.rows,
            report.runs,
            report.results,
            report.events
        ),
        (1, 1, 1, 1, 0),
        "{report:?}"
    );
}

/// An event as an older tollgate stored it: keyed by session, with a date index entry (or,
/// older still, without one).
fn old_layout_event(store: &dyn Store, session: &str, ts: &str, dated: Option<u64>) {
    let key = format!("{session}\0{ts}\0000000000001");
    let event = serde_json::json!({"ts": ts, "session": session, "type": "run_completed"});
    store
        .insert("events", key.as_bytes(), event.to_string().as_bytes())
        .unwrap();
    if let Some(at) = dated {
        let index = tollgate::store::aged::key(at, key.as_bytes());
        store.insert("events_aged", &index, b"").unwrap();
    }
}

#[test]
fn events_stored_by_session_are_moved_into_time_order_and_keep_their_time() {
    use tollgate::events::{EVENTS_TREE, StoreEvents};
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path(), "[store]\npath = \"store\"\n");
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let day = 86_400;
    // 2026-01-01T00:00:00Z and ten days later.
    let (first, later) = (1_767_225_600_u64, 1_767_225_600_u64 + 10 * day);
    old_layout_event(
        store.as_ref(),
        "telegram:1",
        "2026-01-01T00:00:00.000Z",
        Some(first),
    );
    old_layout_event(
        store.as_ref(),
        "telegram:2",
        "2026-01-11T00:00:00.000Z",
        None,
    );
    old_layout_event(store.as_ref(), "telegram:1", "not a time", None);
    let upgraded = later + 100 * day;
    assert_eq!(
        StoreEvents::move_into_time_order(store.as_ref(), upgraded).unwrap(),
        3
    );
    assert!(store.scan_prefix("events", b"").unwrap().is_empty());
    assert!(store.scan_prefix("events_aged", b"").unwrap().is_empty());
    let moved: Vec<u64> = store
        .scan_prefix(EVENTS_TREE, b"")
        .unwrap()
        .iter()
        .map(|(k, _)| tollgate::store::aged::time_of(k).unwrap())
        .collect();
    assert_eq!(
        moved,
        vec![first, later, upgraded],
        "each at its own time, else now"
    );
    let one: Vec<String> = StoreEvents::read(store.as_ref(), Some("telegram:1"), None)
        .unwrap()
        .into_iter()
        .map(|e| e.ts)
        .collect();
    assert_eq!(one, vec!["2026-01-01T00:00:00.000Z", "not a time"]);

    // Nothing left: the next opening moves nothing. An event an older binary wrote after a
    // downgrade is moved at the next opening too.
    assert_eq!(
        StoreEvents::move_into_time_order(store.as_ref(), upgraded).unwrap(),
        0
    );
    old_layout_event(
        store.as_ref(),
        "telegram:3",
        "2026-01-01T00:00:00.000Z",
        None,
    );
    assert_eq!(
        StoreEvents::move_into_time_order(store.as_ref(), upgraded).unwrap(),
        1
    );
    assert!(store.scan_prefix("events", b"").unwrap().is_empty());

    // Retention goes by each event's own time.
    let at = |now: u64| {
        tollgate::retention::prune(&store, &config, now)
            .unwrap()
            .events
    };
    assert_eq!(at(first + 29 * day), 0);
    assert_eq!(at(first + 31 * day), 2, "the first two, 31 days on");
    assert_eq!(at(later + 31 * day), 1, "the next");
    assert_eq!(
        StoreEvents::read(store.as_ref(), None, None).unwrap().len(),
        1
    );
}

#[test]
fn events_are_read_by_session_and_since_a_time_in_time_order() {
    use tollgate::events::{Event, EventKind, EventSink, StoreEvents};
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let events = StoreEvents::new(store.clone(), None);
    let before = tollgate::clock::now_rfc3339_millis();
    for (session, tool) in [
        ("telegram:1", "a"),
        ("telegram:10", "b"),
        ("telegram:1", "c"),
    ] {
        events.record(Event {
            kind: EventKind::ToolProposed,
            session: session.into(),
            run: None,
            call_id: String::new(),
            tool: tool.into(),
            fields: serde_json::json!({}),
        });
    }
    let tools = |session: Option<&str>, since: Option<&str>| -> Vec<String> {
        StoreEvents::read(store.as_ref(), session, since)
            .unwrap()
            .into_iter()
            .map(|e| e.tool)
            .collect()
    };
    // Two recorders (serve has one per session worker) in one millisecond: both kept, in order.
    let other = StoreEvents::new(store.clone(), None);
    for (recorder, tool) in [(&events, "d"), (&other, "e"), (&events, "f")] {
        recorder.record(Event {
            kind: EventKind::ToolProposed,
            session: "telegram:2".into(),
            run: None,
            call_id: String::new(),
            tool: tool.into(),
            fields: serde_json::json!({}),
        });
    }
    assert_eq!(tools(Some("telegram:2"), None), vec!["d", "e", "f"]);
    // `telegram:1` is a prefix of `telegram:10`'s name, not of its events.
    assert_eq!(tools(Some("telegram:1"), None), vec!["a", "c"]);
    assert_eq!(tools(Some("telegram:10"), None), vec!["b"]);
    assert_eq!(
        tools(None, Some(&before)),
        vec!["a", "b", "c", "d", "e", "f"]
    );
    assert!(tools(None, Some("2999-01-01T00:00:00Z")).is_empty());
    // One write an event: no index beside it.
    assert_eq!(
        store
            .scan_prefix(tollgate::events::EVENTS_TREE, b"")
            .unwrap()
            .len(),
        6
    );
    assert!(store.scan_prefix("events_aged", b"").unwrap().is_empty());
    // At or after, by time: an event at 10:00:00.500 is after 10:00:00 (as text, `.` sorts
    // before `Z`), and the same instant written with other digits is the same time.
    for (session, ts) in [
        ("telegram:5", "2026-11-21T10:00:00.500Z"),
        ("telegram:6", "2026-11-21T09:59:59.999Z"),
    ] {
        let key = tollgate::store::aged::key(
            1_795_255_200,
            format!("{session}\0{ts}\0000000000009").as_bytes(),
        );
        let event = serde_json::json!({"ts": ts, "session": session, "type": "tool_proposed", "tool": session});
        store
            .put(
                tollgate::events::EVENTS_TREE,
                &key,
                event.to_string().as_bytes(),
            )
            .unwrap();
    }
    let at_ten = |since: &str| {
        tools(Some("telegram:5"), Some(since)).len() + tools(Some("telegram:6"), Some(since)).len()
    };
    assert_eq!(at_ten("2026-11-21T10:00:00Z"), 1);
    assert_eq!(at_ten("2026-11-21T10:00:00.5Z"), 1);
    assert_eq!(at_ten("2026-11-21T10:00:00.500Z"), 1);
    assert_eq!(at_ten("2026-11-21T10:00:00.501Z"), 0);
    assert_eq!(at_ten("2026-11-21T09:59:59.999Z"), 2);
}

/// The executor's journal writes each step of a call under the call's own key: the run record
/// (every call of the run, the model's arguments included) is not rewritten at each step.
#[tokio::test]
async fn a_calls_steps_are_written_under_its_own_key_not_the_run_record() {
    use tollgate::agent::runs::{CallState, RunJournal};
    use tollgate::executor::{CallJournal, JournalStatus};
    let store = Arc::new(Observed::default());
    let runs = RunStore::new(store.clone() as Arc<dyn Store>);
    let record = run_with_calls("r", &["a", "b"]);
    runs.save(&record).unwrap();
    let journal = RunJournal::new(runs.clone());
    journal.activate(Arc::new(std::sync::Mutex::new(record.clone())));
    let before = store.writes().len();
    for status in [
        JournalStatus::Pending,
        JournalStatus::Running,
        JournalStatus::Done {
            output: "out".into(),
            is_error: false,
        },
    ] {
        journal.record(&record.session, "a", status).await.unwrap();
    }
    let written: Vec<(String, Vec<u8>)> = store.writes()[before..]
        .iter()
        .map(|(tree, key, _)| (tree.clone(), key.clone()))
        .collect();
    let call_a = ("run_calls".to_string(), b"r\0a".to_vec());
    assert_eq!(written, [call_a.clone(), call_a.clone(), call_a]);
    let loaded = runs.load("r").unwrap().unwrap();
    assert_eq!(
        loaded.calls[0].state,
        CallState::Done {
            output: "out".into(),
            is_error: false
        }
    );
    assert_eq!(loaded.calls[1].state, CallState::Proposed);
}

#[tokio::test]
async fn a_calls_own_step_is_read_back_when_it_got_further_than_the_run_record() {
    use tollgate::agent::runs::CallState;
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let runs = RunStore::new(store.clone());
    let mut record = run_with_calls("r", &["a", "b", "c"]);
    runs.save(&record).unwrap();
    // The journal writes each call's step under its own key, the run record untouched.
    runs.save_call_soon("r", "a", &CallState::Running)
        .await
        .unwrap();
    runs.save_call_soon(
        "r",
        "b",
        &CallState::Done {
            output: "real".into(),
            is_error: false,
        },
    )
    .await
    .unwrap();
    let loaded = runs.load("r").unwrap().unwrap();
    let states: Vec<&CallState> = loaded.calls.iter().map(|c| &c.state).collect();
    assert_eq!(
        states,
        [
            &CallState::Running,
            &CallState::Done {
                output: "real".into(),
                is_error: false
            },
            &CallState::Proposed
        ]
    );
    // The run record rewritten later (a call marked interrupted) wins over an older step; a
    // step as far as the record (the call's real output) wins over the record's.
    record.calls[0].state = CallState::Done {
        output: "interrupted".into(),
        is_error: true,
    };
    record.calls[1].state = CallState::Done {
        output: "interrupted".into(),
        is_error: true,
    };
    runs.save(&record).unwrap();
    let open = runs.open_runs().unwrap();
    assert_eq!(
        open[0].calls[0].state,
        CallState::Done {
            output: "interrupted".into(),
            is_error: true
        }
    );
    assert_eq!(
        open[0].calls[1].state,
        CallState::Done {
            output: "real".into(),
            is_error: false
        }
    );
    // A finished run takes its calls' steps with it (its answer came in a later round: the
    // finished record has no calls of its own).
    runs.save(&RunRecord {
        requester: None,
        round: 2,
        ..run(
            "r",
            RunPhase::Finished {
                answer: "ok".into(),
            },
        )
    })
    .unwrap();
    assert!(store.scan_prefix("run_calls", b"").unwrap().is_empty());
}

/// The scheduler's pass every half second reads the due index up to now and the records it
/// fires — never the 10,000 reminders that already fired or are not due.
#[test]
fn the_reminder_sweep_reads_only_what_is_due() {
    use tollgate::reminders::Reminders;
    let store = Arc::new(Observed::default());
    let reminders = Reminders::new(store.clone());
    let reminder = |n: usize, due: u64| reminder_of(&format!("telegram:{}", n % 97), n, due);
    for n in 0..HISTORY {
        reminders.add(&reminder(n, 100)).unwrap();
    }
    assert_eq!(reminders.take_due(100, |_| true).unwrap().len(), HISTORY);
    // Later ones, not due yet.
    for n in HISTORY..HISTORY + 100 {
        reminders.add(&reminder(n, 10_000)).unwrap();
    }
    reminders.add(&reminder(HISTORY + 100, 500)).unwrap();
    store.reset();
    let due = reminders.take_due(600, |_| true).unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(store.take("reminders"), 1, "the record it fires");
    assert_eq!(store.take("reminders_due"), 1, "the index up to now");
    // A pass with nothing due reads nothing.
    store.reset();
    assert!(reminders.take_due(700, |_| true).unwrap().is_empty());
    assert_eq!(store.take("reminders") + store.take("reminders_due"), 0);
}

/// Retention reads only the sessions idle past its cutoff (a time index), not every session
/// the bot has ever seen.
#[test]
fn retention_reads_only_the_idle_sessions() {
    let store = Arc::new(Observed::default());
    let runs = RunStore::new(store.clone());
    let now = 1_000_000;
    for n in 0..HISTORY {
        runs.note_activity(&format!("telegram:{n}"), "a", now)
            .unwrap();
    }
    runs.note_activity("telegram:old", "a", 10).unwrap();
    // Active again later: its old index entry is gone, not just outdated.
    let later = now + tollgate::agent::runs::REDATE_AFTER;
    runs.note_activity("telegram:0", "a", later).unwrap();
    store.reset();
    let pruned = runs.prune_idle_sessions(now, |_| Ok(())).unwrap();
    let names: Vec<&str> = pruned.iter().map(|p| p.session.as_str()).collect();
    assert_eq!(names, ["telegram:old"]);
    assert_eq!(pruned[0].agent, "a");
    assert_eq!(store.take("session_activity_aged"), 1);
    assert_eq!(store.take("session_activity"), 1);
}

/// A turn of a session dated less than an hour ago writes nothing of its activity (a read
/// only); an older date, or another agent, is dated again.
#[test]
fn a_session_dated_within_the_hour_keeps_its_date() {
    use tollgate::agent::runs::REDATE_AFTER;
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let runs = RunStore::new(store.clone());
    let dates = || -> Vec<u64> {
        store
            .scan_prefix("session_activity_aged", b"")
            .unwrap()
            .iter()
            .map(|(k, _)| u64::from_be_bytes(k[..8].try_into().unwrap()))
            .collect()
    };
    runs.note_activity("telegram:1", "a", 1_000).unwrap();
    runs.note_activity("telegram:1", "a", 1_000 + REDATE_AFTER - 1)
        .unwrap();
    assert_eq!(dates(), [1_000]);
    runs.note_activity("telegram:1", "a", 1_000 + REDATE_AFTER)
        .unwrap();
    assert_eq!(dates(), [1_000 + REDATE_AFTER]);
    runs.note_activity("telegram:1", "b", 1_001 + REDATE_AFTER)
        .unwrap();
    assert_eq!(
        dates(),
        [1_001 + REDATE_AFTER],
        "another agent's session now"
    );
}

/// A session runner's store keeps the transcript it last read or wrote, for one session at a
/// time: read again only for another session, past the size it keeps, after a failed write
/// (then the store's own value, not the one that failed), or by a store not made for a runner.
#[test]
fn a_runners_store_keeps_its_transcript_up_to_a_size_and_not_past_a_failed_write() {
    use tollgate::agent::llm::{ChatMessage, Role};
    use tollgate::agent::runs::KEPT_TRANSCRIPT_MAX;
    let store = Arc::new(Observed::default());
    let runs = RunStore::keeping_transcript(store.clone());
    let said = |n: usize| vec![ChatMessage::new(Role::User, "x".repeat(n))];
    let (one, two) = ("telegram:1", "telegram:2");
    runs.save_transcript(one, &said(10)).unwrap();
    assert_eq!(runs.transcript(one).unwrap(), said(10));
    assert_eq!(store.take_lookups("transcripts"), 0, "kept as written");
    assert!(runs.transcript(two).unwrap().is_empty());
    assert_eq!(runs.transcript(one).unwrap(), said(10));
    assert_eq!(runs.transcript(one).unwrap(), said(10));
    assert_eq!(
        store.take_lookups("transcripts"),
        2,
        "one slot: each session read once after the other took it"
    );
    runs.save_transcript(one, &said(KEPT_TRANSCRIPT_MAX))
        .unwrap();
    for _ in 0..2 {
        assert_eq!(runs.transcript(one).unwrap(), said(KEPT_TRANSCRIPT_MAX));
    }
    assert_eq!(store.take_lookups("transcripts"), 2, "too long to keep");
    runs.save_transcript(one, &said(10)).unwrap();
    store.refuse_writes_to("transcripts");
    assert!(runs.stage_transcript(one, &said(20)).is_err());
    assert_eq!(runs.transcript(one).unwrap(), said(10), "the store's value");
    assert_eq!(
        store.take_lookups("transcripts"),
        1,
        "read after the failure"
    );
    let plain = RunStore::new(store.clone());
    for _ in 0..2 {
        assert_eq!(plain.transcript(one).unwrap(), said(10));
    }
    assert_eq!(
        store.take_lookups("transcripts"),
        2,
        "a plain store keeps none"
    );
}

/// A write through a runner's store that lands while the same store reads the transcript (a
/// tool summarizing it while another reads it) wins: the older value the read returned is not
/// kept (the read, seeing the slot changed, forgets it), and the next read finds the newer one.
#[test]
fn a_write_during_a_read_wins_over_what_the_read_returned() {
    use tollgate::agent::llm::{ChatMessage, Role};
    let store = Arc::new(Observed::default());
    let runs = RunStore::keeping_transcript(store.clone());
    let said = |text: &str| vec![ChatMessage::new(Role::User, text)];
    let session = "telegram:1";
    RunStore::new(store.clone())
        .save_transcript(session, &said("older"))
        .unwrap();
    let beside = runs.clone();
    store.while_reading_from("transcripts", move || {
        beside.save_transcript(session, &said("newer")).unwrap();
    });
    assert_eq!(runs.transcript(session).unwrap(), said("older"), "as read");
    assert_eq!(
        runs.transcript(session).unwrap(),
        said("newer"),
        "as written"
    );
}

/// A runner's write that crosses another change to its store's slot (retention deleting the
/// transcript and having the worker forget it, between the write and its keep) is not kept:
/// the next read finds what the store holds.
#[test]
fn a_write_crossing_a_forget_is_not_kept() {
    use tollgate::agent::llm::{ChatMessage, Role};
    let store = Arc::new(Observed::default());
    let runs = RunStore::keeping_transcript(store.clone());
    let session = "telegram:1";
    runs.save_transcript(session, &[ChatMessage::new(Role::User, "first")])
        .unwrap();
    let (pass, worker) = (store.clone(), runs.clone());
    store.after_writing_to("transcripts", move || {
        pass.delete("transcripts", session.as_bytes()).unwrap();
        worker.forget_kept_transcript();
    });
    runs.stage_transcript(session, &[ChatMessage::new(Role::User, "second")])
        .unwrap();
    store.take_lookups("transcripts");
    assert!(runs.transcript(session).unwrap().is_empty(), "as stored");
    assert_eq!(store.take_lookups("transcripts"), 1);
}

/// A session worker's store remembers the date it gave its session: the turns after, within
/// the hour, date it without reading it again. And a run whose first reply was its answer is
/// closed without looking for call steps it never had; a run that made calls still is.
#[test]
fn a_repeat_turn_reads_neither_the_sessions_date_nor_call_steps_it_never_had() {
    let store = Arc::new(Observed::default());
    let runs = RunStore::new(store.clone());
    // A finished run's save dates its session by the clock.
    let now = tollgate::clock::now_secs();
    runs.note_activity("telegram:1", "a", now).unwrap();
    assert_eq!(store.take_lookups("session_activity"), 1);
    // Finished after `round` model calls (a run that made calls finishes in round 2 or later).
    let finished = |id: &str, round: u32| RunRecord {
        requester: None,
        round,
        ..run(
            id,
            RunPhase::Finished {
                answer: "ok".into(),
            },
        )
    };
    runs.save(&finished("telegram:1:answered", 1)).unwrap();
    runs.note_activity("telegram:1", "a", now + 60).unwrap();
    assert_eq!(store.take_lookups("session_activity"), 0);
    assert_eq!(store.take_lookups("run_calls"), 0);
    runs.save(&finished("telegram:1:calls", 2)).unwrap();
    assert_eq!(store.take_lookups("run_calls"), 1);
    // Another session dated through the same store takes its one slot.
    runs.note_activity("telegram:2", "a", now).unwrap();
    runs.note_activity("telegram:1", "a", now).unwrap();
    assert_eq!(store.take_lookups("session_activity"), 2);
    // An hour on, the session is dated again.
    runs.note_activity("telegram:1", "a", now + tollgate::agent::runs::REDATE_AFTER)
        .unwrap();
    assert_eq!(store.take_lookups("session_activity"), 1);
}

/// A chat an older tollgate remembered without dating its session (one that only ever sent
/// commands) is dated at the upgrade, so retention forgets it `retain_days` later; a session
/// already dated keeps its date.
#[test]
fn a_chat_remembered_undated_before_the_upgrade_is_dated_once_and_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path(), "");
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let day = 86_400;
    store.put("bridge_sessions", b"telegram:5", b"{}").unwrap();
    store.put("bridge_sessions", b"telegram:6", b"{}").unwrap();
    RunStore::new(store.clone())
        .note_activity("telegram:6", "a", 10)
        .unwrap();
    let upgraded = 100 * day;
    tollgate::retention::date_undated(&store, upgraded).unwrap();
    let early = tollgate::retention::prune(&store, &config, upgraded + 29 * day).unwrap();
    let names: Vec<&str> = early.sessions.iter().map(|p| p.session.as_str()).collect();
    assert_eq!(names, ["telegram:6"], "dated long ago: pruned at once");
    assert!(
        store
            .get("bridge_sessions", b"telegram:5")
            .unwrap()
            .is_some()
    );
    let report = tollgate::retention::prune(&store, &config, upgraded + 31 * day).unwrap();
    let names: Vec<&str> = report.sessions.iter().map(|p| p.session.as_str()).collect();
    assert_eq!(names, ["telegram:5"]);
    assert!(
        store
            .scan_prefix("bridge_sessions", b"")
            .unwrap()
            .is_empty()
    );
}

/// A session keeps its date for up to an hour of further activity, so the retention pass
/// allows for that hour: a session last active `retain_days` minus a minute ago keeps its
/// transcript, even though its date is older than the window.
#[test]
fn a_session_active_within_the_window_is_not_pruned_by_its_older_date() {
    use tollgate::agent::llm::{ChatMessage, Role};
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path(), "");
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let runs = RunStore::new(store.clone());
    let (day, window) = (86_400, 30 * 86_400);
    let dated = 10 * day;
    runs.note_activity("telegram:1", "a", dated).unwrap();
    runs.save_transcript("telegram:1", &[ChatMessage::new(Role::User, "hi")])
        .unwrap();
    // Active again 50 minutes later: the date stays (it is less than an hour old).
    let last_active = dated + 50 * 60;
    runs.note_activity("telegram:1", "a", last_active).unwrap();

    let kept = tollgate::retention::prune(&store, &config, last_active + window - 60).unwrap();
    assert!(kept.sessions.is_empty(), "{kept:?}");
    assert_eq!(runs.transcript("telegram:1").unwrap().len(), 1);
    // Idle for the window and the hour its date may lag by: pruned.
    let later = last_active + window + tollgate::agent::runs::REDATE_AFTER;
    let pruned = tollgate::retention::prune(&store, &config, later).unwrap();
    assert_eq!(pruned.sessions.len(), 1, "{pruned:?}");
    assert!(runs.transcript("telegram:1").unwrap().is_empty());
}

/// Activity recorded before its time index existed is indexed once at open, and pruned.
#[test]
fn session_activity_from_before_its_index_is_indexed_once() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let mut activity = 10u64.to_be_bytes().to_vec();
    activity.extend_from_slice(b"a");
    store
        .insert("session_activity", b"telegram:5", &activity)
        .unwrap();
    let runs = RunStore::new(store.clone());
    assert!(
        runs.prune_idle_sessions(100, |_| Ok(()))
            .unwrap()
            .is_empty(),
        "not indexed yet"
    );
    runs.index_existing().unwrap();
    let pruned = runs.prune_idle_sessions(100, |_| Ok(())).unwrap();
    assert_eq!(pruned.len(), 1);
    assert_eq!(pruned[0].session, "telegram:5");
}

/// A chat's "Approve all N" row reads the cards waiting in that chat only — not the 10,000
/// waiting elsewhere — and a settled card leaves the chat's index.
#[test]
fn a_chats_waiting_cards_are_read_without_the_other_chats() {
    let store = Arc::new(Observed::default());
    let approvals = PendingApprovals::new(store.clone());
    let at = |chat: i64| CardRef {
        chat: ChatRef::private(Platform::Telegram, chat),
        message_id: 1,
    };
    for n in 0..HISTORY {
        let token = ApprovalToken::generate().unwrap();
        approvals.create(&approval(&token, n, u64::MAX)).unwrap();
        approvals
            .set_posted(&token, &[at(1_000 + (n % 97) as i64)])
            .unwrap();
    }
    let mine: Vec<ApprovalToken> = (0..2)
        .map(|n| {
            let token = ApprovalToken::generate().unwrap();
            approvals.create(&approval(&token, n, u64::MAX)).unwrap();
            approvals.set_posted(&token, &[at(5)]).unwrap();
            token
        })
        .collect();
    store.reset();
    let waiting = approvals.waiting_in_chat(&at(5).chat).unwrap();
    assert_eq!(waiting.len(), 2);
    assert_eq!(store.take("approvals"), 2);
    assert_eq!(store.take("approvals_in_chat"), 2);
    approvals.settle(&mine[0], PendingState::TimedOut).unwrap();
    store.reset();
    assert_eq!(approvals.waiting_in_chat(&at(5).chat).unwrap().len(), 1);
    assert_eq!(store.take("approvals_in_chat"), 1);
}

/// Cards posted before the chat index existed are indexed once, when the store is opened.
#[test]
fn cards_posted_before_the_chat_index_are_indexed_once() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let approvals = PendingApprovals::new(store.clone());
    let token = ApprovalToken::generate().unwrap();
    approvals.create(&approval(&token, 1, u64::MAX)).unwrap();
    // Where it was posted, written as an older tollgate wrote it: no chat index entry.
    let mut record = approvals.get(&token).unwrap().unwrap();
    record.posted_to = vec![CardRef {
        chat: ChatRef::private(Platform::Telegram, 5),
        message_id: 9,
    }];
    store
        .insert(
            "approvals",
            token.as_str().as_bytes(),
            &serde_json::to_vec(&record).unwrap(),
        )
        .unwrap();
    let chat = ChatRef::private(Platform::Telegram, 5);
    assert!(approvals.waiting_in_chat(&chat).unwrap().is_empty());
    PendingApprovals::index_existing(store.as_ref()).unwrap();
    assert_eq!(approvals.waiting_in_chat(&chat).unwrap().len(), 1);
}

/// Settling a card, using an "Approve all" row and firing a reminder each date the record
/// before (or as) it changes: whatever prefix of their writes a kill keeps, what a restart
/// does (expire the cards, retire the rows, sweep the reminders) and a retention pass past the
/// window leave none of them behind. Each used to be dated after it changed, and a kill
/// between left a record retention never found.
#[test]
fn every_prefix_of_settling_using_and_firing_leaves_records_retention_prunes() {
    use tollgate::approvals::{BulkApprovals, PressOutcome, Taken};
    use tollgate::reminders::Reminders;
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path(), "");
    let recording = Arc::new(crate::suite::observed::Observed::default());
    let store: Arc<dyn Store> = recording.clone();
    let card = ApprovalToken::generate().unwrap();
    PendingApprovals::new(store.clone())
        .create(&approval(&card, 1, 2_000))
        .unwrap();
    let row = bulk_row(&BulkApprovals::new(store.clone()));
    Reminders::new(store.clone())
        .add(&reminder_of("telegram:1", 1, 100))
        .unwrap();
    let set_up = recording.writes().len();
    let pressed = PendingApprovals::new(store.clone())
        .press(&card.button("approve"), "admin", true, 1_000)
        .unwrap();
    assert!(matches!(pressed, PressOutcome::Answered(_)), "{pressed:?}");
    let taken = BulkApprovals::new(store.clone()).take(&row).unwrap();
    assert!(matches!(taken, Taken::Row(_)), "{taken:?}");
    let fired = Reminders::new(store.clone())
        .take_due(100, |_| true)
        .unwrap();
    assert_eq!(fired.len(), 1);
    let writes = recording.writes();
    let later = tollgate::clock::now_secs() + 365 * 86_400;
    for kept in set_up..=writes.len() {
        let after_kill: Arc<dyn Store> = crate::suite::observed::replayed(&writes[..kept]);
        // What the restarted process does with what it finds.
        PendingApprovals::new(after_kill.clone())
            .expire_due(u64::MAX)
            .unwrap();
        let bulks = BulkApprovals::new(after_kill.clone());
        for live in bulks.live().unwrap() {
            bulks
                .retire(&ApprovalToken::parse(&live.token).unwrap())
                .unwrap();
        }
        Reminders::new(after_kill.clone())
            .take_due(tollgate::clock::now_secs(), |_| true)
            .unwrap();
        tollgate::retention::prune(&after_kill, &config, later).unwrap();
        let left: Vec<&str> = ["approvals", "approval_bulks", "reminders"]
            .into_iter()
            .filter(|tree| !after_kill.scan_prefix(tree, b"").unwrap().is_empty())
            .collect();
        assert!(
            left.is_empty(),
            "a kill after {} of the {} writes leaves records retention never prunes in {left:?}: {:?}",
            kept - set_up,
            writes.len() - set_up,
            writes[set_up..kept]
                .iter()
                .map(|(tree, _, value)| (tree, value.is_some()))
                .collect::<Vec<_>>()
        );
    }
}

/// Open runs nobody resumes after a restart — a subagent's, a one-off `run`'s — are ended as
/// failed, so retention prunes them; a chat's open run stays open for its session to resume.
#[test]
fn open_runs_nobody_resumes_are_ended_and_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path(), "");
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let runs = RunStore::new(store.clone());
    for (id, session) in [
        ("sub-run", "telegram:1:sub:1f"),
        ("one-off", "run:20261202"),
        ("chat-run", "telegram:1"),
    ] {
        let mut open = run(id, RunPhase::RunningTools);
        open.session = session.into();
        runs.save(&open).unwrap();
    }
    assert_eq!(runs.close_orphaned().unwrap(), 2);
    let open: Vec<String> = runs
        .open_runs()
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(open, ["chat-run"]);
    assert!(matches!(
        runs.load("sub-run").unwrap().unwrap().phase,
        RunPhase::Failed { .. }
    ));
    let later = tollgate::clock::now_secs() + 365 * 86_400;
    let report = tollgate::retention::prune(&store, &config, later).unwrap();
    assert_eq!(report.runs, 2, "{report:?}");
    assert!(runs.load("chat-run").unwrap().is_some());
}

/// Reminder `r{n}` of agent `a`, due at `due`.
pub(crate) fn reminder_of(session: &str, n: usize, due: u64) -> tollgate::reminders::Reminder {
    tollgate::reminders::Reminder {
        id: format!("r{n}"),
        session: session.into(),
        agent: "a".into(),
        message: format!("reminder {n}"),
        due,
        created: "then".into(),
        fired: false,
    }
}

/// Listing a session's reminders reads that session's pending ones — not the 10,000 of the
/// other sessions, nor its own that fired or were cancelled.
#[test]
fn listing_a_sessions_reminders_reads_only_its_own() {
    use tollgate::reminders::Reminders;
    let store = Arc::new(Observed::default());
    let reminders = Reminders::new(store.clone());
    for n in 0..HISTORY {
        let session = format!("telegram:{}", n % 97);
        reminders.add(&reminder_of(&session, n, 10_000)).unwrap();
    }
    // The listing session's key is a prefix of another's: that one's are not its own.
    reminders
        .add(&reminder_of("telegram:9", HISTORY, 100))
        .unwrap();
    reminders
        .add(&reminder_of("telegram:9", HISTORY + 1, 5_000))
        .unwrap();
    reminders
        .add(&reminder_of("telegram:9", HISTORY + 2, 6_000))
        .unwrap();
    assert_eq!(reminders.take_due(100, |_| true).unwrap().len(), 1);
    assert!(
        reminders
            .cancel("telegram:9", &format!("r{}", HISTORY + 2))
            .unwrap()
    );
    store.reset();
    let listed = reminders.pending("telegram:9").unwrap();
    let own = HISTORY / 97 + usize::from(HISTORY % 97 > 9);
    assert_eq!(listed.len(), own + 1);
    assert_eq!(listed[0].id, format!("r{}", HISTORY + 1), "soonest first");
    assert!(listed.iter().all(|r| r.session == "telegram:9"));
    assert_eq!(store.take("reminders"), own + 1, "its pending records only");
}

/// A kill can keep any prefix of the writes of an add, a fire, a cancel and the retention
/// pass: whatever it keeps, a session's list shows exactly its reminders that have not fired,
/// and once their time has passed and the scheduler and retention have run, the index that
/// lists them holds nothing (no entry outlives its reminder).
#[test]
fn a_kill_at_any_write_leaves_the_reminder_list_true_and_nothing_behind() {
    use tollgate::reminders::Reminders;
    let store = Arc::new(Observed::default());
    let reminders = Reminders::new(store.clone());
    reminders.add(&reminder_of("s", 1, 100)).unwrap();
    reminders.add(&reminder_of("s", 2, 200)).unwrap();
    reminders.add(&reminder_of("s", 3, 300)).unwrap();
    assert_eq!(reminders.take_due(100, |_| true).unwrap().len(), 1);
    assert!(reminders.cancel("s", "r2").unwrap());
    // Never deliverable here: retention prunes it once its time is past the cutoff (with
    // the one that fired at 100).
    reminders.add(&reminder_of("s", 4, 150)).unwrap();
    assert_eq!(Reminders::prune_fired(store.as_ref(), 160).unwrap(), 2);
    let writes = store.writes();
    for kept in 0..=writes.len() {
        let after_kill: Arc<dyn Store> = crate::suite::observed::replayed(&writes[..kept]);
        let reminders = Reminders::new(after_kill.clone());
        let unfired: Vec<String> = after_kill
            .scan_prefix("reminders", b"")
            .unwrap()
            .into_iter()
            .filter_map(|(_, v)| serde_json::from_slice::<tollgate::reminders::Reminder>(&v).ok())
            .filter(|r| !r.fired)
            .map(|r| r.id)
            .collect();
        let mut listed: Vec<String> = reminders
            .pending("s")
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        listed.sort();
        // An add's record is its last write: a reminder with a record is listed.
        assert_eq!(listed, unfired, "after {kept} of {} writes", writes.len());
        reminders.take_due(1_000, |_| true).unwrap();
        Reminders::prune_fired(after_kill.as_ref(), 10_000).unwrap();
        assert!(reminders.pending("s").unwrap().is_empty());
        assert!(
            after_kill
                .scan_prefix("reminders_by_session", b"")
                .unwrap()
                .is_empty(),
            "after {kept} of {} writes: {:?}",
            writes.len(),
            after_kill.scan_prefix("reminders_by_session", b"").unwrap()
        );
    }
}
