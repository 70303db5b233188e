//! Writes the store has accepted and the database does not hold yet. Readers see them laid
//! over what the database holds, so a write is visible the moment it returns, while only an
//! apply talks to the database's writing connection: a session's `put` is a map insert, never
//! a wait for a commit in progress.
//!
//! Two layers: the writes since the last apply began (`current`), and the maps an apply is
//! committing or failed to commit (`frozen`, oldest first), read beneath `current`. An apply
//! freezes `current` in one move (a new empty map takes its place: no copy under the lock
//! writers wait for), commits the frozen maps in order outside it, then drops them whole.
//! Each write is also kept, in the order made, in the tail the journal takes at the next
//! flush.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

/// A pending value: `None` is a pending deletion.
pub(super) type Value = Option<Arc<[u8]>>;

type Rows = Vec<(Vec<u8>, Vec<u8>)>;

/// One layer of writes: by tree, then key (scans read a key range of one tree without
/// allocating a key). Names and keys are shared with the journal's tail.
#[derive(Default)]
pub(super) struct Writes {
    trees: BTreeMap<Arc<str>, TreeWrites>,
    /// The keys' and values' bytes held.
    bytes: usize,
}

struct TreeWrites {
    name: Arc<str>,
    keys: BTreeMap<Arc<[u8]>, Slot>,
}

struct Slot {
    key: Arc<[u8]>,
    value: Value,
}

impl Writes {
    /// Every write, tree by tree in key order: `(tree, key, value)`.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[u8], Option<&[u8]>)> {
        self.trees.iter().flat_map(|(tree, writes)| {
            writes
                .keys
                .iter()
                .map(move |(key, slot)| (&**tree, &**key, slot.value.as_deref()))
        })
    }

    fn get(&self, tree: &str, key: &[u8]) -> Option<Option<&[u8]>> {
        let slot = self.trees.get(tree)?.keys.get(key)?;
        Some(slot.value.as_deref())
    }

    /// `rows` (in key order, of `tree` from `from` and before `before`) with this layer's
    /// writes in that range laid over them.
    fn lay_over(&self, tree: &str, from: &[u8], before: Option<&[u8]>, rows: Rows) -> Rows {
        let Some(writes) = self.trees.get(tree) else {
            return rows;
        };
        let end = before.map_or(Bound::Unbounded, Bound::Excluded);
        let mut pending = writes
            .keys
            .range::<[u8], _>((Bound::Included(from), end))
            .peekable();
        if pending.peek().is_none() {
            return rows;
        }
        let mut merged = Vec::with_capacity(rows.len());
        let mut rows = rows.into_iter().peekable();
        loop {
            // Which comes first: the row (`Less`), the pending write (`Greater`), or both for
            // one key (`Equal`: the pending write replaces or deletes the row).
            let first = match (rows.peek(), pending.peek()) {
                (None, None) => break,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some((row_key, _)), Some((pending_key, _))) => row_key.as_slice().cmp(pending_key),
            };
            if first == Ordering::Less {
                merged.extend(rows.next());
                continue;
            }
            if first == Ordering::Equal {
                rows.next();
            }
            if let Some((key, slot)) = pending.next()
                && let Some(value) = &slot.value
            {
                merged.push((key.to_vec(), value.to_vec()));
            }
        }
        merged
    }
}

#[derive(Default)]
pub(super) struct Pending {
    current: Writes,
    /// Frozen layers, oldest first, shared with the apply committing them.
    frozen: Vec<Arc<Writes>>,
    /// By tree, how many applies holding writes to it were settled: a scan that let go of
    /// the map while it read the database knows by this whether writes to its tree left the
    /// map meanwhile (an apply to other trees does not make it read again).
    settled: BTreeMap<String, u64>,
    /// How many applies were settled, whatever their trees: a read of the database may use
    /// a snapshot taken at this count while it is unchanged (`reader`).
    settles: u64,
    /// The writes made since the journal last took them, in order (sharing the map's bytes).
    tail: Vec<Committing>,
    /// The keys' and values' bytes in the tail (a key written many times counts each time).
    tail_bytes: usize,
}

/// One write in the order made, for the journal.
pub(super) struct Committing {
    pub tree: Arc<str>,
    pub key: Arc<[u8]>,
    pub value: Value,
}

#[cfg(test)]
impl Committing {
    pub fn new(tree: Arc<str>, key: Arc<[u8]>, value: Value) -> Self {
        Committing { tree, key, value }
    }
}

impl Pending {
    pub fn is_empty(&self) -> bool {
        self.current.trees.is_empty() && self.frozen.is_empty()
    }

    /// The keys' and values' bytes held in every layer.
    pub fn bytes(&self) -> usize {
        self.current.bytes + self.frozen.iter().map(|f| f.bytes).sum::<usize>()
    }

    /// Counts the settled applies that held writes to `tree`.
    pub fn settled(&self, tree: &str) -> u64 {
        self.settled.get(tree).copied().unwrap_or(0)
    }

    /// Counts the settled applies, whatever their trees.
    pub fn settles(&self) -> u64 {
        self.settles
    }

