use super::*;
use crate::store::MemoryStore;

#[test]
fn a_reminders_run_is_told_from_a_messages_and_another_sessions() {
    let reminder = Reminder {
        id: "r1".into(),
        session: "telegram:10".into(),
        agent: "a".into(),
        message: "stretch".into(),
        due: 0,
        created: String::new(),
        fired: false,
    };
    assert!(is_reminder_run(&reminder.run_id(), "telegram:10"));
    assert!(!is_reminder_run(&reminder.run_id(), "telegram:1"));
    assert!(!is_reminder_run(
        "telegram:10:2026-12-02T03:00:00.000Z:1",
        "telegram:10"
    ));
    assert!(!is_reminder_run("telegram:10:sub:1f:run", "telegram:10"));
}

#[test]
fn parses_times() {
    assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(parse_rfc3339("2026-11-29T23:00:00Z"), Some(1_795_993_200));
    assert_eq!(
        parse_rfc3339("2026-11-30T01:00:00+02:00"),
        Some(1_795_993_200)
    );
    assert_eq!(
        parse_rfc3339("2026-11-29T23:00:00.500Z"),
        Some(1_795_993_200)
    );
    assert_eq!(parse_rfc3339("tomorrow"), None);
    assert_eq!(parse_rfc3339("2026-13-01T00:00:00Z"), None);
    // What the hand-written parser accepted or panicked on.
    assert_eq!(parse_rfc3339("2026-02-31T10:00:00Z"), None);
    assert_eq!(parse_rfc3339("2026-11-29T10:00:00+99:99"), None);
    assert_eq!(parse_rfc3339("9999999999999999-01-01T00:00:00Z"), None);
    assert_eq!(parse_rfc3339("1969-12-31T23:59:59Z"), None);
}

/// A claimed reminder stays marked until its run is over, and a restart delivers it again
/// only if its run was never recorded.
#[test]
fn a_claimed_reminder_whose_run_was_never_recorded_is_delivered_again() {
    let store = Arc::new(MemoryStore::new());
    let reminders = Reminders::new(store.clone());
    let r = |id: &str| reminder(id, "telegram:1", 100, false);
    for id in ["lost", "recorded", "over"] {
        reminders.add(&r(id)).unwrap();
    }
    reminders
        .add(&Reminder {
            due: 500,
            ..r("later")
        })
        .unwrap();
    assert_eq!(reminders.take_due(100, |_| true).unwrap().len(), 3);
    reminders.delivered("over").unwrap();
    let recorded = |run: &str| Ok(run == r("recorded").run_id());
    let again = reminders.undelivered(|_| true, recorded).unwrap();
    let ids: Vec<&str> = again.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["lost"]);
    // Another process's reminders are left to it, marks and all.
    assert!(
        reminders
            .undelivered(|_| false, recorded)
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.scan_prefix(DELIVERING_TREE, b"").unwrap().len(), 1);
    assert_eq!(reminders.undelivered(|_| true, recorded).unwrap().len(), 1);
}

#[test]
fn due_reminders_fire_once() {
    let reminders = Reminders::new(Arc::new(MemoryStore::new()));
    let r = Reminder {
        id: "r1".into(),
        session: "console:me".into(),
        agent: "a".into(),
        message: "stretch".into(),
        due: 100,
        created: "then".into(),
        fired: false,
    };
    reminders.add(&r).unwrap();
    assert!(reminders.take_due(99, |_| true).unwrap().is_empty());
    assert!(
        reminders
            .take_due(100, |x| x.session == "other")
            .unwrap()
            .is_empty()
    );
    assert_eq!(reminders.take_due(500, |_| true).unwrap(), vec![r.clone()]);
    assert!(
        reminders.take_due(600, |_| true).unwrap().is_empty(),
        "never twice"
    );
    assert!(reminders.pending("console:me").unwrap().is_empty());
    assert!(r.firing_text(400).contains("6 min late"));
    // Fired at 500: kept until retention's cutoff passes that.
    let store = reminders.store.as_ref();
    assert_eq!(Reminders::prune_fired(store, 500).unwrap(), 0);
    assert_eq!(Reminders::prune_fired(store, 501).unwrap(), 1);
    assert!(store.get(REMINDERS_TREE, b"r1").unwrap().is_none());
}

