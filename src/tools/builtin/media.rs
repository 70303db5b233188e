//! `analyze_media`: a photo, screenshot or voice note in the workspace, sent to the companion
//! model bound for its kind (read from the file's bytes), with a question. Reading the file is
//! what the gate judges (tier `read-only`: binding a companion is the consent to send that kind
//! of file to it); with nothing bound for its kind, nothing is sent and the call fails with the
//! fix named.

use super::Builtin;
use crate::policy::tier::Tier;
use crate::tools::approved::{ApprovedCall, ToolOutput};
use crate::tools::args::{ArgKind, required};
use crate::tools::exec::ExecContext;
use crate::tools::hosts::MediaFile;
use serde_json::Value;

pub(super) fn tools() -> Vec<Builtin> {
    use ArgKind::String as S;
    vec![Builtin {
        name: "analyze_media",
        description: "Ask a companion model about an image or an audio file in the workspace (a photo, a screenshot, a voice note): it sees or hears the file and answers the question.",
        args: const {
            &[
                required(
                    "path",
                    S,
                    "The image or audio file, relative to the workspace",
                ),
                required(
                    "question",
                    S,
                    "What to ask about it (for audio: what to do with the transcript)",
                ),
            ]
        },
        tier: Tier::ReadOnly,
        long_running: true,
        plan: |a, c| super::files::reads(a, c, "path", "analyze"),
    }]
}

/// Reads the approved file (at most the agent's `media_max_mb`) and asks the companion.
pub(super) async fn execute(call: &ApprovedCall, ctx: &ExecContext) -> ToolOutput {
    let Some(companions) = ctx.companions.clone() else {
        return ToolOutput::error("no companion models can be reached from here");
    };
    let cap = companions.max_bytes();
    let (read_call, read_ctx) = (call.clone(), ctx.clone());
    let read = tokio::task::spawn_blocking(move || {
        crate::tools::fs::read_media(&read_call, &read_ctx, cap)
    })
    .await;
    let (name, bytes) = match read {
        Ok(Ok(file)) => file,
        Ok(Err(e)) => return ToolOutput::error(e),
        Err(e) => return ToolOutput::error(format!("the tool failed: {e}")),
    };
    let question = call
        .execute_args()
        .get("question")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let asked = companions.analyze(&ctx.session, MediaFile { name, bytes }, &question);
    tokio::select! {
        answer = asked => match answer {
            Ok(text) => ToolOutput::ok(text),
            Err(e) => ToolOutput::error(e.0),
        },
        () = ctx.cancel.cancelled() => ToolOutput::error("the run was stopped before the companion answered"),
    }
}
