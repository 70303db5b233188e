//! An in-memory store: the same contract as the disk store, for places that must not touch
//! the disk (`explain` before any store exists) and for the contract test's second backend.

use super::{Result, Store};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

type Tree = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Default)]
pub struct MemoryStore {
    trees: Mutex<HashMap<String, Tree>>,
}

impl MemoryStore {
    #[must_use]
    pub fn new() -> Self {
        MemoryStore::default()
    }

    fn with<T>(&self, tree: &str, f: impl FnOnce(&mut Tree) -> T) -> T {
        // A poisoned lock means a panic mid-call elsewhere; the map itself is still consistent
        // (every call below is a single map operation), so keep serving.
        let mut trees = self.trees.lock().unwrap_or_else(|p| p.into_inner());
        f(trees.entry(tree.to_string()).or_default())
    }
}

impl Store for MemoryStore {
    fn get(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.with(tree, |t| t.get(key).cloned()))
    }

    fn insert(&self, tree: &str, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.with(tree, |t| t.insert(key.to_vec(), value.to_vec())))
    }

    fn remove(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.with(tree, |t| t.remove(key)))
    }

    fn scan_prefix(&self, tree: &str, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        Ok(self.with(tree, |t| {
            t.range(prefix.to_vec()..)
                .take_while(|(k, _)| k.starts_with(prefix))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        }))
    }

    fn scan_before(&self, tree: &str, end: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        Ok(self.with(tree, |t| {
            t.range(..end.to_vec())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        }))
    }

    fn scan_from(&self, tree: &str, start: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        Ok(self.with(tree, |t| {
            t.range(start.to_vec()..)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        }))
    }

    fn compare_and_swap(
        &self,
        tree: &str,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<std::result::Result<(), Option<Vec<u8>>>> {
        Ok(self.with(tree, |t| {
            let current = t.get(key).cloned();
            if current.as_deref() != expected {
                return Err(current);
            }
            match new {
                Some(v) => t.insert(key.to_vec(), v.to_vec()),
                None => t.remove(key),
            };
            Ok(())
        }))
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }
}
