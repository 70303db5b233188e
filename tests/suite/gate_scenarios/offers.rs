//! The "Always" row of a prompt: which offer (this tool, this command's key, or none) each
//! kind of prompt carries.

use super::{Row, Tweak, run, world};
use serde_json::{Value, json};
use tollgate::policy::resolve::AlwaysOffer;

/// The "Always" row is offered only on a prompt decided by the mode's ceiling.
#[test]
fn always_offers() {
    use Tweak::*;
    let w = world();
    let offer = |mode: &'static str, tool: &'static str, args: Value, tweaks: &'static [Tweak]| {
        run(
            &w,
            &Row {
                mode,
                sandbox: "workspace-write",
                tool,
                args,
                tweaks,
                expect: ("", "", ""),
            },
        )
        .always
    };
    let write = || json!({"path": "x", "content": ""});
    assert_eq!(
        offer("low-risk", "write_file", write(), &[]),
        Some(AlwaysOffer::Tool)
    );
    assert_eq!(
        offer(
            "low-risk",
            "write_file",
            write(),
            &[Config("write_file", "prompt")]
        ),
        Some(AlwaysOffer::None)
    );
    assert_eq!(
        offer("always", "write_file", write(), &[]),
        Some(AlwaysOffer::None)
    );
    assert_eq!(
        offer("low-risk", "probe_picker", json!({}), &[]),
        Some(AlwaysOffer::None)
    );
    assert_eq!(
        offer(
            "low-risk",
            "execute_command",
            json!({"command": "git status"}),
            &[]
        ),
        Some(AlwaysOffer::Command("git status".parse().unwrap()))
    );
    assert_eq!(
        offer(
            "low-risk",
            "execute_command",
            json!({"command": "rm old.log"}),
            &[Classifier("high-risk")]
        ),
        Some(AlwaysOffer::Command("=rm old.log".parse().unwrap()))
    );
    // A hazardous command has no key, and no "Always: this tool" either (it is unknown-tier).
    assert_eq!(
        offer(
            "low-risk",
            "execute_command",
            json!({"command": "rm -rf ./build"}),
            &[]
        ),
        Some(AlwaysOffer::None)
    );
    assert_eq!(
        offer("low-risk", "read_file", json!({"path": "notes.txt"}), &[]),
        Some(AlwaysOffer::None)
    );
}
