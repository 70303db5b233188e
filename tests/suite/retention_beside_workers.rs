//! `serve`'s live workers and the store: a worker that starts while a retention pass prunes its
//! session keeps the chat it remembered; a live worker whose session is pruned forgets the
//! transcript it kept, even if the pass then fails; a revoke made while a worker starts holds
//! in that worker at once.

use crate::suite::observed::Observed;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tollgate::agent::llm::{ChatMessage, Role};
use tollgate::agent::runs::RunStore;
use tollgate::store::{Store, StoreError};

/// What serve writes for a live worker of `session` (at its start, and when retention asks
/// after pruning it): the session's date, then its chat.
fn remember(store: &Arc<Observed>, session: &str, now: u64) -> Result<(), StoreError> {
    RunStore::new(store.clone()).note_activity(session, "a", now)?;
    store.put("bridge_sessions", session.as_bytes(), b"{\"seen\":\"now\"}")
}

/// The pass claims a session idle for 40 days; before it forgets the session's chat, a
/// message starts the session's worker, which (as `serve` does) is put in the map, dates the
/// session and remembers its chat. The chat stays remembered and the session dated: before,
/// the pass deleted the row the worker had just written, and a run the worker started could
/// not be resumed after a restart ("its chat is unknown"). With `prune_workspaces`, the live
/// session's workspace is kept (its calls work there); before, the pass deleted it.
#[test]
fn a_worker_started_while_retention_prunes_its_session_keeps_its_chat_and_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let workspaces = dir.path().join("ws");
    std::fs::create_dir_all(&workspaces).unwrap();
    let toml = format!(
        "[store]\nprune_workspaces = true\n[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\nworkspace = \"{}\"\n",
        workspaces.display()
    );
    let config =
        tollgate::config::load_with_env(None, Some(&toml), std::collections::HashMap::new())
            .unwrap();
    let workspace =
        |session: &str| tollgate::gate::workspace_for(&config.agents["a"], Some(session));
    let store = Arc::new(Observed::default());
    let now = tollgate::clock::now_secs();
    let (session, other) = ("telegram:10", "telegram:11");
    for idle in [session, other] {
        let runs = RunStore::new(store.clone());
        runs.note_activity(idle, "a", now - 40 * 86_400).unwrap();
        runs.save_transcript(idle, &[ChatMessage::new(Role::User, "hi")])
            .unwrap();
        store
            .put("bridge_sessions", idle.as_bytes(), b"{\"seen\":\"then\"}")
            .unwrap();
        std::fs::create_dir_all(workspace(idle)).unwrap();
    }
    // The worker's start, mid-pass: in the map, then its writes.
    let started = Arc::new(AtomicBool::new(false));
    let (starting, beside) = (started.clone(), store.clone());
    store.after_removing_from("transcripts", move || {
        starting.store(true, Ordering::SeqCst);
        remember(&beside, session, now).unwrap();
    });
    let dyn_store: Arc<dyn Store> = store.clone();
    let live = |s: &str| s == session && started.load(Ordering::SeqCst);
    let report = tollgate::retention::prune_beside_workers(&dyn_store, &config, now, &|s| {
        if live(s) {
            remember(&store, s, now).map(|()| true)
        } else {
            Ok(false)
        }
    })
    .unwrap();
    assert!(
        started.load(Ordering::SeqCst),
        "the worker started mid-pass"
    );
    let mut pruned: Vec<&str> = report.sessions.iter().map(|s| s.session.as_str()).collect();
    pruned.sort_unstable();
    assert_eq!(pruned, [session, other], "{report}");
    assert_eq!(
        store.get("bridge_sessions", session.as_bytes()).unwrap(),
        Some(b"{\"seen\":\"now\"}".to_vec()),
        "the chat the live worker remembered is kept"
    );
    assert!(
        RunStore::new(store.clone()).is_dated(session).unwrap(),
        "the worker's date is kept, so a later pass finds the session"
    );
    assert!(
        store
            .get("bridge_sessions", other.as_bytes())
            .unwrap()
            .is_none(),
        "an idle session with no worker is forgotten with its chat"
    );
    assert!(
        workspace(session).is_dir(),
        "the live session's workspace is kept"
    );
    assert!(
        !workspace(other).exists(),
        "an idle session's workspace is deleted"
    );
    assert_eq!(report.workspaces, 1, "{report}");
}

