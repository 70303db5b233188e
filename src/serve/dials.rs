//! A chat's `/mode` and `/sandbox`, saved per session: they survive a restart, and an idle
//! session's worker can be let go and started again without losing them.

use super::shared::Shared;
use crate::executor::session::SessionPolicy;
use crate::policy::mode::{ApprovalMode, Dials, SandboxPolicy};

use crate::executor::session::DIALS_TREE;

/// Saves the session's dials as they are now.
pub fn save(shared: &Shared, session: &SessionPolicy) -> Result<(), super::error::ServeError> {
    let dials = session.snapshot().dials;
    let bytes = serde_json::to_vec(&dials)?;
    // A session whose dials were set is active, run or no run (retention dates sessions) —
    // dated first: a kill can keep any prefix of these writes, and dials of a session with
    // no date would never be pruned.
    shared
        .runs
        .note_activity(&session.key, &session.agent, crate::clock::now_secs())?;
    shared
        .store
        .insert(DIALS_TREE, session.key.as_bytes(), &bytes)?;
    Ok(shared.store.flush()?)
}

/// Applies the saved dials, if any (never wider than the agent's sandbox: `set_sandbox` checks).
/// Saved dials that cannot be read or decoded are not replaced by the agent's, which may be
/// wider than what an admin set: the session gets the strictest (mode `always`, sandbox
/// `read-only`) until an admin sets `/mode` and `/sandbox` again, and the log says so.
pub fn restore(shared: &Shared, session: &SessionPolicy) {
    let saved = match shared.store.get(DIALS_TREE, session.key.as_bytes()) {
        Ok(None) => return,
        Ok(Some(bytes)) => serde_json::from_slice::<Dials>(&bytes)
            .map_err(|e| format!("saved dials unreadable ({e})")),
        Err(e) => Err(format!("saved dials could not be read ({e})")),
    };
    let dials = saved.unwrap_or_else(|why| {
        shared.log(&format!(
            "session {}: {why}; using the strictest (mode `always`, sandbox `read-only`) until an \
             admin sets /mode and /sandbox again",
            session.key
        ));
        Dials {
            mode: ApprovalMode::Always,
            sandbox: SandboxPolicy::ReadOnly,
        }
    });
    session.set_mode(dials.mode);
    if let Err(e) = session.set_sandbox(dials.sandbox) {
        shared.log(&format!(
            "session {}: saved sandbox not applied: {e}",
            session.key
        ));
    }
}
