//! A retention pass beside `serve`'s live workers: a worker that starts while the pass prunes
//! its session keeps the chat it remembered.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tollgate::agent::llm::{ChatMessage, Role};
use tollgate::agent::runs::RunStore;
use tollgate::store::{MemoryStore, Store, StoreError};

type R<T> = Result<T, StoreError>;
type Hook = Box<dyn FnOnce(&Arc<MemoryStore>) + Send>;

/// A store that runs `hook` once, when a transcript is deleted: between a pass's claim of an
/// idle session and its forgetting the session's chat.
struct MidPass {
    inner: Arc<MemoryStore>,
    hook: Mutex<Option<Hook>>,
}

impl Store for MidPass {
    fn get(&self, tree: &str, key: &[u8]) -> R<Option<Vec<u8>>> {
        self.inner.get(tree, key)
    }
    fn insert(&self, tree: &str, key: &[u8], value: &[u8]) -> R<Option<Vec<u8>>> {
        self.inner.insert(tree, key, value)
    }
    fn remove(&self, tree: &str, key: &[u8]) -> R<Option<Vec<u8>>> {
        let removed = self.inner.remove(tree, key);
        if tree == "transcripts"
            && let Some(hook) = self.hook.lock().unwrap().take()
        {
            hook(&self.inner);
        }
        removed
    }
    fn scan_prefix(&self, tree: &str, prefix: &[u8]) -> R<Vec<(Vec<u8>, Vec<u8>)>> {
        self.inner.scan_prefix(tree, prefix)
    }
    fn scan_before(&self, tree: &str, end: &[u8]) -> R<Vec<(Vec<u8>, Vec<u8>)>> {
        self.inner.scan_before(tree, end)
    }
    fn scan_from(&self, tree: &str, start: &[u8]) -> R<Vec<(Vec<u8>, Vec<u8>)>> {
        self.inner.scan_from(tree, start)
    }
    fn compare_and_swap(
        &self,
        tree: &str,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> R<Result<(), Option<Vec<u8>>>> {
        self.inner.compare_and_swap(tree, key, expected, new)
    }
    fn flush(&self) -> R<()> {
        self.inner.flush()
    }
}

/// What serve writes for a live worker of `session` (at its start, and when retention asks
/// after pruning it): the session's date, then its chat.
fn remember(store: &Arc<MemoryStore>, session: &str, now: u64) -> R<()> {
    RunStore::new(store.clone()).note_activity(session, "a", now)?;
    store.put("bridge_sessions", session.as_bytes(), b"{\"seen\":\"now\"}")
}

/// The pass claims a session idle for 40 days; before it forgets the session's chat, a
/// message starts the session's worker, which (as `serve` does) is put in the map, dates the
/// session and remembers its chat. The chat stays remembered and the session dated: before,
/// the pass deleted the row the worker had just written, and a run the worker started could
/// not be resumed after a restart ("its chat is unknown").
#[test]
fn a_worker_started_while_retention_prunes_its_session_keeps_its_chat() {
    let dir = tempfile::tempdir().unwrap();
    let toml = "[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\n";
    let file = dir.path().join("tollgate.toml");
    std::fs::write(&file, toml).unwrap();
    let config =
        tollgate::config::load_with_env(Some(file), Some(toml), Default::default()).unwrap();
    let inner = Arc::new(MemoryStore::new());
    let store = Arc::new(MidPass {
        inner: inner.clone(),
        hook: Mutex::new(None),
    });
    let now = tollgate::clock::now_secs();
    let (session, other) = ("telegram:10", "telegram:11");
    for idle in [session, other] {
        let runs = RunStore::new(inner.clone());
        runs.note_activity(idle, "a", now - 40 * 86_400).unwrap();
        runs.save_transcript(idle, &[ChatMessage::new(Role::User, "hi")])
            .unwrap();
        inner
            .put("bridge_sessions", idle.as_bytes(), b"{\"seen\":\"then\"}")
            .unwrap();
    }
    // The worker's start, mid-pass: in the map, then its writes.
    let started = Arc::new(AtomicBool::new(false));
    let starting = started.clone();
    *store.hook.lock().unwrap() = Some(Box::new(move |inner: &Arc<MemoryStore>| {
        starting.store(true, Ordering::SeqCst);
        remember(inner, session, now).unwrap();
    }));
    let dyn_store: Arc<dyn Store> = store.clone();
    let live = |s: &str| s == session && started.load(Ordering::SeqCst);
    let report = tollgate::retention::prune_beside_workers(&dyn_store, &config, now, &|s| {
        if live(s) {
            remember(&inner, s, now)
        } else {
            Ok(())
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
        inner.get("bridge_sessions", session.as_bytes()).unwrap(),
        Some(b"{\"seen\":\"now\"}".to_vec()),
        "the chat the live worker remembered is kept"
    );
    assert!(
        RunStore::new(inner.clone()).is_dated(session).unwrap(),
        "the worker's date is kept, so a later pass finds the session"
    );
    assert!(
        inner
            .get("bridge_sessions", other.as_bytes())
            .unwrap()
            .is_none(),
        "an idle session with no worker is forgotten with its chat"
    );
}
