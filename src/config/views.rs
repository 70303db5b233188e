//! The configuration answering the views the policy defines ([`AgentPolicy`] for the gate,
//! [`SecretNames`] for the environment and the leak guard): the policy states what it reads,
//! the config supplies it, and `src/policy` stays independent of the config's layout.

use super::{AgentConfig, Config};
use crate::policy::env::SecretNames;
use crate::policy::mode::SandboxPolicy;
use crate::policy::private_hosts::HostPattern;
use crate::policy::resolve::AgentPolicy;
use crate::policy::tier::ToolPolicy;
use std::collections::BTreeSet;

impl AgentPolicy for AgentConfig {
    fn tool_policy(&self, policy_key: &str) -> Option<ToolPolicy> {
        self.tool_approval.get(policy_key).copied()
    }

    fn sandbox(&self) -> SandboxPolicy {
        self.sandbox
    }

    fn network_access(&self) -> bool {
        self.network_access
    }

    fn private_hosts(&self) -> &[HostPattern] {
        &self.private_hosts
    }
}

impl SecretNames for Config {
    /// Every variable a `*_env` key names: the providers' API keys and the bots' tokens.
    fn secret_env_names(&self) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for provider in self.providers.values() {
            names.extend(provider.api_key_env.clone());
        }
        if let Some(t) = &self.telegram {
            names.insert(t.token_env.clone());
        }
        if let Some(d) = &self.discord {
            names.insert(d.token_env.clone());
        }
        names
    }
}
