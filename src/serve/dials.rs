//! A chat's `/mode` and `/sandbox`, saved per session: they survive a restart, and an idle
//! session's worker can be let go and started again without losing them.

use super::shared::Shared;
use crate::executor::session::SessionPolicy;
use crate::policy::mode::Dials;

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
pub fn restore(shared: &Shared, session: &SessionPolicy) {
    let Ok(Some(bytes)) = shared.store.get(DIALS_TREE, session.key.as_bytes()) else {
        return;
    };
    let Ok(dials) = serde_json::from_slice::<Dials>(&bytes) else {
        shared.log(&format!(
            "session {}: saved dials unreadable; using the agent's",
            session.key
        ));
        return;
    };
    session.set_mode(dials.mode);
    if let Err(e) = session.set_sandbox(dials.sandbox) {
        shared.log(&format!(
            "session {}: saved sandbox not applied: {e}",
            session.key
        ));
    }
}
