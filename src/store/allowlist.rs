//! Allowlists: per-command approval keys saved per agent ("Always: `git status …`"), and
//! per-tool approvals saved per session ("Always: this tool"). Listable and revocable.

use super::{Result, Store, StoreError};
use crate::policy::shell::approval_key::ApprovalKey;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::Arc;

const COMMAND_TREE: &str = "allowlist.commands";
const TOOL_TREE: &str = "allowlist.tools";

/// A saved command key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandEntry {
    pub agent: String,
    pub key: ApprovalKey,
    /// Who saved it (`telegram:12345`, `console:alice`, `cli`).
    pub by: String,
    /// RFC 3339.
    pub at: String,
}

/// A tool approved for the rest of a session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolEntry {
    pub session: String,
    pub tool: String,
    pub by: String,
    pub at: String,
}

/// The allowlists in a store.
#[derive(Clone)]
pub struct Allowlists {
    store: Arc<dyn Store>,
}

fn key_of(owner: &str, item: &str) -> Vec<u8> {
    let mut key = owner.as_bytes().to_vec();
    key.push(0);
    key.extend_from_slice(item.as_bytes());
    key
}

fn prefix_of(owner: &str) -> Vec<u8> {
    let mut key = owner.as_bytes().to_vec();
    key.push(0);
    key
}

fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8], what: &str) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| StoreError {
        context: format!("reading {what}"),
        message: e.to_string(),
    })
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| StoreError {
        context: "encoding an allowlist entry".into(),
        message: e.to_string(),
    })
}

impl Allowlists {
    #[must_use]
    pub fn new(store: Arc<dyn Store>) -> Self {
        Allowlists { store }
    }

    /// Saves a command key for an agent (durably: flushed before returning).
    pub fn add_command(&self, entry: &CommandEntry) -> Result<()> {
        self.store.insert(
            COMMAND_TREE,
            &key_of(&entry.agent, &entry.key.to_string()),
            &encode(entry)?,
        )?;
        self.store.flush()
    }

    /// Revokes a command key; whether it was there.
    pub fn revoke_command(&self, agent: &str, key: &ApprovalKey) -> Result<bool> {
        let removed = self
            .store
            .remove(COMMAND_TREE, &key_of(agent, &key.to_string()))?
            .is_some();
        self.store.flush()?;
        Ok(removed)
    }

    /// Every command entry of one agent, or of all agents.
    pub fn command_entries(&self, agent: Option<&str>) -> Result<Vec<CommandEntry>> {
        let prefix = agent.map(prefix_of).unwrap_or_default();
        self.store
            .scan_prefix(COMMAND_TREE, &prefix)?
            .iter()
            .map(|(_, v)| decode(v, "a command allowlist entry"))
            .collect()
    }

    /// The agent's command keys, as the gate reads them.
    pub fn command_keys(&self, agent: &str) -> Result<BTreeSet<ApprovalKey>> {
        Ok(self
            .command_entries(Some(agent))?
            .into_iter()
            .map(|e| e.key)
            .collect())
    }

    /// Approves a tool for the rest of a session.
    pub fn add_tool(&self, entry: &ToolEntry) -> Result<()> {
        self.store.insert(
            TOOL_TREE,
            &key_of(&entry.session, &entry.tool),
            &encode(entry)?,
        )?;
        self.store.flush()
    }

    pub fn revoke_tool(&self, session: &str, tool: &str) -> Result<bool> {
        let removed = self
            .store
            .remove(TOOL_TREE, &key_of(session, tool))?
            .is_some();
        self.store.flush()?;
        Ok(removed)
    }

    /// Drops every "always this tool" of `session` (an idle session being pruned); how many.
    /// Written with the caller's next flush.
    pub fn forget_session_tools(&self, session: &str) -> Result<usize> {
        let entries = self.store.scan_prefix(TOOL_TREE, &prefix_of(session))?;
        for (key, _) in &entries {
            self.store.delete(TOOL_TREE, key)?;
        }
        Ok(entries.len())
    }

    pub fn tool_entries(&self, session: Option<&str>) -> Result<Vec<ToolEntry>> {
        let prefix = session.map(prefix_of).unwrap_or_default();
        self.store
            .scan_prefix(TOOL_TREE, &prefix)?
            .iter()
            .map(|(_, v)| decode(v, "a tool allowlist entry"))
            .collect()
    }

    /// The session's approved tools, as the gate reads them.
    pub fn tools(&self, session: &str) -> Result<BTreeSet<String>> {
        Ok(self
            .tool_entries(Some(session))?
            .into_iter()
            .map(|e| e.tool)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    #[test]
    fn owners_do_not_leak_into_each_other() {
        let lists = Allowlists::new(Arc::new(MemoryStore::new()));
        let key: ApprovalKey = "git status".parse().unwrap();
        for agent in ["ops", "ops2"] {
            lists
                .add_command(&CommandEntry {
                    agent: agent.into(),
                    key: key.clone(),
                    by: "cli".into(),
                    at: "2026-01-01T00:00:00Z".into(),
                })
                .unwrap();
        }
        assert_eq!(lists.command_keys("ops").unwrap().len(), 1);
        assert!(lists.revoke_command("ops", &key).unwrap());
        assert!(lists.command_keys("ops").unwrap().is_empty());
        assert_eq!(lists.command_keys("ops2").unwrap().len(), 1);
        assert!(!lists.revoke_command("ops", &key).unwrap());
        lists
            .add_tool(&ToolEntry {
                session: "telegram:1".into(),
                tool: "write_file".into(),
                by: "telegram:9".into(),
                at: "2026-01-01T00:00:00Z".into(),
            })
            .unwrap();
        assert!(lists.tools("telegram:1").unwrap().contains("write_file"));
        assert!(lists.tools("telegram:10").unwrap().is_empty());
    }
}
