//! The first run, with no config file: a built-in default — one agent with the default trimmed
//! toolset working in the current directory, mode `low-risk`, sandbox `workspace-write`, the
//! store under the user's data directory — and the model found the way people already
//! configure one: `OPENAI_BASE_URL` / `OPENAI_API_KEY` (the OpenAI SDK's conventions; a local
//! server needs no key) with `OPENAI_MODEL`, else `ANTHROPIC_API_KEY` with `ANTHROPIC_MODEL`,
//! else a local Ollama (`OLLAMA_HOST`, default `localhost:11434`) and one of its installed
//! models. With none of them: a usage error naming the three ways.

use super::Failure;
use crate::config::{self, Config};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A current small model where none is named.
const OPENAI_DEFAULT_MODEL: &str = "gpt-4.1-mini";
const ANTHROPIC_DEFAULT_MODEL: &str = "claude-haiku-4-5";

/// How long the Ollama probe may take.
const OLLAMA_PROBE: Duration = Duration::from_secs(2);

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// `$XDG_DATA_HOME/tollgate`, else `~/.local/share/tollgate`, else `./.tollgate`.
fn data_dir() -> PathBuf {
    if let Some(dir) = var("XDG_DATA_HOME") {
        return PathBuf::from(dir).join("tollgate");
    }
    match var("HOME") {
        Some(home) => PathBuf::from(home).join(".local/share/tollgate"),
        None => PathBuf::from(".tollgate"),
    }
}

/// TOML string literal.
fn quoted(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

/// The installed models of the Ollama at `host`, if it answers.
fn ollama_models(host: &str) -> Option<Vec<String>> {
    let base = if host.starts_with("http") {
        host.to_string()
    } else {
        format!("http://{host}")
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    let tags: serde_json::Value = runtime.block_on(async {
        let client = reqwest::Client::builder()
            .timeout(OLLAMA_PROBE)
            .build()
            .ok()?;
        let response = client.get(format!("{base}/api/tags")).send().await.ok()?;
        response.json().await.ok()
    })?;
    let models: Vec<String> = tags["models"]
        .as_array()?
        .iter()
        .filter_map(|m| m["name"].as_str().map(str::to_string))
        .collect();
    Some(models)
}

/// The provider section and model, from the environment.
fn provider() -> Result<(String, String), Failure> {
    if var("OPENAI_BASE_URL").is_some() || var("OPENAI_API_KEY").is_some() {
        let base = var("OPENAI_BASE_URL").unwrap_or_else(|| "https://api.openai.com/v1".into());
        let key = var("OPENAI_API_KEY")
            .map(|_| "api_key_env = \"OPENAI_API_KEY\"\n")
            .unwrap_or_default();
        let model = var("OPENAI_MODEL").unwrap_or_else(|| OPENAI_DEFAULT_MODEL.into());
        return Ok((
            format!("kind = \"openai\"\nbase_url = {}\n{key}", quoted(&base)),
            model,
        ));
    }
    if var("ANTHROPIC_API_KEY").is_some() {
        let model = var("ANTHROPIC_MODEL").unwrap_or_else(|| ANTHROPIC_DEFAULT_MODEL.into());
        return Ok((
            "kind = \"anthropic\"\nbase_url = \"https://api.anthropic.com\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n".into(),
            model,
        ));
    }
    let host = var("OLLAMA_HOST").unwrap_or_else(|| "localhost:11434".into());
    match ollama_models(&host) {
        Some(models) if !models.is_empty() => {
            let base = if host.starts_with("http") {
                host.clone()
            } else {
                format!("http://{host}")
            };
            Ok((
                format!("kind = \"openai\"\nbase_url = {}\n", quoted(&format!("{base}/v1"))),
                models[0].clone(),
            ))
        }
        Some(_) => Err(Failure::usage(format!(
            "Ollama at {host} has no models installed: `ollama pull qwen3:8b`, then run this again (or write a config: `tollgate init`)."
        ))),
        None => Err(Failure::usage(
            "No model found. tollgate looks for one the way people already configure it: set OPENAI_API_KEY (or OPENAI_BASE_URL for a local OpenAI-compatible server, with OPENAI_MODEL), or ANTHROPIC_API_KEY (with ANTHROPIC_MODEL), or run Ollama (OLLAMA_HOST, default localhost:11434) with a model pulled. Or write a config with `tollgate init` and pass it with --config."
                .to_string(),
        )),
    }
}

/// The built-in default config when no file is named and `./tollgate.toml` does not exist;
/// `None` when there is a file to load.
pub fn default_config(path: Option<&Path>) -> Result<Option<Config>, Failure> {
    if path.is_some() || Path::new(config::DEFAULT_FILE).is_file() {
        return Ok(None);
    }
    let (provider, model) = provider()?;
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::runtime(format!("the current directory: {e}")))?;
    let store = data_dir().join("store");
    let text = format!(
        "[store]\npath = {}\n[providers.default]\n{provider}[agents.assistant]\nprovider = \"default\"\nmodel = {}\nworkspace = {}\napproval = \"low-risk\"\nsandbox = \"workspace-write\"\n",
        quoted(&store.display().to_string()),
        quoted(&model),
        quoted(&cwd.display().to_string()),
    );
    if let Some(parent) = store.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    config::load_from(None, Some(&text))
        .map(Some)
        .map_err(|e| Failure::usage(format!("the built-in default config: {e}")))
}
