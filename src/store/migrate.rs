//! One-time work on a store written by an older tollgate (building an index its records
//! predate): done once, and a marker in the `store_meta` tree records that it was.

use super::{Result, Store};

/// Facts about the store itself (which migrations ran).
pub const META_TREE: &str = "store_meta";

/// Runs `work` unless `marker` says it ran; then sets the marker and flushes.
pub fn once(store: &dyn Store, marker: &[u8], work: impl FnOnce() -> Result<()>) -> Result<()> {
    if store.get(META_TREE, marker)?.is_some() {
        return Ok(());
    }
    work()?;
    store.insert(META_TREE, marker, b"1")?;
    store.flush()
}
