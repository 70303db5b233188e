//! The environment a shell child (or a helper in its namespaces) starts with: a fixed base
//! (`PATH=/usr/local/bin:/usr/bin:/bin` plus the agent's `shell_path`, `HOME`, `TMPDIR`, …), plus
//! the parent's variables except secrets — names matching `API|KEY|SECRET|TOKEN|PASSWORD|
//! CREDENTIAL|AUTH` and the other fragments below (`PASSWD`, `_PWD`, `DSN`, `SESSION`, …),
//! everything starting `SSH_`, every variable a `*_env` config key names, and any whose value
//! is a URL carrying a password (`postgres://app:pw@db/…`, a proxy with credentials) — and
//! except the variables that change what bash runs before or instead of the command
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
    // `MYSQL_PWD`, `FTP_PASSWD`, `GPG_PASSPHRASE`, `PRIVATE_KEY_PEM`, `SENTRY_DSN` (its URL
    // holds a key), `COOKIE_JAR`, and session handles (`DBUS_SESSION_BUS_ADDRESS`: the
    // user's D-Bus).
    "PASSWD",
    "PASSPHRASE",
    "_PWD",
    "PRIVATE",
    "DSN",
    "COOKIE",
    "SESSION",
];

/// Name endings that mark a variable as a secret where, as a fragment, they would hide
/// harmless names (`GITHUB_PAT`, but not `NODE_PATH`).
const SECRET_SUFFIXES: &[&str] = &["_PAT", "_PASS"];

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
        || SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
}

/// Whether a value holds a URL with a password in it (`scheme://user:password@host`), as
/// `DATABASE_URL`, `REDIS_URL` or `HTTPS_PROXY` often do, whatever the variable's name.
#[must_use]
pub fn holds_url_password(value: &str) -> bool {
    value.match_indices("://").any(|(at, _)| {
        let authority = value[at + 3..]
            .split(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace())
            .next()
            .unwrap_or("");
        authority
            .rsplit_once('@')
            .and_then(|(userinfo, _)| userinfo.split_once(':'))
            .is_some_and(|(_, password)| !password.is_empty())
    })
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
        let hidden = ssh || declared_secret || is_secret_name(&name) || holds_url_password(&value);
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
            ("DATABASE_URL", "postgres://app:hunter2@db:5432/app"),
            ("HTTPS_PROXY", "http://u:p@proxy:3128"),
            ("NO_PROXY", "http://proxy:3128,https://user@host/"),
            ("MYSQL_PWD", "pw"),
            ("FTP_PASSWD", "pw"),
            ("GITHUB_PAT", "ghp"),
            ("SENTRY_DSN", "https://k@o1.ingest/1"),
            ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus"),
            ("NODE_PATH", "/usr/lib/node"),
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
                "NODE_PATH",
                "NO_PROXY",
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

    #[test]
    fn a_url_with_a_password_is_a_secret_and_one_without_is_not() {
        for secret in [
            "postgres://app:pw@db/app",
            "redis://:pw@cache:6379",
            "a list: https://x.example, ftp://me:pw@files/",
            "mongodb+srv://u:p@cluster0.example.net/?retryWrites=true",
        ] {
            assert!(holds_url_password(secret), "{secret}");
        }
        for plain in [
            "https://example.com/a:b@c",
            "https://user@host/",
            "https://host:8080/",
            "https://u:@host/",
            "mailto:me@example.com",
            "no url",
        ] {
            assert!(!holds_url_password(plain), "{plain}");
        }
    }
}
