//! Which of this process's shards have a live gateway connection, for the service's
//! `/healthz`: connected when every shard it runs is. READY and stage events say it at once;
//! serenity restarts a shard on some paths without a stage event (a missed heartbeat ACK, a
//! failed resume), so the bridge also reads the shard runners every few seconds and replaces
//! the set with theirs.

use std::collections::BTreeSet;
use std::sync::Mutex;

pub struct ShardsUp {
    /// How many shards this process runs.
    expected: usize,
    up: Mutex<BTreeSet<u32>>,
}

impl ShardsUp {
    #[must_use]
    pub fn new(expected: usize) -> Self {
        ShardsUp {
            expected: expected.max(1),
            up: Mutex::default(),
        }
    }

    /// Notes whether `shard` is connected now.
    pub fn set(&self, shard: u32, connected: bool) {
        // A poisoned lock still holds a whole set (each change is one operation).
        let mut up = self.up.lock().unwrap_or_else(|p| p.into_inner());
        if connected {
            up.insert(shard);
        } else {
            up.remove(&shard);
        }
    }

    /// Exactly these shards are connected (nothing at all once the gateway has stopped).
    pub fn replace(&self, connected: BTreeSet<u32>) {
        *self.up.lock().unwrap_or_else(|p| p.into_inner()) = connected;
    }

    /// Every shard this process runs is connected.
    #[must_use]
    pub fn all_up(&self) -> bool {
        self.up.lock().unwrap_or_else(|p| p.into_inner()).len() >= self.expected
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn up_only_while_every_shard_is() {
        let shards = ShardsUp::new(2);
        assert!(!shards.all_up());
        shards.set(0, true);
        assert!(!shards.all_up());
        shards.set(1, true);
        assert!(shards.all_up());
        shards.set(0, false);
        assert!(!shards.all_up());
        shards.replace([0, 1].into());
        assert!(shards.all_up());
        shards.replace(BTreeSet::new());
        assert!(!shards.all_up());
    }
}
