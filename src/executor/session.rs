//! A session's live policy state: its dials and allowlists. Every change is published, so calls
//! waiting for approval in that session are decided again at once.

use crate::policy::mode::{Dials, SandboxPolicy};
use crate::policy::shell::approval_key::ApprovalKey;
use crate::store::{Allowlists, CommandEntry, StoreError, ToolEntry};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::watch;

/// Where each session's dials (`/mode`, `/sandbox`) are saved: session → JSON.
pub const DIALS_TREE: &str = "session_dials";

/// What the gate reads from a session, at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub dials: Dials,
    pub tool_allowlist: BTreeSet<String>,
    pub command_allowlist: BTreeSet<ApprovalKey>,
}

/// `/sandbox` asked for more than the agent's configured sandbox.
#[derive(Debug, thiserror::Error)]
#[error("agent {agent}'s sandbox is `{sandbox}`; a session cannot be set wider")]
pub struct WiderThanAgent {
    pub agent: String,
    pub sandbox: SandboxPolicy,
}

/// Takes from `session` every grant `bound` does not have and narrows its sandbox to
/// `bound`'s, and its mode too when `mode` says so.
fn narrow_to(session: &mut Snapshot, bound: &Snapshot, mode: bool) {
    session
        .tool_allowlist
        .retain(|tool| bound.tool_allowlist.contains(tool));
    session
        .command_allowlist
        .retain(|key| bound.command_allowlist.contains(key));
    session.dials.sandbox = session.dials.sandbox.min(bound.dials.sandbox);
    if mode {
        // `ApprovalMode` orders strictest first, so the smaller is the stricter.
        session.dials.mode = session.dials.mode.min(bound.dials.mode);
    }
}

/// The live session a session is never wider than, and whether its mode bounds too.
struct Bound {
    session: watch::Receiver<Snapshot>,
    mode: bool,
}

/// A session's policy state, shared by its running calls.
pub struct SessionPolicy {
    pub key: String,
    /// Whose workspace directory the session works in (a subagent works in its parent's).
    pub workspace_key: String,
    pub agent: String,
    /// The agent's configured sandbox: `/sandbox` never goes wider.
    pub agent_sandbox: SandboxPolicy,
    state: watch::Sender<Snapshot>,
    allowlists: Option<Allowlists>,
    /// Rereads of the allowlists, numbered before each reads the store.
    rereads: AtomicU64,
    /// The newest reread published: an older one that finishes later is dropped, or two
    /// racing rereads (serve's, after a revoke, and a starting worker's own) could leave the
    /// grants the older one read in force.
    published: AtomicU64,
    /// A live session this one is never wider than (a subagent's parent, a reminder's chat):
    /// read with every snapshot, so what that session loses is lost here at once.
    bound: std::sync::OnceLock<Bound>,
}

impl SessionPolicy {
    /// A session starting from `snapshot`; changes are saved through `allowlists` when given.
    #[must_use]
    pub fn new(
        key: &str,
        agent: &str,
        agent_sandbox: SandboxPolicy,
        snapshot: Snapshot,
        allowlists: Option<Allowlists>,
    ) -> Self {
        let (state, _) = watch::channel(snapshot);
        SessionPolicy {
            key: key.to_string(),
            workspace_key: key.to_string(),
            agent: agent.to_string(),
            agent_sandbox,
            state,
            allowlists,
            rereads: AtomicU64::new(0),
            published: AtomicU64::new(0),
            bound: std::sync::OnceLock::new(),
        }
    }

    /// The same session, never wider than the live session `bound` watches (its
    /// [`SessionPolicy::subscribe`]): every snapshot loses the grants `bound` does not have and
    /// takes its sandbox if narrower. A subagent (whose mode is high-risk, so its sandbox is
    /// what bounds it) is bound so to its parent: an admin's `/sandbox read-only` or revoke
    /// reaches it before its next call is decided, and nothing granted or widened later does.
    #[must_use]
    pub fn bounded_by(self, bound: watch::Receiver<Snapshot>) -> Self {
        self.bind_to(bound);
        self
    }

    /// Bounds this session, already shared, as [`SessionPolicy::bounded_by`] does (a
    /// reminder's run by its chat's session). A session is bounded once: false, and the first
    /// bound kept, if it already was.
    pub fn bind_to(&self, bound: watch::Receiver<Snapshot>) -> bool {
        self.bind(bound, false)
    }

    /// Bounds this session as [`SessionPolicy::bind_to`] does, and its mode too: every
    /// snapshot takes the stricter of its own mode and `bound`'s. A reminder's run is bound so
    /// to its chat: an admin's stricter `/mode` reaches it while it runs, and a wider one
    /// never widens it past its own.
    pub fn bind_with_mode_to(&self, bound: watch::Receiver<Snapshot>) -> bool {
        self.bind(bound, true)
    }

    fn bind(&self, session: watch::Receiver<Snapshot>, mode: bool) -> bool {
        self.bound.set(Bound { session, mode }).is_ok()
    }

    /// What bounds this session: the live session it was bounded by, or else itself (for a
    /// session derived from this one).
    #[must_use]
    pub fn bound(&self) -> watch::Receiver<Snapshot> {
        self.bound
            .get()
            .map(|b| b.session.clone())
            .unwrap_or_else(|| self.subscribe())
    }

