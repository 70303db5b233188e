//! An agent's companions as `analyze_media` reaches them: the file's kind from its bytes, the
//! model bound for that kind, the call, and its usage recorded with purpose `companion`. A kind
//! with nothing bound sends nothing: the tool fails with the fix named.

use super::call::{Media, analyze};
use super::media::detect;
use super::role::{Companion, Modality, Role};
use crate::config::Config;
use crate::events::{Event, EventKind, EventSink};
use crate::store::Store;
use crate::tools::hosts::{Chosen, CompanionHost, HostError, HostFuture, MediaFile};
use serde_json::json;
use std::sync::Arc;

/// One agent's companions.
pub struct AgentCompanions {
    config: Arc<Config>,
    agent: String,
    client: reqwest::Client,
    events: Arc<dyn EventSink>,
    /// Where bindings made on picker cards are kept.
    store: Option<Arc<dyn Store>>,
}

impl AgentCompanions {
    pub fn new(
        config: Arc<Config>,
        agent: &str,
        client: reqwest::Client,
        events: Arc<dyn EventSink>,
        store: Option<Arc<dyn Store>>,
    ) -> Self {
        AgentCompanions {
            config,
            agent: agent.to_string(),
            client,
            events,
            store,
        }
    }

    /// A companion picked on a card: only one of the agent's choices for `role` (or what is
    /// bound for it, where a binding was made meanwhile).
    fn chosen(&self, role: Role, chosen: &str) -> Result<Companion, String> {
        let key = role.to_string();
        let agent = self.config.agents.get(&self.agent);
        let offered = agent
            .and_then(|a| a.companion_choices.get(&key))
            .is_some_and(|choices| choices.iter().any(|c| c == chosen));
        if !offered {
            return Err(format!(
                "`{chosen}` is not one of agent {}'s choices for {role}; nothing was sent",
                self.agent
            ));
        }
        chosen.parse()
    }

    /// The companion bound for `role`, or what to write to bind one.
    fn bound(&self, role: Role) -> Result<Companion, String> {
        let agent = self.config.agents.get(&self.agent);
        // The config's binding first, then one made on a picker card.
        let stored = || {
            let store = self.store.as_ref()?;
            super::bindings::of(store.as_ref(), &self.agent)
                .ok()?
                .remove(&role.to_string())
        };
        let written = agent
            .and_then(|a| a.companions.get(&role.to_string()).cloned())
            .or_else(stored);
        match written {
            Some(text) => text.parse(),
            None => {
                let offered = agent
                    .and_then(|a| a.companion_choices.get(&role.to_string()))
                    .filter(|choices| !choices.is_empty())
                    .map(|choices| format!(" (choices listed for it: {})", choices.join(", ")))
                    .unwrap_or_default();
                Err(format!(
                    "no model is bound for {role}: bind one in [agents.{}.companions], e.g. \"{role}\" = \"provider/model\"{offered}",
                    self.agent
                ))
            }
        }
    }
}

impl CompanionHost for AgentCompanions {
    fn max_bytes(&self) -> u64 {
        let mb = self
            .config
            .agents
            .get(&self.agent)
            .map_or(crate::config::defaults::media_max_mb(), |a| a.media_max_mb);
        mb.saturating_mul(1024 * 1024)
    }

    fn analyze<'a>(
        &'a self,
        session: &'a str,
        file: MediaFile,
        question: &'a str,
        chosen: Option<Chosen>,
    ) -> HostFuture<'a> {
        Box::pin(async move {
            let Some(kind) = detect(&file.bytes) else {
                return Err(HostError(format!(
                    "`{}` is not an image or audio file tollgate recognizes (PNG, JPEG, GIF, WebP; OGG, MP3, WAV, FLAC, M4A) — its type is read from its content, not its name",
                    file.name
                )));
            };
            if kind.modality == Modality::Video {
                return Err(HostError("no provider supports video yet: describe what you need from the video, or ask for a frame as an image".into()));
            }
            let role = Role::analyze(kind.modality);
            let companion = match chosen {
                // Picked for one kind, sent as that kind only (a file swapped since is refused).
                Some(chosen) if chosen.role != role.to_string() => {
                    return Err(HostError(format!(
                        "`{}` is now {role}, not the {} it was when a model was picked; propose again",
                        file.name, chosen.role
                    )));
                }
                Some(chosen) => self.chosen(role, &chosen.companion).map_err(HostError)?,
                None => self.bound(role).map_err(HostError)?,
            };
            let provider = self
                .config
                .providers
                .get(&companion.provider)
                .ok_or_else(|| {
                    HostError(format!(
                        "the companion {companion} names a provider that is not configured"
                    ))
                })?;
            let media = Media {
                bytes: &file.bytes,
                kind,
                name: &file.name,
            };
            let answered = analyze(
                &self.client,
                &companion.provider,
                provider,
                &companion.model,
                &media,
                question,
            )
            .await;
            // Audited (and counted) whether it answered or not: which model, and why not.
            let mut fields = json!({"purpose": "companion", "role": role.to_string(), "model": companion.to_string(), "usage": answered.as_ref().ok().map(|a| &a.usage)});
            if let Err(e) = &answered {
                fields["error"] = json!(e);
            }
            self.events.record(Event {
                kind: EventKind::LlmUsage,
                session: session.to_string(),
                run: None,
                call_id: String::new(),
                tool: "analyze_media".into(),
                fields,
            });
            answered.map(|answer| answer.text).map_err(HostError)
        })
    }
}