#[test]
fn an_add_between_its_two_writes_is_not_lost_and_an_undeliverable_one_is_pruned() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let reminders = Reminders::new(store.clone());
    // The index entry of an `add` whose record is not written yet, due now.
    store
        .insert(DUE_TREE, &aged::key(100, b"late"), b"")
        .unwrap();
    assert!(reminders.take_due(100, |_| true).unwrap().is_empty());
    let late = reminder("late", "s", 100, false);
    store
        .insert(REMINDERS_TREE, b"late", &serde_json::to_vec(&late).unwrap())
        .unwrap();
    // Nobody here can deliver it: it stays due, until retention's cutoff passes it.
    assert!(reminders.take_due(200, |_| false).unwrap().is_empty());
    assert_eq!(Reminders::prune_fired(store.as_ref(), 100).unwrap(), 0);
    assert_eq!(Reminders::prune_fired(store.as_ref(), 101).unwrap(), 1);
    assert!(reminders.take_due(200, |_| true).unwrap().is_empty());
    // An orphan entry (no record long after it was due) is dropped.
    store
        .insert(DUE_TREE, &aged::key(10, b"gone"), b"")
        .unwrap();
    reminders.take_due(200, |_| true).unwrap();
    assert!(store.scan_prefix(DUE_TREE, b"").unwrap().is_empty());
}

/// A reminder of agent `a` (the tests that write it as an older tollgate did pass it to
/// [`store_record`]).
fn reminder(id: &str, session: &str, due: u64, fired: bool) -> Reminder {
    Reminder {
        id: id.into(),
        session: session.into(),
        agent: "a".into(),
        message: "m".into(),
        due,
        created: "then".into(),
        fired,
    }
}

/// Writes `r`'s record alone, as a store written before an index holds it.
fn store_record(store: &dyn Store, r: &Reminder) {
    store
        .insert(
            REMINDERS_TREE,
            r.id.as_bytes(),
            &serde_json::to_vec(r).unwrap(),
        )
        .unwrap();
}

#[test]
fn a_store_written_before_the_index_is_indexed_once() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let old = |id: &str, due: u64, fired: bool| reminder(id, "s", due, fired);
    for r in [old("a", 10, false), old("b", 20, true)] {
        store_record(store.as_ref(), &r);
    }
    Reminders::index_existing(store.as_ref()).unwrap();
    let reminders = Reminders::new(store.clone());
    let due: Vec<String> = reminders
        .take_due(100, |_| true)
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(due, ["a"]);
    assert_eq!(Reminders::prune_fired(store.as_ref(), 21).unwrap(), 1);
    assert!(store.get(REMINDERS_TREE, b"b").unwrap().is_none());
}

/// A store written with the due index but before the session index: its unfired
/// reminders are listed after the upgrade, and leave the list when they fire.
#[test]
fn a_store_written_before_the_session_index_lists_its_reminders_once_upgraded() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let old = |id: &str, due: u64, fired: bool| reminder(id, "telegram:1", due, fired);
    for r in [
        old("soon", 10, false),
        old("later", 900, false),
        old("done", 5, true),
    ] {
        let index = if r.fired { FIRED_TREE } else { DUE_TREE };
        store
            .insert(index, &aged::key(r.due, r.id.as_bytes()), b"")
            .unwrap();
        store_record(store.as_ref(), &r);
    }
    store
        .insert(crate::store::migrate::META_TREE, INDEXED_MARKER, b"1")
        .unwrap();
    let reminders = Reminders::new(store.clone());
    assert!(
        reminders.pending("telegram:1").unwrap().is_empty(),
        "not yet"
    );
    Reminders::index_existing(store.as_ref()).unwrap();
    let ids = |list: Vec<Reminder>| list.into_iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(
        ids(reminders.pending("telegram:1").unwrap()),
        ["soon", "later"]
    );
    assert_eq!(
        store
            .get(DUE_TREE, &aged::key(900, b"later"))
            .unwrap()
            .as_deref(),
        Some(b"telegram:1".as_slice()),
        "its due entry names its session now"
    );
    assert_eq!(ids(reminders.take_due(100, |_| true).unwrap()), ["soon"]);
    // A kill after a cancel's first write: the entries go as any orphan's do.
    store.delete(REMINDERS_TREE, b"later").unwrap();
    reminders
        .take_due(900 + ORPHAN_AFTER_SECS + 1, |_| true)
        .unwrap();
    assert!(reminders.pending("telegram:1").unwrap().is_empty());
    assert!(store.scan_prefix(BY_SESSION_TREE, b"").unwrap().is_empty());
    assert!(store.scan_prefix(DUE_TREE, b"").unwrap().is_empty());
}
