//! The store's hot paths read only what they need, however much history the store holds:
//! counted with a store that tallies every record it hands out, over 10,000 settled approvals
//! and 10,000 finished runs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tollgate::agent::runs::{RunPhase, RunRecord, RunStore};
use tollgate::approvals::{
    ApprovalChoice, ApprovalToken, PendingApproval, PendingApprovals, PendingState,
};
use tollgate::store::{MemoryStore, Store, StoreError};
use tollgate_surface::{CardRef, ChatRef, Platform};

/// A store that counts the records it hands out, per tree.
#[derive(Default)]
struct Counting {
    inner: MemoryStore,
    read: Mutex<HashMap<String, usize>>,
}

impl Counting {
    fn count(&self, tree: &str, n: usize) {
        *self
            .read
            .lock()
            .unwrap()
            .entry(tree.to_string())
            .or_default() += n;
    }

    /// Records read from `tree` since the last call (the count starts over).
    fn take(&self, tree: &str) -> usize {
        self.read.lock().unwrap().remove(tree).unwrap_or(0)
    }

    fn reset(&self) {
        self.read.lock().unwrap().clear();
    }
}

type R<T> = Result<T, StoreError>;

impl Store for Counting {
    fn get(&self, tree: &str, key: &[u8]) -> R<Option<Vec<u8>>> {
        let got = self.inner.get(tree, key)?;
        self.count(tree, usize::from(got.is_some()));
        Ok(got)
    }
    fn insert(&self, tree: &str, key: &[u8], value: &[u8]) -> R<Option<Vec<u8>>> {
        self.inner.insert(tree, key, value)
    }
    fn remove(&self, tree: &str, key: &[u8]) -> R<Option<Vec<u8>>> {
        self.inner.remove(tree, key)
    }
    fn scan_prefix(&self, tree: &str, prefix: &[u8]) -> R<Vec<(Vec<u8>, Vec<u8>)>> {
        let all = self.inner.scan_prefix(tree, prefix)?;
        self.count(tree, all.len());
        Ok(all)
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
    }
}

fn run(id: &str, phase: RunPhase) -> RunRecord {
    RunRecord {
        id: id.into(),
        session: "telegram:1".into(),
        agent: "a".into(),
        round: 1,
        phase,
        calls: Vec::new(),
        usage: Default::default(),
    }
}

#[test]
fn a_prompt_a_card_edit_and_the_expiry_sweep_read_only_what_they_need() {
    let store = Arc::new(Counting::default());
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
    // Both sweeps read the one waiting entry, and nothing of the settled history.
    assert_eq!(store.take("approvals_waiting"), 2);

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
    let approvals = PendingApprovals::new(store.clone());
    assert_eq!(approvals.waiting().unwrap(), vec![old.clone()]);
    assert_eq!(
        approvals
            .for_call(&old.session, &old.run, &old.call_id)
            .unwrap(),
        Some(old.clone())
    );
    let runs = RunStore::new(store.clone());
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