/// `serve`'s service over `store`, with the in-test bridge (it says it is Discord) whose
/// workers are never let go while a test runs.
fn service_over(
    dir: &std::path::Path,
    store: Arc<dyn Store>,
) -> (
    tollgate::serve::sessions::Service,
    Arc<tollgate::config::Config>,
) {
    use crate::suite::fakes::bridge::{Recorder, TestBridge};
    use tollgate_surface::Bridge;
    let toml = format!(
        "[store]\npath = \"{d}/store\"\n[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\nworkspace = \"{d}/ws\"\n[discord]\nallowed_users = [510]\nadmins = [1]\nidle_session_secs = 100000000\n",
        d = dir.display()
    );
    let config = Arc::new(
        tollgate::config::load_with_env(None, Some(&toml), std::collections::HashMap::new())
            .unwrap(),
    );
    let bridges: Vec<Arc<dyn Bridge>> = vec![Arc::new(TestBridge {
        recorder: Arc::new(Recorder::default()),
    })];
    let gateway = tollgate::serve::gateway::Gateway::new(&config, bridges).unwrap();
    let shared =
        Arc::new(tollgate::serve::shared::Shared::new(config.clone(), gateway, store).unwrap());
    (tollgate::serve::sessions::Service::new(shared), config)
}

/// The session worker of chat 510 on the in-test bridge.
fn worker_of(
    service: &tollgate::serve::sessions::Service,
) -> Arc<tollgate::serve::worker::SessionWorker> {
    use tollgate_surface::{ChatRef, Platform};
    service
        .session("discord:510", &ChatRef::private(Platform::Discord, 510))
        .unwrap()
}

/// A worker kept alive past `retain_days` (a long `idle_session_secs`) keeps its session's
/// transcript in memory. The pass that prunes the session has the worker forget it, so its
/// next turn starts a new conversation, as retention promises; without that, the turn wrote
/// the old transcript back.
#[tokio::test(flavor = "multi_thread")]
async fn a_live_worker_whose_session_is_pruned_forgets_the_transcript_it_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(tollgate::store::MemoryStore::new());
    let (service, config) = service_over(dir.path(), store.clone());
    let key = "discord:510";
    let worker = worker_of(&service);
    let runs = &worker.assembled.runner.runs;
    runs.save_transcript(key, &[ChatMessage::new(Role::User, "hi")])
        .unwrap();
    assert_eq!(runs.transcript(key).unwrap().len(), 1);
    let later = tollgate::clock::now_secs() + 40 * 86_400;
    let report = tollgate::retention::prune_beside_workers(&store, &config, later, &|s| {
        service.remember_if_live(s)
    })
    .unwrap();
    assert!(report.sessions.iter().any(|s| s.session == key), "{report}");
    assert!(
        runs.transcript(key).unwrap().is_empty(),
        "the live worker's next turn starts a new conversation"
    );
}

/// A worker's start reads its session's transcript (while it is off the async worker for its
/// other reads) and keeps it: the first turn finds it kept and reads the store no more.
#[tokio::test(flavor = "multi_thread")]
async fn a_workers_start_keeps_the_transcript_its_first_turn_reads() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Observed::default());
    RunStore::new(store.clone())
        .save_transcript("discord:510", &[ChatMessage::new(Role::User, "earlier")])
        .unwrap();
    let (service, _) = service_over(dir.path(), store.clone());
    let worker = worker_of(&service);
    assert_eq!(store.take_lookups("transcripts"), 1, "read at the start");
    let transcript = worker
        .assembled
        .runner
        .runs
        .transcript("discord:510")
        .unwrap();
    assert_eq!(transcript.len(), 1);
    assert_eq!(store.take_lookups("transcripts"), 0, "the turn reads none");
}

