//! Companion bindings made on a picker card ("Bind for this agent"): stored like a saved
//! command key, per agent and role, listed and revoked with `/allowlist` and `tollgate
//! allowlist`. A binding in the config (`[agents.X.companions]`) comes first; a stored one
//! applies where the config binds nothing.

use crate::store::{Store, StoreError};
use std::collections::BTreeMap;

const TREE: &str = "companion_bindings";

fn key(agent: &str, role: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(agent.len() + 1 + role.len());
    key.extend_from_slice(agent.as_bytes());
    key.push(0);
    key.extend_from_slice(role.as_bytes());
    key
}

/// A binding as stored: the companion, who bound it and when.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Binding {
    pub companion: String,
    pub by: String,
    pub at: String,
}

/// Binds `companion` for `role` of `agent`, as `by` answered on a card (durable on return).
pub fn bind(
    store: &dyn Store,
    agent: &str,
    role: &str,
    companion: &str,
    by: &str,
) -> Result<(), StoreError> {
    let binding = Binding {
        companion: companion.to_string(),
        by: by.to_string(),
        at: crate::clock::now_rfc3339(),
    };
    let value = serde_json::to_vec(&binding).unwrap_or_default();
    store.insert(TREE, &key(agent, role), &value)?;
    store.flush()
}

/// `agent`'s stored bindings with who made them, role → binding (an unreadable record is
/// left out: it binds nothing).
pub fn entries(store: &dyn Store, agent: &str) -> Result<BTreeMap<String, Binding>, StoreError> {
    let mut prefix = agent.as_bytes().to_vec();
    prefix.push(0);
    let mut bound = BTreeMap::new();
    for (k, v) in store.scan_prefix(TREE, &prefix)? {
        let role = String::from_utf8_lossy(&k[prefix.len()..]).into_owned();
        if let Ok(binding) = serde_json::from_slice::<Binding>(&v) {
            bound.insert(role, binding);
        }
    }
    Ok(bound)
}

/// Takes the binding of `role` away from `agent`; whether there was one.
pub fn revoke(store: &dyn Store, agent: &str, role: &str) -> Result<bool, StoreError> {
    let removed = store.remove(TREE, &key(agent, role))?.is_some();
    store.flush()?;
    Ok(removed)
}

/// `agent`'s stored bindings, role → companion.
pub fn of(store: &dyn Store, agent: &str) -> Result<BTreeMap<String, String>, StoreError> {
    Ok(entries(store, agent)?
        .into_iter()
        .map(|(role, b)| (role, b.companion))
        .collect())
}
