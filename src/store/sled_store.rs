//! The sled backend. sled locks its directory (a second process cannot open it) and defaults to
//! a 1 GiB cache, so the cache is set from the config.

use super::{Result, Store, StoreError};
use std::path::{Path, PathBuf};

pub struct SledStore {
    db: sled::Db,
    path: PathBuf,
}

impl SledStore {
    /// Opens (or creates) the store at `path` with a cache of `cache_mb` megabytes.
    pub fn open(path: &Path, cache_mb: u64) -> Result<Self> {
        let db = sled::Config::new()
            .path(path)
            .cache_capacity(cache_mb.saturating_mul(1024 * 1024))
            .open()
            .map_err(|e| {
                let message = match &e {
                    sled::Error::Io(io) if io.kind() == std::io::ErrorKind::WouldBlock
                        || io.to_string().contains("lock") =>
                    {
                        format!("{io}: another tollgate process (is `tollgate serve` running?) holds this store")
                    }
                    other => other.to_string(),
                };
                StoreError {
                    context: format!("opening the store at {}", path.display()),
                    message,
                }
            })?;
        Ok(SledStore {
            db,
            path: path.to_path_buf(),
        })
    }

    /// Every tree's name (for copying the store), sled's own default tree among them.
    pub fn tree_names(&self) -> Result<Vec<String>> {
        Ok(self
            .db
            .tree_names()
            .into_iter()
            .map(|name| String::from_utf8_lossy(&name).into_owned())
            .collect())
    }

    /// Calls `each` with every entry of `tree`, in key order, one at a time (a copy of a
    /// large store never holds a whole tree in memory).
    pub fn for_each(
        &self,
        tree: &str,
        mut each: impl FnMut(&[u8], &[u8]) -> Result<()>,
    ) -> Result<()> {
        for entry in self.tree(tree)?.iter() {
            let (key, value) = entry.map_err(|e| self.error(tree, e))?;
            each(&key, &value)?;
        }
        Ok(())
    }

    fn tree(&self, name: &str) -> Result<sled::Tree> {
        self.db.open_tree(name).map_err(|e| self.error(name, e))
    }

    fn error(&self, tree: &str, e: sled::Error) -> StoreError {
        StoreError {
            context: format!("store {} tree `{tree}`", self.path.display()),
            message: e.to_string(),
        }
    }
}

impl Store for SledStore {
    fn get(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let t = self.tree(tree)?;
        t.get(key)
            .map(|v| v.map(|v| v.to_vec()))
            .map_err(|e| self.error(tree, e))
    }

    fn insert(&self, tree: &str, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        let t = self.tree(tree)?;
        t.insert(key, value)
            .map(|v| v.map(|v| v.to_vec()))
            .map_err(|e| self.error(tree, e))
    }

    fn remove(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let t = self.tree(tree)?;
        t.remove(key)
            .map(|v| v.map(|v| v.to_vec()))
            .map_err(|e| self.error(tree, e))
    }

    fn scan_prefix(&self, tree: &str, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let t = self.tree(tree)?;
        t.scan_prefix(prefix)
            .map(|entry| {
                entry
                    .map(|(k, v)| (k.to_vec(), v.to_vec()))
                    .map_err(|e| self.error(tree, e))
            })
            .collect()
    }

    fn scan_before(&self, tree: &str, end: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let t = self.tree(tree)?;
        t.range(..end)
            .map(|entry| {
                entry
                    .map(|(k, v)| (k.to_vec(), v.to_vec()))
                    .map_err(|e| self.error(tree, e))
            })
            .collect()
    }

    fn scan_from(&self, tree: &str, start: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let t = self.tree(tree)?;
        t.range(start..)
            .map(|entry| {
                entry
                    .map(|(k, v)| (k.to_vec(), v.to_vec()))
                    .map_err(|e| self.error(tree, e))
            })
            .collect()
    }

    fn compare_and_swap(
        &self,
        tree: &str,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<std::result::Result<(), Option<Vec<u8>>>> {
        let t = self.tree(tree)?;
        let outcome = t
            .compare_and_swap(key, expected, new)
            .map_err(|e| self.error(tree, e))?;
        Ok(outcome.map_err(|mismatch| mismatch.current.map(|v| v.to_vec())))
    }

    fn flush(&self) -> Result<()> {
        self.db
            .flush()
            .map(|_| ())
            .map_err(|e| self.error("(all)", e))
    }
}
