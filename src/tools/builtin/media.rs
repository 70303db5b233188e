//! `analyze_media`: a photo, screenshot or voice note in the workspace, sent to the companion
//! model bound for its kind (read from the file's bytes), with a question. Reading the file is
//! what the gate judges (tier `read-only`: binding a companion is the consent to send that kind
//! of file to it); with nothing bound for its kind, nothing is sent and the call fails with the
//! fix named.

use super::{Builtin, Plan};
use crate::companions::role::{Modality, Role};
use crate::policy::effect::Effect;
use crate::policy::tier::Tier;
use crate::tools::approved::{ApprovedCall, ToolOutput};
use crate::tools::args::{ArgKind, required};
use crate::tools::exec::ExecContext;
use crate::tools::hosts::MediaFile;
use crate::tools::tool::{ProposeContext, ToolError};
use serde_json::Map;
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
        plan,
    }]
}

/// What a call would read, and — where nothing is bound for the file's kind but the agent
/// lists choices — the picker: the file goes to whichever model a human picks.
fn plan(args: &Map<String, Value>, ctx: &ProposeContext) -> Result<Plan, ToolError> {
    let mut plan = super::files::reads(args, ctx, "path", "analyze")?;
    // The question goes to another model with the file: whoever approves or picks reads it.
    let question = args.get("question").and_then(Value::as_str).unwrap_or("");
    if question.chars().count() > MAX_QUESTION {
        return Err(ToolError::InvalidArguments(format!(
            "`question` is {} characters; at most {MAX_QUESTION}",
            question.chars().count()
        )));
    }
    plan.message = format!("{}, asking: {question}", plan.message);
    let Some(Effect::Read(path)) = plan.effects.first().cloned() else {
        return Ok(plan);
    };
    // Nothing is read here that the call itself could not read (the gate denies it anyway).
    if !ctx.may_read(&path) {
        return Ok(plan);
    }
    // Its kind from its first bytes, as the companion host will read it.
    let kind = crate::tools::fs::read_head(&path, &ctx.roots, ctx.sandbox, 64)
        .and_then(|head| crate::companions::detect(&head));
    let Some(kind) = kind.filter(|k| k.modality != Modality::Video) else {
        return Ok(plan);
    };
    let role = Role::analyze(kind.modality).to_string();
    if ctx.companions.bound.contains_key(&role) {
        return Ok(plan);
    }
    let Some(choices) = ctx.companions.choices.get(&role).filter(|c| !c.is_empty()) else {
        return Ok(plan);
    };
    plan.message = format!("{} (pick a model for {role})", plan.message);
    plan.preview = Some(format!(
        "Nothing is bound for {role}: the file goes to the model you pick. \"Bind for this agent\" also sends every later {role} file of this agent to it, without asking."
    ));
    plan.options = Some(choices.clone());
    // What runs is rebuilt here, never taken from the model: the role a binding would bind.
    let mut execute = args.clone();
    execute.insert("role".into(), Value::from(role));
    plan.execute_args = Some(Value::Object(execute));
    Ok(plan)
}

/// Characters of a question sent to a companion with the file.
const MAX_QUESTION: usize = 2000;

/// Reads the approved file (at most the agent's `media_max_mb`) and asks the companion.
pub(super) async fn execute(call: &ApprovedCall, ctx: &ExecContext) -> ToolOutput {
    let Some(companions) = ctx.companions.clone() else {
        return ToolOutput::error("no companion models can be reached from here");
    };
    let cap = companions.max_bytes();
    let (read_call, read_ctx) = (call.clone(), ctx.clone());
    let read = crate::tools::blocking::run_blocking(move || {
        crate::tools::fs::read_media(&read_call, &read_ctx, cap)
    })
    .await;
    let (name, bytes) = match read.and_then(|file| file) {
        Ok(file) => file,
        Err(e) => return ToolOutput::error(e),
    };
    let question = call
        .execute_args()
        .get("question")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    // A picker's answer, written by the runtime (a model's own is taken out before the gate),
    // with the kind it was picked for.
    let args = call.execute_args();
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_string);
    let chosen = text(crate::executor::reserved::SELECTED_OPTION).map(|option| {
        crate::tools::hosts::Chosen {
            role: text("role").unwrap_or_default(),
            companion: option,
        }
    });
    let asked = companions.analyze(&ctx.session, MediaFile { name, bytes }, &question, chosen);
    tokio::select! {
        answer = asked => match answer {
            Ok(text) => ToolOutput::ok(text),
            Err(e) => ToolOutput::error(e.0),
        },
        () = ctx.cancel.cancelled() => ToolOutput::error("the run was stopped before the companion answered"),
    }
}
