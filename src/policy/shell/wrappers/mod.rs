//! Programs whose arguments are a command (`sudo`, `env`, `timeout`, `taskset`, `strace` …):
//! how to skip their own options to the command they run, and which option carries a command
//! line of its own (`env -S '…'`, `flock -c '…'`, `script -c '…'`). The denylist and the
//! pre-check judge the command behind them, so `strace -f rm -rf /` is `rm -rf /`.
//!
//! The table of wrappers is in `table`; reading their options is in `options`.

mod chain_loaders;
mod options;
mod table;

use chain_loaders::CHAIN_LOADERS;
pub use options::{is_assignment_word, skip_options};
use table::WRAPPERS;
pub(crate) use table::wrapper;

use super::names::is_wrapper_name;
use std::sync::LazyLock;

/// A wrapper that runs a command, and how to skip its own options.
pub struct Wrapper {
    pub name: &'static str,
    /// Options that take the next word as their value (or the rest of a short cluster).
    pub with_value: &'static [&'static str],
    /// Options that take the next two words (`bwrap --bind SRC DEST`).
    pub with_two_values: &'static [&'static str],
    /// Options that take the next three words (`bwrap --overlay RWSRC WORKDIR DEST`).
    pub with_three_values: &'static [&'static str],
    /// Accepts `NAME=value` words before the command (for `env`, any word holding `=`).
    pub assignments: bool,
    /// Positional words before the command (`timeout DURATION`, `chroot DIR`, `taskset MASK`).
    pub positional: usize,
    /// Options whose value is itself a command line (`env -S`, `flock -c`, `script -c`).
    pub script_options: &'static [&'static str],
    /// Whether the words after its options are a command it runs (`script`'s are a file name:
    /// its command comes only through `-c`).
    pub runs_rest: bool,
}

/// Every wrapper: the general table and the chain-loaders.
pub fn all() -> impl Iterator<Item = &'static Wrapper> {
    WRAPPERS.iter().chain(CHAIN_LOADERS)
}

/// The wrappers sorted by name, for a binary search per segment instead of a scan.
static BY_NAME: LazyLock<Vec<&'static Wrapper>> = LazyLock::new(|| {
    let mut sorted: Vec<&'static Wrapper> = all().collect();
    sorted.sort_by_key(|w| w.name);
    sorted
});

/// The wrapper called `name` (normalized), if it is one.
#[must_use]
pub fn find(name: &str) -> Option<&'static Wrapper> {
    // Most commands are no wrapper: a `match` on the names answers them without a search.
    if !is_wrapper_name(name) {
        return None;
    }
    BY_NAME
        .binary_search_by(|w| w.name.cmp(name))
        .ok()
        .and_then(|i| BY_NAME.get(i).copied())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::shell::names::WRAPPER_NAMES;

    /// The fast name test and the table name the same wrappers.
    #[test]
    fn the_name_list_is_the_table() {
        let mut table: Vec<&str> = all().map(|w| w.name).collect();
        let mut names = WRAPPER_NAMES.to_vec();
        table.sort_unstable();
        names.sort_unstable();
        assert_eq!(table, names);
        assert!(all().all(|w| find(w.name).is_some_and(|f| f.name == w.name)));
    }
}