/// A pass that fails after deleting a live worker's transcript (a later delete refused) has
/// still had the worker forget the copy it kept: the next turn does not write it back.
#[tokio::test(flavor = "multi_thread")]
async fn a_pass_failing_after_the_transcript_still_has_the_live_worker_forget_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Observed::default());
    let (service, config) = service_over(dir.path(), store.clone());
    let worker = worker_of(&service);
    let runs = &worker.assembled.runner.runs;
    runs.save_transcript("discord:510", &[ChatMessage::new(Role::User, "hi")])
        .unwrap();
    store.refuse_writes_to(tollgate::executor::session::DIALS_TREE);
    let dyn_store: Arc<dyn Store> = store.clone();
    let later = tollgate::clock::now_secs() + 40 * 86_400;
    let failed = tollgate::retention::prune_beside_workers(&dyn_store, &config, later, &|s| {
        service.remember_if_live(s)
    });
    assert!(failed.is_err(), "the refused delete fails the pass");
    assert!(
        runs.transcript("discord:510").unwrap().is_empty(),
        "the worker forgot the transcript the pass deleted"
    );
}

/// A service over an observed store in which session `discord:510` may always `write_file`.
fn granted_write_file(
    dir: &std::path::Path,
) -> (Arc<tollgate::serve::sessions::Service>, Arc<Observed>) {
    let store = Arc::new(Observed::default());
    let (service, _config) = service_over(dir, store.clone());
    tollgate::store::Allowlists::new(store.clone())
        .add_tool(&tollgate::store::ToolEntry {
            session: "discord:510".into(),
            tool: "write_file".into(),
            by: "admin".into(),
            at: "then".into(),
        })
        .unwrap();
    (Arc::new(service), store)
}

/// The tools `worker`'s session may always use, as its gate sees them now.
fn granted(worker: &tollgate::serve::worker::SessionWorker) -> BTreeSet<String> {
    worker.assembled.session.snapshot().tool_allowlist
}

/// An admin revokes a session's "always allow" over the control socket while the session's
/// worker is starting: the worker has read its grants (the revoked one with them), and serve's
/// reload of every live worker looks at the map before the worker is in it. The worker rereads
/// them, so the revoke holds at once; before, the worker kept the revoked tool for as long as
/// it lived (every message keeps it alive).
#[tokio::test(flavor = "multi_thread")]
async fn a_revoke_made_while_a_worker_starts_holds_in_that_worker() {
    let dir = tempfile::tempdir().unwrap();
    let (service, store) = granted_write_file(dir.path());
    let (revoking, lists) = (
        service.clone(),
        tollgate::store::Allowlists::new(store.clone()),
    );
    store.while_reading_from("allowlist.tools", move || {
        // What the control socket does: the store first, then every live worker rereads.
        assert!(lists.revoke_tool("discord:510", "write_file").unwrap());
        revoking.reload_allowlists();
    });
    let worker = worker_of(&service);
    assert_eq!(granted(&worker), BTreeSet::new());
}

