//! Writes the store has accepted and not yet committed. Readers see them laid over what the
//! database holds, so a write is visible the moment it returns, while only the flush talks to
//! the database's writing connection: a session's `put` is a map insert, never a wait for a
//! commit in progress.
//!
//! Each write carries a version. An apply commits a copy of what is pending and then settles
//! it: an entry leaves only if it was not written again since the copy was taken, so a newer
//! write is never dropped by an older commit. Each write is also kept, in the order made, in
//! the tail the journal takes at the next flush.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

/// A pending value: `None` is a pending deletion.
pub(super) type Value = Option<Arc<[u8]>>;

type Rows = Vec<(Vec<u8>, Vec<u8>)>;

#[derive(Default)]
pub(super) struct Pending {
    /// By tree, then key: scans read a key range of one tree without allocating a key.
    /// Names and keys are shared, so a flush's copy of them allocates nothing per write.
    trees: BTreeMap<Arc<str>, BTreeMap<Arc<[u8]>, Write>>,
    next_version: u64,
    /// The keys' and values' bytes held: a writer that takes the map past a limit commits
    /// before going on, so a bulk copy does not pile up in memory.
    bytes: usize,
    /// By tree, how many commits holding writes to it were settled: a scan that let go of
    /// the map while it read the database knows by this whether writes to its tree left the
    /// map meanwhile (a commit to other trees does not make it read again).
    settled: BTreeMap<String, u64>,
    /// The writes made since the journal last took them, in order (sharing the map's bytes).
    tail: Vec<Committing>,
    /// The keys' and values' bytes in the tail (a key written many times counts each time).
    tail_bytes: usize,
}

struct Write {
    value: Value,
    version: u64,
}

/// One write in a flush's copy of what is pending.
pub(super) struct Committing {
    pub tree: Arc<str>,
    pub key: Arc<[u8]>,
    pub value: Value,
    version: u64,
}

impl Committing {
    #[cfg(test)]
    pub fn new(tree: Arc<str>, key: Arc<[u8]>, value: Value) -> Self {
        Committing {
            tree,
            key,
            value,
            version: 0,
        }
    }
}

impl Pending {
    pub fn is_empty(&self) -> bool {
        self.trees.is_empty()
    }

    /// The keys' and values' bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Counts the settled commits that held writes to `tree`.
    pub fn settled(&self, tree: &str) -> u64 {
        self.settled.get(tree).copied().unwrap_or(0)
    }

    /// Accepts a write (`None` deletes).
    pub fn write(&mut self, tree: &str, key: &[u8], value: Option<&[u8]>) {
        self.next_version += 1;
        let bytes = key.len() + value.map_or(0, <[u8]>::len);
        self.bytes += bytes;
        self.tail_bytes += bytes;
        let value: Value = value.map(Arc::from);
        let write = Write {
            value: value.clone(),
            version: self.next_version,
        };
        let tree = match self.trees.get_key_value(tree) {
            Some((name, _)) => name.clone(),
            None => Arc::from(tree),
        };
        let keys = self.trees.entry(tree.clone()).or_default();
        let key = match keys.get_key_value(key) {
            Some((shared, slot)) => {
                let shared = shared.clone();
                self.bytes -= shared.len() + slot.value.as_deref().map_or(0, <[u8]>::len);
                shared
            }
            None => Arc::from(key),
        };
        keys.insert(key.clone(), write);
        self.tail.push(Committing {
            tree,
            key,
            value,
            version: self.next_version,
        });
    }

    /// The keys' and values' bytes in the tail.
    pub fn tail_bytes(&self) -> usize {
        self.tail_bytes
    }

    /// The writes made since the last take, in order, for the journal.
    pub fn take_tail(&mut self) -> Vec<Committing> {
        self.tail_bytes = 0;
        std::mem::take(&mut self.tail)
    }

    /// Puts back a tail the journal could not write, before what was written since.
    pub fn restore_tail(&mut self, mut taken: Vec<Committing>) {
        self.tail_bytes += taken
            .iter()
            .map(|w| w.key.len() + w.value.as_deref().map_or(0, <[u8]>::len))
            .sum::<usize>();
        taken.append(&mut self.tail);
        self.tail = taken;
    }

    /// What is pending for `key`: `None` when nothing is (the database has the latest value),
    /// `Some(None)` for a pending deletion.
    pub fn get(&self, tree: &str, key: &[u8]) -> Option<Option<&[u8]>> {
        let write = self.trees.get(tree)?.get(key)?;
        Some(write.value.as_deref())
    }

