use super::*;
use crate::policy::mode::ApprovalMode;

fn key(text: &str) -> ApprovalKey {
    text.parse().unwrap()
}

/// A parent session that always allows two commands and one tool.
fn parent() -> SessionPolicy {
    session(
        "telegram:1",
        Snapshot {
            dials: Dials {
                mode: ApprovalMode::LowRisk,
                sandbox: SandboxPolicy::WorkspaceWrite,
            },
            tool_allowlist: BTreeSet::from(["write_file".to_string()]),
            command_allowlist: BTreeSet::from([key("git status"), key("git log")]),
        },
    )
}

/// Session `key` of agent `a` (no store: its grants change in memory), starting from `start`.
fn session(key: &str, start: Snapshot) -> SessionPolicy {
    SessionPolicy::new(key, "a", SandboxPolicy::WorkspaceWrite, start, None)
}

/// A subagent's session: started from `parent`'s snapshot, in mode high-risk, bounded by it.
fn subagent_of(parent: &SessionPolicy) -> SessionPolicy {
    let mut start = parent.snapshot();
    start.dials.mode = ApprovalMode::HighRisk;
    session("telegram:1:sub:1", start).bounded_by(parent.bound())
}

#[test]
fn what_the_parent_loses_its_subagent_has_lost_by_its_next_snapshot() {
    let parent = parent();
    let sub = subagent_of(&parent);
    parent.revoke_command(&key("git log")).unwrap();
    assert_eq!(
        sub.snapshot().command_allowlist,
        BTreeSet::from([key("git status")])
    );
    parent.revoke_tool("write_file").unwrap();
    assert!(sub.snapshot().tool_allowlist.is_empty());
    parent.set_sandbox(SandboxPolicy::ReadOnly).unwrap();
    assert_eq!(sub.snapshot().dials.sandbox, SandboxPolicy::ReadOnly);
    // The subagent's mode is its own.
    assert_eq!(sub.snapshot().dials.mode, ApprovalMode::HighRisk);
}

#[test]
fn what_the_parent_gains_or_widens_later_is_not_given_to_its_subagent() {
    let parent = parent();
    parent.set_sandbox(SandboxPolicy::ReadOnly).unwrap();
    let sub = subagent_of(&parent);
    assert_eq!(sub.snapshot().dials.sandbox, SandboxPolicy::ReadOnly);
    parent.set_sandbox(SandboxPolicy::WorkspaceWrite).unwrap();
    parent
        .allow_command(&key("git diff"), "cli", "now")
        .unwrap();
    parent.set_mode(ApprovalMode::Always);
    let now = sub.snapshot();
    assert_eq!(now.dials.sandbox, SandboxPolicy::ReadOnly);
    assert_eq!(
        now.command_allowlist,
        BTreeSet::from([key("git status"), key("git log")])
    );
    assert_eq!(now.dials.mode, ApprovalMode::HighRisk);
    // A revoke undone at once: the subagent keeps only what it had and the parent has now.
    parent.revoke_command(&key("git log")).unwrap();
    parent.allow_command(&key("git log"), "cli", "now").unwrap();
    assert_eq!(sub.snapshot().command_allowlist.len(), 2);
}

#[test]
fn a_session_derived_from_a_bounded_one_is_bounded_by_the_same_live_session() {
    // The call's frozen copy of the parent is bounded by the live parent; the subagent made
    // from the copy is bounded by the live parent too, not by the frozen copy.
    let live = parent();
    let copy = session("telegram:1", live.snapshot()).bounded_by(live.bound());
    let sub = subagent_of(&copy);
    live.set_sandbox(SandboxPolicy::ReadOnly).unwrap();
    assert_eq!(copy.snapshot().dials.sandbox, SandboxPolicy::ReadOnly);
    assert_eq!(sub.snapshot().dials.sandbox, SandboxPolicy::ReadOnly);
}

#[test]
fn a_shared_session_is_bound_once_and_keeps_its_first_bound() {
    let chat = parent();
    let other = parent();
    let reminder = subagent_of(&other);
    // Already bounded (by `other`): a second bound is refused, the first kept.
    assert!(!reminder.bind_to(chat.subscribe()));
    other.set_sandbox(SandboxPolicy::ReadOnly).unwrap();
    assert_eq!(reminder.snapshot().dials.sandbox, SandboxPolicy::ReadOnly);
    let fresh = session("telegram:1", chat.snapshot());
    assert!(fresh.bind_to(chat.subscribe()));
    chat.revoke_command(&key("git log")).unwrap();
    assert_eq!(
        fresh.snapshot().command_allowlist,
        BTreeSet::from([key("git status")])
    );
}

/// A reminder's run is bound with its mode: the chat's stricter `/mode` reaches it at once,
/// and a wider one never widens it past its own.
#[test]
fn a_session_bound_with_its_mode_takes_the_stricter_mode_live() {
    let chat = parent();
    let mut start = chat.snapshot();
    start.dials.mode = ApprovalMode::LowRisk;
    let reminder = session("telegram:1", start);
    assert!(reminder.bind_with_mode_to(chat.bound()));
    assert_eq!(reminder.snapshot().dials.mode, ApprovalMode::LowRisk);
    chat.set_mode(ApprovalMode::Always);
    assert_eq!(reminder.snapshot().dials.mode, ApprovalMode::Always);
    chat.set_mode(ApprovalMode::HighRisk);
    assert_eq!(reminder.snapshot().dials.mode, ApprovalMode::LowRisk);
    // A subagent of the reminder is bounded by the chat's sandbox and grants, not its mode.
    let sub = subagent_of(&reminder);
    chat.set_mode(ApprovalMode::ReadOnly);
    assert_eq!(sub.snapshot().dials.mode, ApprovalMode::HighRisk);
    assert_eq!(reminder.snapshot().dials.mode, ApprovalMode::ReadOnly);
}
