//! The environment a shell child (or a helper in its namespaces) starts with: a fixed base
//! (`PATH=/usr/local/bin:/usr/bin:/bin` plus the agent's `shell_path`, `HOME`, `TMPDIR`, …), plus
//! the parent's variables except secrets — names matching `API|KEY|SECRET|TOKEN|PASSWORD|
//! CREDENTIAL|AUTH`, everything starting `SSH_`, and every variable a `*_env` config key names —
//! and except the variables that change what bash runs before or instead of the command
//! (`BASH_ENV`, exported functions, `SHELLOPTS` …): the shell that runs is the shell the gate
//! parsed. An agent's `env_allowlist` can un-hide a variable that exists and was hidden by its
//! name only; it never invents one, and never un-hides `SSH_*`, a `*_env` secret or a shell
//! control variable.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Name fragments that mark a variable as a secret (compared case-insensitively).
const SECRET_FRAGMENTS: &[&str] = &[
    "API",
    "KEY",
    "SECRET",
    "TOKEN",
    "PASSWORD",
    "CREDENTIAL",
    "AUTH",
];

/// The shell's `PATH`, whatever the service's own is; an agent's `shell_path` extends it.
pub const BASE_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Variables that make bash run something before the command, read it differently, or replace
/// a command by a function: never passed on, whatever their name.
const SHELL_CONTROL: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "POSIXLY_CORRECT",
    "PS4",
    "PROMPT_COMMAND",
    "CDPATH",
    "GLOBIGNORE",
    "IFS",
    "BASH_XTRACEFD",
    "EXECIGNORE",
    "INPUTRC",
];

/// Whether a variable controls bash itself (including exported functions, `BASH_FUNC_x%%`).
#[must_use]
pub fn is_shell_control(name: &str) -> bool {
    SHELL_CONTROL.contains(&name) || name.starts_with("BASH_FUNC_")
}

/// The shell's `PATH`: the fixed base, then the agent's extra directories.
#[must_use]
pub fn shell_path(extra: &[PathBuf]) -> String {
    let mut path = BASE_PATH.to_string();
    for dir in extra {
        path.push(':');
        path.push_str(&dir.display().to_string());
    }
    path
}

/// Whether a name looks like a secret's.
#[must_use]
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_FRAGMENTS.iter().any(|f| upper.contains(f))
}

/// Where variables are declared secret by name (the config's `*_env` keys). The policy reads
/// the names through this, so it depends on the declaration, not on the config's layout.
pub trait SecretNames {
    /// Every variable name declared to hold a secret.
    fn secret_env_names(&self) -> BTreeSet<String>;
}

/// Services hold their configuration shared; the names are the same through the `Arc`.
impl<T: SecretNames + ?Sized> SecretNames for Arc<T> {
    fn secret_env_names(&self) -> BTreeSet<String> {
        (**self).secret_env_names()
    }
}

/// Every variable a `*_env` key of the config names: these hold secrets by declaration.
#[must_use]
pub fn configured_secret_names(declared: &(impl SecretNames + ?Sized)) -> BTreeSet<String> {
    declared.secret_env_names()
}

/// The child's environment; `path` is its `PATH` (see [`shell_path`]).
#[must_use]
pub fn child_environment(
    parent: impl IntoIterator<Item = (String, String)>,
    configured_secrets: &BTreeSet<String>,
    env_allowlist: &[String],
    home: &Path,
    tmpdir: &Path,
    path: &str,
) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for (name, value) in parent {
        if is_shell_control(&name) || name == crate::sandbox::ALLOCATOR_OPTIONS_ENV {
            continue;
        }
        let ssh = name.starts_with("SSH_");
        let declared_secret = configured_secrets.contains(&name);
        let hidden = ssh || declared_secret || is_secret_name(&name);
        let unhidden = !ssh && !declared_secret && env_allowlist.contains(&name);
        if !hidden || unhidden {
            env.insert(name, value);
        }
    }
    env.insert("PATH".into(), path.to_string());
    env.entry("LANG".into()).or_insert_with(|| "C.UTF-8".into());
    env.entry("TERM".into()).or_insert_with(|| "dumb".into());
    // These always point inside the sandbox, whatever the service's own values were.
    env.insert("HOME".into(), home.display().to_string());
    env.insert("TMPDIR".into(), tmpdir.display().to_string());
    env.insert("PWD".into(), home.display().to_string());
    env.remove("OLDPWD");
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hides_secrets_and_allows_only_existing_names() {
        let parent = [
            ("PATH", "/bin"),
            ("HOME", "/root"),
            ("OPENAI_API_KEY", "sk-1"),
            ("my_token", "t"),
            ("GH_AUTH", "a"),
            ("SSH_AUTH_SOCK", "/tmp/agent"),
            ("SSH_CONNECTION", "x"),
            ("CUSTOM_BOT", "declared"),
            ("DB_PASSWORD", "pw"),
            ("EDITOR", "vi"),
            ("BASH_ENV", "/tmp/x"),
            ("BASH_FUNC_ls%%", "() { id; }"),
            ("SHELLOPTS", "xtrace"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let declared: BTreeSet<String> = ["CUSTOM_BOT".to_string()].into();
        let allow = [
            "DB_PASSWORD",
            "SSH_CONNECTION",
            "CUSTOM_BOT",
            "NOT_THERE_KEY",
            "BASH_ENV",
        ]
        .map(String::from);
        let env = child_environment(
            parent,
            &declared,
            &allow,
            Path::new("/ws/s"),
            Path::new("/ws/s/.tmp"),
            &shell_path(&[PathBuf::from("/opt/tools/bin")]),
        );
        let names: Vec<&str> = env.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "DB_PASSWORD",
                "EDITOR",
                "HOME",
                "LANG",
                "PATH",
                "PWD",
                "TERM",
                "TMPDIR"
            ]
        );
        assert_eq!(env["HOME"], "/ws/s");
        assert_eq!(env["PATH"], "/usr/local/bin:/usr/bin:/bin:/opt/tools/bin");
        assert_eq!(env["TMPDIR"], "/ws/s/.tmp");
    }
}