    /// `committed` — the database's rows of `tree` from `from` (and before `before`), in key
    /// order — with what is pending in that range laid over it.
    pub fn lay_over(
        &self,
        tree: &str,
        from: &[u8],
        before: Option<&[u8]>,
        committed: Rows,
    ) -> Rows {
        let Some(keys) = self.trees.get(tree) else {
            return committed;
        };
        if before.is_some_and(|end| end < from) {
            // An empty range (and one `BTreeMap::range` would refuse).
            return Vec::new();
        }
        let end = before.map_or(Bound::Unbounded, Bound::Excluded);
        let mut pending = keys
            .range::<[u8], _>((Bound::Included(from), end))
            .peekable();
        if pending.peek().is_none() {
            return committed;
        }
        let mut merged = Vec::with_capacity(committed.len());
        let mut committed = committed.into_iter().peekable();
        loop {
            // Which comes first: the committed row (`Less`), the pending write (`Greater`),
            // or both for one key (`Equal`: the pending write replaces or deletes the row).
            let first = match (committed.peek(), pending.peek()) {
                (None, None) => break,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some((row_key, _)), Some((pending_key, _))) => row_key.as_slice().cmp(pending_key),
            };
            if first == Ordering::Less {
                merged.extend(committed.next());
                continue;
            }
            if first == Ordering::Equal {
                committed.next();
            }
            if let Some((key, write)) = pending.next()
                && let Some(value) = &write.value
            {
                merged.push((key.to_vec(), value.to_vec()));
            }
        }
        merged
    }

    /// The trees that have pending writes.
    pub fn trees(&self) -> impl Iterator<Item = &str> {
        self.trees.keys().map(|tree| &**tree)
    }

    /// A copy of everything pending, for a flush to commit (values are shared, not copied).
    pub fn to_commit(&self) -> Vec<Committing> {
        self.trees
            .iter()
            .flat_map(|(tree, keys)| {
                keys.iter().map(move |(key, write)| Committing {
                    tree: tree.clone(),
                    key: key.clone(),
                    value: write.value.clone(),
                    version: write.version,
                })
            })
            .collect()
    }

    /// After `committed` was committed: drops each entry not written again since.
    pub fn settle(&mut self, committed: &[Committing]) {
        let mut last_tree: Option<&str> = None;
        for write in committed {
            // A copy lists each tree's writes together: count each tree once.
            if last_tree != Some(&*write.tree) {
                last_tree = Some(&*write.tree);
                match self.settled.get_mut(&*write.tree) {
                    Some(count) => *count += 1,
                    None => {
                        self.settled.insert(write.tree.to_string(), 1);
                    }
                }
            }
            let Some(keys) = self.trees.get_mut(&*write.tree) else {
                continue;
            };
            if keys
                .get(&*write.key)
                .is_some_and(|pending| pending.version == write.version)
            {
                if let Some(settled) = keys.remove(&*write.key) {
                    self.bytes -= write.key.len() + settled.value.as_deref().map_or(0, <[u8]>::len);
                }
                if keys.is_empty() {
                    self.trees.remove(&*write.tree);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(pairs: &[(&str, &str)]) -> Rows {
        pairs
            .iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn pending_writes_replace_delete_and_add_to_the_committed_rows_in_key_order() {
        let mut pending = Pending::default();
        pending.write("t", b"b", Some(b"B2"));
        pending.write("t", b"c", None);
        pending.write("t", b"d", Some(b"D"));
        pending.write("t", b"a0", None);
        pending.write("other", b"b", Some(b"X"));
        let committed = rows(&[("a", "A"), ("b", "B"), ("c", "C"), ("e", "E")]);
        assert_eq!(
            pending.lay_over("t", b"", None, committed.clone()),
            rows(&[("a", "A"), ("b", "B2"), ("d", "D"), ("e", "E")])
        );
        // Only the asked range of the pending writes is laid over.
        assert_eq!(
            pending.lay_over("t", b"b", Some(b"d"), rows(&[("b", "B"), ("c", "C")])),
            rows(&[("b", "B2")])
        );
        assert_eq!(
            pending.lay_over("none", b"", None, committed.clone()),
            committed
        );
        assert_eq!(pending.get("t", b"c"), Some(None));
        assert_eq!(pending.get("t", b"b"), Some(Some(&b"B2"[..])));
        assert_eq!(pending.get("t", b"a"), None);
    }

    #[test]
    fn settling_a_commit_keeps_what_was_written_after_its_copy() {
        let mut pending = Pending::default();
        pending.write("t", b"k", Some(b"1"));
        pending.write("t", b"gone", Some(b"1"));
        let copy = pending.to_commit();
        pending.write("t", b"k", Some(b"2"));
        pending.settle(&copy);
        assert_eq!(pending.get("t", b"gone"), None);
        assert_eq!(pending.get("t", b"k"), Some(Some(&b"2"[..])));
        assert_eq!(pending.bytes(), 2);
        let copy = pending.to_commit();
        pending.settle(&copy);
        assert!(pending.is_empty());
        assert_eq!(pending.bytes(), 0);
        assert_eq!(pending.settled("t"), 2);
        assert_eq!(pending.settled("other"), 0);
    }

    #[test]
    fn the_bytes_held_follow_replacements_and_deletions() {
        let mut pending = Pending::default();
        pending.write("t", b"key", Some(b"12345"));
        assert_eq!(pending.bytes(), 8);
        pending.write("t", b"key", Some(b"1"));
        assert_eq!(pending.bytes(), 4);
        pending.write("t", b"key", None);
        assert_eq!(pending.bytes(), 3);
        assert!(
            pending
                .lay_over("t", b"z", Some(b"a"), Vec::new())
                .is_empty(),
            "a range that ends before it starts is empty"
        );
    }
}