    /// The same session working in another session's directory (a subagent in its parent's).
    #[must_use]
    pub fn in_workspace_of(mut self, key: &str) -> Self {
        self.workspace_key = key.to_string();
        self
    }

    #[must_use]
    pub fn snapshot(&self) -> Snapshot {
        let mut snapshot = self.state.borrow().clone();
        if let Some(bound) = self.bound.get() {
            narrow_to(&mut snapshot, &bound.session.borrow(), bound.mode);
        }
        snapshot
    }

    /// Notified on every change.
    #[must_use]
    pub fn subscribe(&self) -> watch::Receiver<Snapshot> {
        self.state.subscribe()
    }

    pub fn set_mode(&self, mode: crate::policy::mode::ApprovalMode) {
        self.state.send_modify(|s| s.dials.mode = mode);
    }

    /// Sets the session's sandbox, never wider than the agent's.
    pub fn set_sandbox(&self, sandbox: SandboxPolicy) -> Result<(), WiderThanAgent> {
        if sandbox > self.agent_sandbox {
            return Err(WiderThanAgent {
                agent: self.agent.clone(),
                sandbox: self.agent_sandbox,
            });
        }
        self.state.send_modify(|s| s.dials.sandbox = sandbox);
        Ok(())
    }

    /// "Always: this tool (this session)" — saved, then read back from the store.
    pub fn allow_tool(&self, tool: &str, by: &str, at: &str) -> Result<(), StoreError> {
        let Some(lists) = &self.allowlists else {
            self.state.send_modify(|s| {
                s.tool_allowlist.insert(tool.to_string());
            });
            return Ok(());
        };
        lists.add_tool(&ToolEntry {
            session: self.key.clone(),
            tool: tool.into(),
            by: by.into(),
            at: at.into(),
        })?;
        self.reload_allowlists()
    }

    /// Wakes this session's waiting calls to be decided again (something they depend on
    /// changed outside the dials and allowlists: a companion bound on a picker card).
    pub fn decide_again(&self) {
        self.state.send_modify(|_| {});
    }

    /// Replaces the allowlists with what the store holds now (changed from outside the
    /// session, e.g. `tollgate allowlist revoke` while serving); waiting calls are decided again.
    /// Every change of a stored allowlist is published this way, after its write: a reread
    /// numbered later read the store later, so dropping an older one that finishes after it
    /// loses nothing. If the store cannot be read, both lists are emptied (every call asks
    /// again) rather than kept as they were.
    pub fn reload_allowlists(&self) -> Result<(), StoreError> {
        let Some(lists) = &self.allowlists else {
            return Ok(());
        };
        let reread = self.rereads.fetch_add(1, Ordering::SeqCst) + 1;
        let read = lists
            .tools(&self.key)
            .and_then(|tools| Ok((tools, lists.command_keys(&self.agent)?)));
        let (tools, commands) = match &read {
            Ok((tools, commands)) => (tools.clone(), commands.clone()),
            Err(_) => Default::default(),
        };
        // Senders take the channel's lock in turn: the check and the publish are one step.
        self.state.send_if_modified(|s| {
            if self.published.load(Ordering::SeqCst) > reread {
                return false;
            }
            self.published.store(reread, Ordering::SeqCst);
            let changed = s.tool_allowlist != tools || s.command_allowlist != commands;
            s.tool_allowlist = tools;
            s.command_allowlist = commands;
            changed
        });
        read.map(|_| ())
    }

    /// Takes a tool's "always" back (saved first); false if it was not allowed.
    pub fn revoke_tool(&self, tool: &str) -> Result<bool, StoreError> {
        let held = self.snapshot().tool_allowlist.contains(tool);
        let Some(lists) = &self.allowlists else {
            self.state.send_modify(|s| {
                s.tool_allowlist.remove(tool);
            });
            return Ok(held);
        };
        let saved = lists.revoke_tool(&self.key, tool)?;
        // Saved: a reread that fails empties the lists, so the revoke holds either way.
        let _ = self.reload_allowlists();
        Ok(saved || held)
    }

    /// Takes a command key's "always" back for the agent (saved first).
    pub fn revoke_command(&self, key: &ApprovalKey) -> Result<bool, StoreError> {
        let held = self.snapshot().command_allowlist.contains(key);
        let Some(lists) = &self.allowlists else {
            self.state.send_modify(|s| {
                s.command_allowlist.remove(key);
            });
            return Ok(held);
        };
        let saved = lists.revoke_command(&self.agent, key)?;
        // Saved: a reread that fails empties the lists, so the revoke holds either way.
        let _ = self.reload_allowlists();
        Ok(saved || held)
    }

    /// "Always: this command (agent)" — saved, then read back from the store.
    pub fn allow_command(&self, key: &ApprovalKey, by: &str, at: &str) -> Result<(), StoreError> {
        let Some(lists) = &self.allowlists else {
            self.state.send_modify(|s| {
                s.command_allowlist.insert(key.clone());
            });
            return Ok(());
        };
        lists.add_command(&CommandEntry {
            agent: self.agent.clone(),
            key: key.clone(),
            by: by.into(),
            at: at.into(),
        })?;
        self.reload_allowlists()
    }
}

#[cfg(test)]
mod tests;
