//! Configuration: compiled-in defaults, then the user's TOML file, then `TOLLGATE__SECTION__KEY`
//! environment variables, deserialized into [`Config`] and validated. Every error names the key
//! and where it came from (the file, or the environment variable).

mod lists;
mod schema;
mod tool_names;
mod validate;
mod views;

pub use lists::AccessId;
pub use schema::*;
pub use tool_names::BUILTIN_TOOLS;

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The built-in defaults (`config/default.toml`), compiled in.
pub const DEFAULT_TOML: &str = include_str!("../../config/default.toml");

/// The file read when `--config` is not given, if it exists.
pub const DEFAULT_FILE: &str = "tollgate.toml";

/// The prefix of environment overrides: `TOLLGATE__AGENTS__HELPER__APPROVAL=always`.
pub const ENV_PREFIX: &str = "TOLLGATE";

/// A configuration error: where, which key, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file, the environment variable, or "built-in defaults".
    pub origin: String,
    /// The dotted key (`agents.helper.approval`), when one is at fault.
    pub key: Option<String>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(key) => write!(f, "{}: `{key}`: {}", self.origin, self.message),
            None => write!(f, "{}: {}", self.origin, self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Where values came from, to name the origin of a bad key.
#[derive(Debug, Clone)]
pub(crate) struct Origins {
    file: Option<PathBuf>,
    env: HashMap<String, String>,
}

impl Origins {
    /// The environment variable that sets `key` (or a table above it), else the file.
    pub(crate) fn of(&self, key: &str) -> String {
        let parts: Vec<&str> = key
            .split('.')
            .map(|p| p.split('[').next().unwrap_or(p))
            .collect();
        for end in (1..=parts.len()).rev() {
            let name = format!("{ENV_PREFIX}__{}", parts[..end].join("__").to_uppercase());
            if self.env.contains_key(&name) {
                return format!("environment variable {name}");
            }
        }
        self.file_name()
    }

    /// The config file read, if one was.
    pub(crate) fn file(&self) -> Option<&std::path::Path> {
        self.file.as_deref()
    }

    pub(crate) fn file_name(&self) -> String {
        match &self.file {
            Some(file) => file.display().to_string(),
            None => "built-in defaults".to_string(),
        }
    }

    pub(crate) fn error(&self, key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError {
            origin: self.of(key),
            key: Some(key.to_string()),
            message: message.into(),
        }
    }
}

/// Loads the configuration: `path` if given (it must exist), else `./tollgate.toml` if present,
/// else the built-in defaults alone; then the environment.
pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
    let file = match path {
        Some(p) => {
            if !p.is_file() {
                return Err(ConfigError {
                    origin: p.display().to_string(),
                    key: None,
                    message: "no such config file".into(),
                });
            }
            Some(absolute(p))
        }
        None => {
            let default = Path::new(DEFAULT_FILE);
            default.is_file().then(|| absolute(default))
        }
    };
    let text = match &file {
        Some(f) => Some(std::fs::read_to_string(f).map_err(|e| ConfigError {
            origin: f.display().to_string(),
            key: None,
            message: format!("reading the file: {e}"),
        })?),
        None => None,
    };
    load_from(file, text.as_deref())
}

/// Loads from a file's text (with its path for messages and relative paths) and this process's
/// environment.
pub fn load_from(file: Option<PathBuf>, text: Option<&str>) -> Result<Config, ConfigError> {
    let env: HashMap<String, String> = std::env::vars()
        .filter(|(k, _)| k.starts_with(ENV_PREFIX))
        .collect();
    load_with_env(file, text, env)
}

/// Loads with an explicit environment (only `TOLLGATE__*` entries matter).
pub fn load_with_env(
    file: Option<PathBuf>,
    text: Option<&str>,
    env: HashMap<String, String>,
) -> Result<Config, ConfigError> {
    let origins = Origins {
        file: file.clone(),
        env: env.clone(),
    };
    let mut builder = config::Config::builder().add_source(config::File::from_str(
        DEFAULT_TOML,
        config::FileFormat::Toml,
    ));
    if let Some(text) = text {
        // Parse once ourselves first: the `toml` error names the line and column.
        if let Err(e) = text.parse::<toml_check::Table>() {
            return Err(ConfigError {
                origin: origins.file_name(),
                key: None,
                message: format!("not valid TOML: {e}"),
            });
        }
        builder = builder.add_source(config::File::from_str(text, config::FileFormat::Toml));
    }
    builder = builder.add_source(
        config::Environment::with_prefix(ENV_PREFIX)
            .prefix_separator("__")
            .separator("__")
            .try_parsing(true)
            .source(Some(env.into_iter().collect())),
    );
    let merged = builder.build().map_err(|e| ConfigError {
        origin: origins.file_name(),
        key: None,
        message: e.to_string(),
    })?;
    let value: serde_json::Value = merged.try_deserialize().map_err(|e| ConfigError {
        origin: origins.file_name(),
        key: None,
        message: e.to_string(),
    })?;
    let mut config: Config = serde_path_to_error::deserialize(value).map_err(|e| {
        let key = e.path().to_string();
        let inner = e.into_inner().to_string();
        origins.error(&key, inner)
    })?;
    config.source = file;
    validate::validate(&mut config, &origins)?;
    Ok(config)
}

fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    std::env::current_dir()
        .map(|d| d.join(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

/// `config` re-exports no TOML parser; `toml` is already in the tree through it.
mod toml_check {
    pub use toml::Table;
}

#[cfg(test)]
mod tests;
