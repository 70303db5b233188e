//! The bridges a running service talks through, by platform: everything that leaves the
//! runtime for a chat — answers, notices, cards, their edits, press answers — goes to the
//! bridge of that chat's platform, with that bridge's settings beside it.

use super::error::ServeError;
use super::guard::Guarded;
use super::rate::RateLimiter;
use super::settings::BridgeSettings;
use crate::config::Config;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tollgate_surface::{Bridge, Platform};

/// One bridge, its settings and its per-user rate limit.
pub struct BridgeHandle {
    pub bridge: Arc<dyn Bridge>,
    pub settings: BridgeSettings,
    pub rate: Mutex<RateLimiter>,
}

/// The service's bridges.
pub struct Gateway {
    handles: BTreeMap<Platform, BridgeHandle>,
}

impl Gateway {
    /// One handle per bridge; two bridges of one platform, or one whose section is missing or
    /// names no known agent, are refused.
    pub fn new(config: &Config, bridges: Vec<Arc<dyn Bridge>>) -> Result<Self, ServeError> {
        let redactor = crate::policy::redact::Redactor::from_env_names(
            crate::policy::env::configured_secret_names(config),
        );
        let mut handles = BTreeMap::new();
        for bridge in bridges {
            let platform = bridge.platform();
            // Everything sent through the bridge is guarded (secrets out, controls shown).
            let bridge: Arc<dyn Bridge> = Arc::new(Guarded::new(bridge, redactor.clone()));
            let settings = BridgeSettings::for_platform(config, platform)?;
            let rate = Mutex::new(RateLimiter::new(settings.rate_limit_per_minute));
            let handle = BridgeHandle {
                bridge,
                settings,
                rate,
            };
            if handles.insert(platform, handle).is_some() {
                return Err(ServeError::TwoBridges(platform.as_str()));
            }
        }
        if handles.is_empty() {
            return Err(ServeError::NoBridge);
        }
        Ok(Gateway { handles })
    }

    /// The bridge of `platform`, if this service runs one.
    #[must_use]
    pub fn get(&self, platform: Platform) -> Option<&BridgeHandle> {
        self.handles.get(&platform)
    }

    pub fn iter(&self) -> impl Iterator<Item = &BridgeHandle> {
        self.handles.values()
    }

    /// The agents the bridges answer with.
    pub fn agents(&self) -> impl Iterator<Item = &str> {
        self.handles.values().map(|h| h.settings.agent.as_str())
    }
}
