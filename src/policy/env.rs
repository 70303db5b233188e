//! The environment a shell child (or a helper in its namespaces) starts with: a fixed base
//! (`PATH=/usr/local/bin:/usr/bin:/bin` plus the agent's `shell_path`, `HOME`, `TMPDIR`, …), plus
//! the parent's variables except secrets — names matching `API|KEY|SECRET|TOKEN|PASSWORD|
//! CREDENTIAL|AUTH` and the other fragments below (`PASSWD`, `_PWD`, `DSN`, `SESSION`, …),
//! everything starting `SSH_`, every variable a `*_env` config key names, and any whose value
//! holds a credential by its shape (a URL with a user or password, `postgres://app:pw@db/…`, a
//! proxy with credentials, a `password=` setting in a DSN or JDBC URL) — and except the
//! variables that change what bash runs before or instead of the command (`BASH_ENV`, exported
//! functions, `SHELLOPTS` …): the shell that runs is the shell the gate parsed. An agent's
//! `env_allowlist` can un-hide a variable that exists and was hidden by its name or its value
//! only; it never invents one, and never un-hides `SSH_*`, a `*_env` secret or a shell control
//! variable.

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
    // `MYSQL_PWD`, `FTP_PASSWD`, `GPG_PASSPHRASE`, `SENTRY_DSN` (its URL holds a key),
    // `COOKIE_JAR`, and session handles (`DBUS_SESSION_BUS_ADDRESS`: the user's D-Bus). Not
    // `PRIVATE`: `GOPRIVATE` names modules, and hiding it sends their paths to Go's public
    // proxy (a private key's name holds `KEY`).
    "PASSWD",
    "PASSPHRASE",
    "_PWD",
    "DSN",
    "COOKIE",
    "SESSION",
];

/// Name endings that mark a variable as a secret where, as a fragment, they would hide
/// harmless names (`GITHUB_PAT`, but not `NODE_PATH`; `DBPASS`, `LDAP_BIND_PW`).
const SECRET_SUFFIXES: &[&str] = &["_PAT", "PASS", "_PW"];

/// Values that hold a credential by their shape, whatever the variable's name: a URL with a
/// user part (a password, or a token as the user: `https://ghp_x@github.com/`; a password may
/// hold `/`), a proxy given as `user:password@host` (which `mailto:me@host` looks like too:
/// hidden, as anything in doubt is), and a `password=` setting (key=value DSNs, JDBC URLs'
/// `?password=` or `;password=`).
static CREDENTIAL_SHAPED: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(
    || {
        regex::Regex::new(
            r"(?i)://(?:[^/@\s:]*:[^@\s]+|[^/@\s]+)@|^[^/@\s:]+:[^@\s/]+@|(?:^|[\s;?&,])(?:password|passwd|pwd|pass)\s*=",
        )
        .ok()
    },
);

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

/// Whether a value holds a credential by its shape ([`CREDENTIAL_SHAPED`]), as
/// `DATABASE_URL`, `REDIS_URL` or `HTTPS_PROXY` often do, whatever the variable's name. A
/// pattern that failed to compile counts every value as one (fail closed).
#[must_use]
pub fn holds_credential(value: &str) -> bool {
    CREDENTIAL_SHAPED
        .as_ref()
        .is_none_or(|shape| shape.is_match(value))
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
        let hidden = ssh || declared_secret || is_secret_name(&name) || holds_credential(&value);
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
            ("NO_PROXY", "localhost,.internal,10.0.0.0/8"),
            ("GOPRIVATE", "git.corp/*"),
            ("LDAP_BIND_PW", "pw"),
            ("DBPASS", "pw"),
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
                "GOPRIVATE",
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
    fn a_value_shaped_like_a_credential_is_a_secret_and_others_are_not() {
        for secret in [
            "postgres://app:pw@db/app",
            "redis://:pw@cache:6379",
            "a list: https://x.example, ftp://me:pw@files/",
            "mongodb+srv://u:p@cluster0.example.net/?retryWrites=true",
            "postgres://u:pa/ss@db",
            "https://ghp_xxx@github.com/org/repo.git",
            "u:p@proxy:3128",
            "jdbc:postgresql://h/db?user=u&password=x",
            "jdbc:sqlserver://h;user=u;password=x",
            "host=db user=app PASSWORD = x",
            "http://[::1]:8080@x",
        ] {
            assert!(holds_credential(secret), "{secret}");
        }
        for plain in [
            "https://example.com/a:b@c",
            "https://example.com/@scope/pkg",
            "https://host:8080/",
            "/usr/local/bin:/usr/bin",
            "en_US.UTF-8",
            "localhost,.internal",
            "no url",
        ] {
            assert!(!holds_credential(plain), "{plain}");
        }
    }
}
