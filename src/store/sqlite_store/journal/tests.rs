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

/// `count` writes of one size, each its own record (one `write` each).
fn records_of_one_size(journal: &mut Journal, prefix: &str, count: usize) {
    for i in 0..count {
        journal
            .write(&[put("t", &format!("{prefix}{i:02}"), "x")])
            .unwrap();
    }
}

#[test]
fn a_file_is_reused_once_its_generation_is_applied_and_never_before() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _, _) = Journal::open(dir.path(), DB, 0).unwrap();
    // A long first generation of records the size of the third's, so that one of them
    // starts exactly where the third's record ends.
    records_of_one_size(&mut journal, "old", 50);
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
    records_of_one_size(&mut journal, "new", 1);
    journal.sync().unwrap();
    assert_eq!(files(dir.path()).len(), 2);
    drop(journal);

    // The first generation's records after the third's are not replayed.
    let (_, replay, through) = Journal::open(dir.path(), DB, first).unwrap();
    assert_eq!(
        replay,
        vec![
            replayed("t", "second", Some("2")),
            replayed("t", "new00", Some("x"))
        ]
    );
    assert_eq!(through, second + 1);
    let (_, replay, _) = Journal::open(dir.path(), DB, second).unwrap();
    assert_eq!(replay, vec![replayed("t", "new00", Some("x"))]);
}

/// A header a power cut lost (the file's earlier records kept) is read as no header: the next
/// open gives the same generation again and rewrites the file from its start. The earlier
/// records after the new one carry that generation and a sound checksum of their own, but
/// not the new header's random number, so they are not replayed.
#[test]
fn records_under_a_lost_header_do_not_pass_for_new_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _, _) = Journal::open(dir.path(), DB, 0).unwrap();
    let generation = journal.generation();
    records_of_one_size(&mut journal, "old", 3);
    journal.sync().unwrap();
    drop(journal);
    let path = dir.path().join(format!("{FILE_PREFIX}0"));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[0] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();

    let (mut journal, replay, _) = Journal::open(dir.path(), DB, 0).unwrap();
    assert!(replay.is_empty());
    assert_eq!(
        journal.generation(),
        generation,
        "the same generation again"
    );
    records_of_one_size(&mut journal, "new", 1);
    journal.sync().unwrap();
    drop(journal);
    assert_eq!(files(dir.path()).len(), 1, "the file was reused");
    let (_, replay, _) = Journal::open(dir.path(), DB, 0).unwrap();
    assert_eq!(replay, vec![replayed("t", "new00", Some("x"))]);
}

/// New files are named past every file there: one removed by hand, or made by hand under the
/// next name, does not stop the journal.
#[test]
fn a_new_file_takes_a_name_no_file_has() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _, _) = Journal::open(dir.path(), DB, 0).unwrap();
    journal.write(&[put("t", "a", "1")]).unwrap();
    journal.rotate();
    journal.write(&[put("t", "b", "2")]).unwrap();
    journal.sync().unwrap();
    drop(journal);
    std::fs::remove_file(dir.path().join(format!("{FILE_PREFIX}0"))).unwrap();

    let (mut journal, replay, _) = Journal::open(dir.path(), DB, 0).unwrap();
    assert_eq!(replay, vec![replayed("t", "b", Some("2"))]);
    std::fs::write(dir.path().join(format!("{FILE_PREFIX}2")), b"").unwrap();
    // `-1` holds an unapplied generation: a new file, under neither `-1` nor `-2`.
    journal.write(&[put("t", "c", "3")]).unwrap();
    journal.sync().unwrap();
    drop(journal);
    assert_eq!(
        files(dir.path()),
        vec![
            format!("{FILE_PREFIX}1"),
            format!("{FILE_PREFIX}2"),
            format!("{FILE_PREFIX}3")
        ]
    );
    let (_, replay, _) = Journal::open(dir.path(), DB, 0).unwrap();
    assert_eq!(
        replay,
        vec![replayed("t", "b", Some("2")), replayed("t", "c", Some("3"))]
    );
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
    // The next generation writes the emptied file again: no third file.
    journal.rotate();
    journal.write(&[put("t", "c", "3")]).unwrap();
    journal.sync().unwrap();
    assert_eq!(files(dir.path()).len(), 2);
    let first = std::fs::metadata(dir.path().join(format!("{FILE_PREFIX}0"))).unwrap();
    assert!(first.len() > 0, "the emptied file holds the new generation");
    drop(journal);
    let (_, replay, _) = Journal::open(dir.path(), DB, closed).unwrap();
    assert_eq!(
        replay,
        vec![replayed("t", "b", Some("2")), replayed("t", "c", Some("3"))]
    );
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
    records_of_one_size(&mut journal, "old", 2);
    journal.sync().unwrap();
    let old = journal.generation();
    drop(journal);
    // The database was deleted and made afresh: another number, nothing applied.
    let (mut journal, replay, through) = Journal::open(dir.path(), DB + 1, 0).unwrap();
    assert!(replay.is_empty());
    assert_eq!(through, 0);
    assert!(
        journal.generation() > old,
        "past the old database's generations"
    );
    records_of_one_size(&mut journal, "new", 1);
    journal.sync().unwrap();
    drop(journal);
    assert_eq!(files(dir.path()).len(), 1, "the old file was reused");
    // The old database's second record, just after the new one, is not replayed.
    let (_, replay, _) = Journal::open(dir.path(), DB + 1, 0).unwrap();
    assert_eq!(replay, vec![replayed("t", "new00", Some("x"))]);
}
