//! Time-ordered index trees for retention: a key is the time (seconds, 8 bytes big-endian, so
//! the tree is in time order) followed by what it dates. Pruning reads such a tree from the
//! oldest entry and stops at the cutoff: it never reads what it keeps.

use super::{Result, Store};

/// `at` then `what`.
#[must_use]
pub fn key(at: u64, what: &[u8]) -> Vec<u8> {
    let mut key = at.to_be_bytes().to_vec();
    key.extend_from_slice(what);
    key
}

/// The time a key made by [`key`] starts with (or any value laid out the same way: seconds,
/// 8 bytes big-endian, then the rest); `None` if it is too short.
#[must_use]
pub fn time_of(key: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(key.get(..8)?.try_into().ok()?))
}

/// The entries of `tree` dated before `before`, oldest first: (index key, what it dates).
pub fn older_than(store: &dyn Store, tree: &str, before: u64) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    Ok(older_than_with_values(store, tree, before)?
        .into_iter()
        .map(|(key, what, _)| (key, what))
        .collect())
}

/// An index entry: its key, what it dates (the key past the time), and its value.
pub type DatedEntry = (Vec<u8>, Vec<u8>, Vec<u8>);

/// [`older_than`], with each entry's value.
pub fn older_than_with_values(
    store: &dyn Store,
    tree: &str,
    before: u64,
) -> Result<Vec<DatedEntry>> {
    Ok(store
        .scan_before(tree, &before.to_be_bytes())?
        .into_iter()
        .filter_map(|(key, value)| {
            let what = key.get(8..)?.to_vec();
            Some((key, what, value))
        })
        .collect())
}

/// Deletes from `tree` the keys `index` dates before `before`, with their index entries;
/// how many were there. (For records that need a look before they go — a settled approval, a
/// finished run — their owners walk [`older_than`] themselves.)
pub fn prune(store: &dyn Store, index: &str, tree: &str, before: u64) -> Result<usize> {
    prune_where(store, index, tree, before, |_| true)
}

/// [`prune`], for records dated before they are done (so that no kill leaves one done and
/// undated): a record `done` says is still live stays, and only its entry goes — it is dated
/// again when it is done.
pub fn prune_where(
    store: &dyn Store,
    index: &str,
    tree: &str,
    before: u64,
    done: impl Fn(&[u8]) -> bool,
) -> Result<usize> {
    let mut pruned = 0;
    for (index_key, key) in older_than(store, index, before)? {
        if store.get(tree, &key)?.is_some_and(|value| done(&value)) {
            store.delete(tree, &key)?;
            pruned += 1;
        }
        store.delete(index, &index_key)?;
    }
    Ok(pruned)
}

/// Dates each of `records` (key, and the time it carries if any) that `index` does not date
/// yet — records written before the index existed — at its own time, or at `now`: kept
/// `retain_days` from then rather than forever; how many.
pub fn date_undated(
    store: &dyn Store,
    index: &str,
    records: impl IntoIterator<Item = (Vec<u8>, Option<u64>)>,
    now: u64,
) -> Result<usize> {
    let dated: std::collections::HashSet<Vec<u8>> = store
        .scan_prefix(index, b"")?
        .into_iter()
        .filter_map(|(index_key, _)| index_key.get(8..).map(<[u8]>::to_vec))
        .collect();
    let mut undated = 0;
    for (what, at) in records {
        if !dated.contains(&what) {
            store.insert(index, &key(at.unwrap_or(now), &what), b"")?;
            undated += 1;
        }
    }
    Ok(undated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    #[test]
    fn reads_stop_at_the_cutoff() {
        let store = MemoryStore::new();
        for (at, what) in [(300, "c"), (100, "a"), (200, "b")] {
            store.insert("t", &key(at, what.as_bytes()), b"").unwrap();
        }
        let old = older_than(&store, "t", 250).unwrap();
        let names: Vec<&[u8]> = old.iter().map(|(_, w)| w.as_slice()).collect();
        assert_eq!(names, [b"a".as_slice(), b"b".as_slice()]);
        assert!(older_than(&store, "t", 100).unwrap().is_empty());
    }
}
