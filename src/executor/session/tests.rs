use super::*;
use crate::policy::mode::ApprovalMode;
use std::sync::Arc;

fn key(text: &str) -> ApprovalKey {
    text.parse().unwrap()
}

/// A parent session (no store: its grants change in memory) that always allows two commands.
fn parent() -> Arc<SessionPolicy> {
    Arc::new(SessionPolicy::new(
        "telegram:1",
        "a",
        SandboxPolicy::WorkspaceWrite,
        Snapshot {
            dials: Dials {
                mode: ApprovalMode::LowRisk,
                sandbox: SandboxPolicy::WorkspaceWrite,
            },
            tool_allowlist: BTreeSet::from(["write_file".to_string()]),
            command_allowlist: BTreeSet::from([key("git status"), key("git log")]),
        },
        None,
    ))
}

/// A subagent's session started from `parent`'s snapshot, kept no wider than it.
fn subagent_of(parent: &Arc<SessionPolicy>) -> Arc<SessionPolicy> {
    let sub = Arc::new(SessionPolicy::new(
        "telegram:1:sub:1",
        "a",
        SandboxPolicy::WorkspaceWrite,
        parent.snapshot(),
        None,
    ));
    let (narrowed, from) = (sub.clone(), parent.clone());
    tokio::spawn(async move { narrowed.narrow_with(from.subscribe()).await });
    sub
}

/// Waits for `sub`'s next published change and returns its snapshot then.
async fn next_change(changes: &mut watch::Receiver<Snapshot>) -> Snapshot {
    tokio::time::timeout(std::time::Duration::from_secs(5), changes.changed())
        .await
        .expect("the subagent's session changed")
        .unwrap();
    changes.borrow_and_update().clone()
}

#[tokio::test]
async fn a_grant_the_parent_loses_is_taken_from_its_subagent_at_once() {
    let parent = parent();
    let sub = subagent_of(&parent);
    let mut changes = sub.subscribe();
    parent.revoke_command(&key("git log")).unwrap();
    let now = next_change(&mut changes).await;
    assert_eq!(now.command_allowlist, BTreeSet::from([key("git status")]));
    parent.revoke_tool("write_file").unwrap();
    let now = next_change(&mut changes).await;
    assert!(now.tool_allowlist.is_empty(), "{now:?}");
}

#[tokio::test]
async fn what_the_parent_gains_or_widens_is_not_given_to_its_subagent() {
    let parent = parent();
    let sub = subagent_of(&parent);
    let mut changes = sub.subscribe();
    parent.set_sandbox(SandboxPolicy::ReadOnly).unwrap();
    assert_eq!(
        next_change(&mut changes).await.dials.sandbox,
        SandboxPolicy::ReadOnly
    );
    // Widened again and a new grant: neither reaches the subagent. The revoke after them is
    // the signal that the subagent's session has seen the parent's latest state.
    parent.set_sandbox(SandboxPolicy::WorkspaceWrite).unwrap();
    parent
        .allow_command(&key("git diff"), "cli", "now")
        .unwrap();
    parent.revoke_command(&key("git log")).unwrap();
    let now = next_change(&mut changes).await;
    assert_eq!(now.command_allowlist, BTreeSet::from([key("git status")]));
    assert_eq!(now.dials.sandbox, SandboxPolicy::ReadOnly);
    // The subagent's own mode is its own: the parent's dials other than the sandbox do not
    // reach it.
    parent.set_mode(ApprovalMode::Always);
    parent.revoke_command(&key("git status")).unwrap();
    let now = next_change(&mut changes).await;
    assert!(now.command_allowlist.is_empty(), "{now:?}");
    assert_eq!(now.dials.mode, ApprovalMode::LowRisk);
}

#[tokio::test]
async fn a_revoke_between_the_subagents_snapshot_and_its_start_still_counts() {
    let parent = parent();
    let sub = Arc::new(SessionPolicy::new(
        "telegram:1:sub:1",
        "a",
        SandboxPolicy::WorkspaceWrite,
        parent.snapshot(),
        None,
    ));
    parent.revoke_command(&key("git log")).unwrap();
    let mut changes = sub.subscribe();
    let (narrowed, from) = (sub.clone(), parent.clone());
    tokio::spawn(async move { narrowed.narrow_with(from.subscribe()).await });
    let now = next_change(&mut changes).await;
    assert_eq!(now.command_allowlist, BTreeSet::from([key("git status")]));
}
