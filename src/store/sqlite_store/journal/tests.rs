use super::*;
use std::sync::Arc;

/// The database the tests' journals belong to.
const DB: u64 = 7;

fn put(tree: &str, key: &str, value: &str) -> Committing {
    Committing::new(
        Arc::from(tree),
        Arc::from(key.as_bytes()),
        Some(Arc::from(value.as_bytes())),
    )
}

fn delete(tree: &str, key: &str) -> Committing {
    Committing::new(Arc::from(tree), Arc::from(key.as_bytes()), None)
}

fn replayed(tree: &str, key: &str, value: Option<&str>) -> Replayed {
    (
        tree.to_string(),
        key.as_bytes().to_vec(),
        value.map(|v| v.as_bytes().to_vec()),
    )
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn what_was_written_after_the_applied_generation_is_replayed_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, replay, through) = Journal::open(dir.path(), DB, 0).unwrap();
    assert!(replay.is_empty());
    assert_eq!(through, 0);
    journal
        .write(&[put("t", "a", "1"), put("u", "b", "2")])
        .unwrap();
    journal.write(&[delete("t", "a")]).unwrap();
    journal.sync().unwrap();
    let first = journal.rotate();
    journal.write(&[put("t", "a", "3")]).unwrap();
    journal.sync().unwrap();
    drop(journal);

    // Nothing applied: both generations, in the order written.
    let (_, replay, through) = Journal::open(dir.path(), DB, 0).unwrap();
    assert_eq!(
        replay,
        vec![
            replayed("t", "a", Some("1")),
            replayed("u", "b", Some("2")),
            replayed("t", "a", None),
            replayed("t", "a", Some("3")),
        ]
    );
    assert_eq!(through, first + 1);
    // The first applied: only the second.
    let (journal, replay, through) = Journal::open(dir.path(), DB, first).unwrap();
    assert_eq!(replay, vec![replayed("t", "a", Some("3"))]);
    assert_eq!(through, first + 1);
    assert!(
        journal.generation() > through,
        "a new generation is past every old one"
    );
}

#[test]
fn a_torn_or_damaged_record_ends_its_generation() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _, _) = Journal::open(dir.path(), DB, 0).unwrap();
    journal.write(&[put("t", "kept", "1")]).unwrap();
    journal.write(&[put("t", "torn", "2")]).unwrap();
    journal.sync().unwrap();
    drop(journal);
    let path = dir.path().join(format!("{FILE_PREFIX}0"));
    let whole = std::fs::read(&path).unwrap();

    // The last record cut short, as a kill during its write leaves it.
    std::fs::write(&path, &whole[..whole.len() - 3]).unwrap();
    let (_, replay, _) = Journal::open(dir.path(), DB, 0).unwrap();
    assert_eq!(replay, vec![replayed("t", "kept", Some("1"))]);

    // A byte of its payload changed: its checksum fails.
    let mut damaged = whole.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 0x40;
    std::fs::write(&path, &damaged).unwrap();
    let (_, replay, _) = Journal::open(dir.path(), DB, 0).unwrap();
    assert_eq!(replay, vec![replayed("t", "kept", Some("1"))]);

    // A damaged header: the file holds nothing.
    let mut headless = whole;
    headless[17] ^= 1;
    std::fs::write(&path, &headless).unwrap();
    let (_, replay, through) = Journal::open(dir.path(), DB, 0).unwrap();
    assert!(replay.is_empty());
    assert_eq!(through, 0);
}

#[test]
fn a_file_is_reused_once_its_generation_is_applied_and_never_before() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _, _) = Journal::open(dir.path(), DB, 0).unwrap();
    // A long first generation, so that its records outlast the next one's in the file.
    let long: Vec<Committing> = (0..50).map(|i| put("t", &format!("old{i}"), "x")).collect();
    journal.write(&long).unwrap();
    journal.sync().unwrap();
    let first = journal.rotate();
    journal.write(&[put("t", "second", "2")]).unwrap();
    journal.sync().unwrap();
    assert_eq!(
        files(dir.path()).len(),
        2,
        "the first is not applied: a new file"
    );

    // The database takes the first generation; the third reuses its file.
    journal.applied_through(first);
    let second = journal.rotate();
    journal.write(&[put("t", "third", "3")]).unwrap();
    journal.sync().unwrap();
    assert_eq!(files(dir.path()).len(), 2);
    drop(journal);

    // The first generation's records after the third's are not replayed.
    let (_, replay, through) = Journal::open(dir.path(), DB, first).unwrap();
    assert_eq!(
        replay,
        vec![
            replayed("t", "second", Some("2")),
            replayed("t", "third", Some("3"))
        ]
    );
    assert_eq!(through, second + 1);
    let (_, replay, _) = Journal::open(dir.path(), DB, second).unwrap();
    assert_eq!(replay, vec![replayed("t", "third", Some("3"))]);
}

#[test]
fn applied_files_are_emptied_and_reused() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _, _) = Journal::open(dir.path(), DB, 0).unwrap();
    journal.write(&[put("t", "a", "1")]).unwrap();
    let closed = journal.rotate();
    journal.write(&[put("t", "b", "2")]).unwrap();
    journal.applied_through(closed);
    journal.empty_applied().unwrap();
    let sizes: Vec<u64> = (0..2)
        .map(|n| {
            std::fs::metadata(dir.path().join(format!("{FILE_PREFIX}{n}")))
                .unwrap()
                .len()
        })
        .collect();
    assert_eq!(sizes[0], 0, "the applied generation's file is emptied");
    assert!(sizes[1] > 0, "the unapplied one is kept");
    drop(journal);
    let (_, replay, _) = Journal::open(dir.path(), DB, closed).unwrap();
    assert_eq!(replay, vec![replayed("t", "b", Some("2"))]);
}

#[test]
fn values_of_every_size_and_byte_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _, _) = Journal::open(dir.path(), DB, 0).unwrap();
    let binary: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
    let write = Committing::new(
        Arc::from("tree"),
        Arc::from(&b"\0key\xff"[..]),
        Some(Arc::from(&binary[..])),
    );
    journal
        .write(&[write, put("t", "", ""), delete("t", "")])
        .unwrap();
    journal.sync().unwrap();
    drop(journal);
    let (_, replay, _) = Journal::open(dir.path(), DB, 0).unwrap();
    assert_eq!(
        replay,
        vec![
            ("tree".to_string(), b"\0key\xff".to_vec(), Some(binary)),
            replayed("t", "", Some("")),
            replayed("t", "", None),
        ]
    );
}

#[test]
fn another_databases_files_are_not_replayed_and_are_reused() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _, _) = Journal::open(dir.path(), DB, 0).unwrap();
    journal.write(&[put("t", "old", "1")]).unwrap();
    journal.sync().unwrap();
    drop(journal);
    // The database was deleted and made afresh: another number, nothing applied.
    let (mut journal, replay, through) = Journal::open(dir.path(), DB + 1, 0).unwrap();
    assert!(replay.is_empty());
    assert_eq!(through, 0);
    journal.write(&[put("t", "new", "2")]).unwrap();
    journal.sync().unwrap();
    drop(journal);
    assert_eq!(files(dir.path()).len(), 1, "the old file was reused");
    let (_, replay, _) = Journal::open(dir.path(), DB + 1, 0).unwrap();
    assert_eq!(replay, vec![replayed("t", "new", Some("2"))]);
}