    /// Accepts a write (`None` deletes).
    pub fn write(&mut self, tree: &str, key: &[u8], value: Option<&[u8]>) {
        let bytes = key.len() + value.map_or(0, <[u8]>::len);
        self.current.bytes += bytes;
        self.tail_bytes += bytes;
        let value: Value = value.map(Arc::from);
        let writes = match self.current.trees.get_mut(tree) {
            Some(writes) => writes,
            None => {
                let name: Arc<str> = Arc::from(tree);
                self.current
                    .trees
                    .entry(name.clone())
                    .or_insert(TreeWrites {
                        name,
                        keys: BTreeMap::new(),
                    })
            }
        };
        // One search when the key is pending already (a session's transcript, a run's record).
        let key = match writes.keys.get_mut(key) {
            Some(slot) => {
                self.current.bytes -= slot.key.len() + slot.value.as_deref().map_or(0, <[u8]>::len);
                slot.value = value.clone();
                slot.key.clone()
            }
            None => {
                let key: Arc<[u8]> = Arc::from(key);
                writes.keys.insert(
                    key.clone(),
                    Slot {
                        key: key.clone(),
                        value: value.clone(),
                    },
                );
                key
            }
        };
        self.tail.push(Committing {
            tree: writes.name.clone(),
            key,
            value,
        });
    }

    /// What is pending for `key`: `None` when nothing is (the database has the latest value),
    /// `Some(None)` for a pending deletion.
    pub fn get(&self, tree: &str, key: &[u8]) -> Option<Option<&[u8]>> {
        self.current
            .get(tree, key)
            .or_else(|| self.frozen.iter().rev().find_map(|f| f.get(tree, key)))
    }

    /// `committed` — the database's rows of `tree` from `from` (and before `before`), in key
    /// order — with what is pending in that range laid over it, oldest layer first.
    pub fn lay_over(
        &self,
        tree: &str,
        from: &[u8],
        before: Option<&[u8]>,
        committed: Rows,
    ) -> Rows {
        if before.is_some_and(|end| end < from) {
            // An empty range (and one `BTreeMap::range` would refuse).
            return Vec::new();
        }
        let rows = self
            .frozen
            .iter()
            .fold(committed, |rows, f| f.lay_over(tree, from, before, rows));
        self.current.lay_over(tree, from, before, rows)
    }

    /// The trees that have pending writes.
    pub fn trees(&self) -> impl Iterator<Item = &str> {
        self.frozen
            .iter()
            .flat_map(|f| f.trees.keys())
            .chain(self.current.trees.keys())
            .map(|tree| &**tree)
    }

    /// Freezes the current layer (if it holds anything) and returns every frozen layer,
    /// oldest first, for an apply to commit in that order.
    pub fn freeze(&mut self) -> Vec<Arc<Writes>> {
        if !self.current.trees.is_empty() {
            self.frozen
                .push(Arc::new(std::mem::take(&mut self.current)));
        }
        self.frozen.clone()
    }

    /// After the first `count` frozen layers were committed: drops them.
    pub fn settle(&mut self, count: usize) {
        let count = count.min(self.frozen.len());
        if count > 0 {
            self.settles += 1;
        }
        for layer in self.frozen.drain(..count) {
            for tree in layer.trees.keys() {
                match self.settled.get_mut(&**tree) {
                    Some(settled) => *settled += 1,
                    None => {
                        self.settled.insert(tree.to_string(), 1);
                    }
                }
            }
        }
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
    fn writes_made_while_an_apply_commits_lie_over_the_frozen_ones() {
        let mut pending = Pending::default();
        pending.write("t", b"k", Some(b"1"));
        pending.write("t", b"gone", Some(b"1"));
        pending.write("t", b"later", Some(b"1"));
        let committing = pending.freeze();
        assert_eq!(committing.len(), 1);
        pending.write("t", b"k", Some(b"2"));
        pending.write("t", b"later", None);
        // Read through both layers, the newer first.
        assert_eq!(pending.get("t", b"k"), Some(Some(&b"2"[..])));
        assert_eq!(pending.get("t", b"gone"), Some(Some(&b"1"[..])));
        assert_eq!(
            pending.lay_over("t", b"", None, rows(&[("a", "A")])),
            rows(&[("a", "A"), ("gone", "1"), ("k", "2")])
        );
        pending.settle(committing.len());
        assert_eq!(pending.get("t", b"gone"), None);
        assert_eq!(pending.get("t", b"k"), Some(Some(&b"2"[..])));
        assert_eq!(pending.bytes(), 2 + 5);
        assert_eq!(pending.settled("t"), 1);
        assert_eq!(pending.settled("other"), 0);
        assert_eq!(pending.settles(), 1);
        pending.settle(0);
        assert_eq!(pending.settles(), 1, "settling nothing is not an apply");
        // A failed apply's layer stays, beneath the next one's, and both are committed.
        let first = pending.freeze();
        pending.write("t", b"k", Some(b"3"));
        let both = pending.freeze();
        assert_eq!((first.len(), both.len()), (1, 2));
        type Write<'a> = (&'a str, &'a [u8], Option<&'a [u8]>);
        let committed: Vec<Write> = both.iter().flat_map(|layer| layer.iter()).collect();
        assert_eq!(
            committed,
            vec![
                ("t", &b"k"[..], Some(&b"2"[..])),
                ("t", b"later", None),
                ("t", b"k", Some(&b"3"[..])),
            ]
        );
        pending.settle(both.len());
        assert!(pending.is_empty());
        assert_eq!(pending.bytes(), 0);
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
        assert_eq!(pending.tail_bytes(), 8 + 4 + 3);
        assert_eq!(pending.take_tail().len(), 3);
        assert!(
            pending
                .lay_over("t", b"z", Some(b"a"), Vec::new())
                .is_empty(),
            "a range that ends before it starts is empty"
        );
    }
}