/// Two rereads of one worker's allowlists racing: serve rereads every live worker after a
/// control-socket command, while the worker is still starting, so the starting worker rereads
/// its own once it is in the map. A revoke lands while that reread is under way: serve's next
/// reread (which finds the worker) publishes the revoke, then the worker's own finishes with
/// the grants it read before. The older reread is dropped; before, its grants were published
/// last and the revoked tool stayed allowed.
#[tokio::test(flavor = "multi_thread")]
async fn an_older_reread_finishing_last_does_not_bring_a_revoked_grant_back() {
    let dir = tempfile::tempdir().unwrap();
    let (service, store) = granted_write_file(dir.path());
    let (serve, observed) = (service.clone(), store.clone());
    store.while_reading_from("allowlist.tools", move || {
        // Inside the start's read: a control-socket command that changed nothing (`allowlist
        // list`) has serve reread every live worker; this one is not in the map yet.
        serve.reload_allowlists();
        let (serve, lists) = (
            serve.clone(),
            tollgate::store::Allowlists::new(observed.clone()),
        );
        // Inside the worker's own reread, after it read the grant: the revoke, and serve's
        // reread of every live worker, this one included.
        observed.while_reading_from("allowlist.tools", move || {
            assert!(lists.revoke_tool("discord:510", "write_file").unwrap());
            serve.reload_allowlists();
        });
    });
    let worker = worker_of(&service);
    assert_eq!(granted(&worker), BTreeSet::new());
}

/// A reread of a live worker's allowlists that cannot read the store empties them (every call
/// asks again) instead of keeping grants a revoke may have taken back.
#[tokio::test(flavor = "multi_thread")]
async fn a_reread_that_cannot_read_the_store_keeps_no_grant() {
    let dir = tempfile::tempdir().unwrap();
    let (service, store) = granted_write_file(dir.path());
    let worker = worker_of(&service);
    assert_eq!(granted(&worker), BTreeSet::from(["write_file".to_string()]));
    store.refuse_reads_of("allowlist.tools");
    service.reload_allowlists();
    assert_eq!(granted(&worker), BTreeSet::new());
}

/// Past `IDLE_WORKERS_KEPT` idle workers, a start lets the longest idle go at once rather than
/// after `idle_session_secs` (a burst of new chats otherwise keeps every worker it started that
/// long) — only those idle a second or more, and the map is looked at again only an eighth of
/// the cap later: the oldest go, the newest stay, and a message for a worker let go is told so
/// (the caller starts a fresh one).
#[tokio::test(flavor = "multi_thread")]
async fn idle_workers_past_the_cap_are_let_go_longest_idle_first() {
    use tollgate::serve::sessions::{IDLE_BEFORE_LET_GO, IDLE_WORKERS_KEPT};
    use tollgate::serve::worker::Queued;
    use tollgate_surface::{ChatRef, Platform};
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(tollgate::store::MemoryStore::new());
    let (service, _) = service_over(dir.path(), store);
    let start = |n: usize| {
        service
            .session(
                &format!("discord:{n}"),
                &ChatRef::private(Platform::Discord, n as i64),
            )
            .unwrap()
    };
    let eighth = IDLE_WORKERS_KEPT / 8;
    let oldest = start(0);
    for n in 1..=IDLE_WORKERS_KEPT + eighth {
        start(n);
    }
    // Past the threshold, but none idle for a second yet (one just started may not have its
    // first message): none let go.
    let first_wave = IDLE_WORKERS_KEPT + eighth + 1;
    assert_eq!(service.live(), first_wave);
    std::thread::sleep(IDLE_BEFORE_LET_GO);
    // The next pass comes an eighth later.
    for n in first_wave..first_wave + eighth {
        start(n);
    }
    assert_eq!(service.live(), first_wave + eighth);
    let newest = start(first_wave + eighth);
    // Every idle worker past the cap went, the longest idle first (the one starting was not
    // idle yet).
    assert_eq!(service.live(), IDLE_WORKERS_KEPT + 1);
    assert!(
        Arc::ptr_eq(&newest, &start(first_wave + eighth)),
        "the newest stays"
    );
    let kept_oldest = first_wave + eighth - IDLE_WORKERS_KEPT;
    let kept = start(kept_oldest);
    assert_eq!(
        service.live(),
        IDLE_WORKERS_KEPT + 1,
        "{kept_oldest} was kept"
    );
    drop(kept);
    assert_eq!(
        oldest.enqueue("hello".into(), (1, "someone".into())),
        Queued::Evicted
    );
    assert!(!Arc::ptr_eq(&oldest, &start(0)), "a fresh worker takes it");
}
