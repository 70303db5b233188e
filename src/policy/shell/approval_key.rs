//! The approval key: what "Always: this command" saves for an agent. Only a single simple
//! command with literal words and no hazard has one. A binary on `prefix_binaries` with a
//! subcommand-shaped second word gets a prefix key (binary + subcommand, covering every command
//! with the same key); anything else an exact key (its whole argv, covering only itself). Keys
//! are compared as keys, never as raw strings.
//!
//! Where the second word only names a group of commands (`gh repo`, `docker compose`,
//! `uv pip`, `git stash`), the key takes the third word too: "Always" pressed for `gh repo
//! view` must not cover `gh repo delete --yes`, nor `git stash list` cover `git stash clear`.
//! Without a subcommand-shaped third word (`docker compose -f x.yml ps`) the key is exact.

use super::command::{command_name, is_wrapper};
use super::hazards::{cluster_has, names_a_path_outside, option_is};
use super::lexer::Lexed;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The default `prefix_binaries`: tools whose second word is a subcommand.
pub const DEFAULT_PREFIX_BINARIES: &[&str] = &[
    "git", "cargo", "npm", "pnpm", "yarn", "docker", "kubectl", "go", "make", "pip", "uv", "gh",
];

/// Second words that name a group of commands, by binary: the third word is the command.
const GROUPS: &[(&str, &[&str])] = &[
    (
        "git",
        &[
            "stash",
            "remote",
            "submodule",
            "worktree",
            "notes",
            "reflog",
            "lfs",
            "sparse-checkout",
            "maintenance",
            "bisect",
            "rerere",
            // git 2.46's `git config get|set|unset|list…`; `git config user.name x` is exact.
            "config",
        ],
    ),
    (
        "docker",
        &[
            "compose",
            "container",
            "image",
            "volume",
            "network",
            "system",
            "context",
            "buildx",
            "builder",
            "plugin",
            "swarm",
            "service",
            "stack",
            "secret",
            "config",
            "node",
            "trust",
            "manifest",
            "scout",
            "model",
        ],
    ),
    (
        "kubectl",
        &[
            "config",
            "rollout",
            "auth",
            "certificate",
            "create",
            "set",
            "plugin",
        ],
    ),
    (
        "gh",
        &[
            "repo",
            "pr",
            "issue",
            "release",
            "workflow",
            "run",
            "secret",
            "variable",
            "gist",
            "cache",
            "label",
            "codespace",
            "cs",
            "extension",
            "ext",
            "auth",
            "ruleset",
            "rs",
            "project",
            "org",
            "ssh-key",
            "gpg-key",
            "alias",
            "config",
            "attestation",
            "at",
        ],
    ),
    (
        "npm",
        &[
            "config",
            "cache",
            "token",
            "team",
            "access",
            "owner",
            "dist-tag",
            "profile",
            "org",
            "hook",
            "pkg",
            "run",
            "run-script",
            "audit",
        ],
    ),
    ("pnpm", &["config", "store", "env", "run", "run-script"]),
    (
        "yarn",
        &[
            "config",
            "cache",
            "plugin",
            "workspaces",
            "npm",
            "constraints",
            "run",
        ],
    ),
    ("uv", &["pip", "tool", "python", "cache", "self"]),
    ("pip", &["config", "cache"]),
    // `go tool NAME` runs a toolchain tool or one go.mod declares: each its own key.
    ("go", &["mod", "work", "tool"]),
    ("cargo", &["owner"]),
];

/// Second words followed by a name before the command they run (`yarn workspace APP CMD`,
/// `yarn workspaces foreach … CMD`): their commands get exact keys only (`yarn workspaces
/// list` keeps its group key).
const NAMED_FIRST: &[(&str, &str)] = &[("yarn", "workspace"), ("yarn", "workspaces")];

/// Commands whose key would cover harm it was not pressed for, which get exact keys:
/// - `git config` but its reads (`get`, `list`): a `git config set` key pressed for `user.name`
///   would cover `url.<evil>.insteadOf`, `http.sslVerify false`; a read naming a file
///   (`--file F`, `--fil F`, `-fF`, `--blob B`) prints any INI file (`--file ~/.pypirc`);
/// - `go tool dist|pack|buildid`: they rebuild the toolchain or rewrite files in place;
/// - publishing (`cargo publish|yank`, `npm publish|unpublish|deprecate|dist-tag|access|owner`,
///   as npm reads them: `npm publ`, `npm author`): a key pressed for `--dry-run` would cover
///   the real, public and irreversible one;
/// - choosing a server: `git push|pull|fetch|ls-remote|send-pack` to a URL or a path rather
///   than a remote's name, `git remote add|set-url`, `git subtree push|pull|add`, `git lfs
///   push`, `git archive --remote`, `pip config set`, `kubectl config use-…|set-…`,
///   `docker push`, `docker compose|image|manifest push`, `docker context`,
///   `docker swarm`, `docker login`, `gh` with `-R`/`--repo` or `--hostname`, `gh gist
///   create`, `kubectl` with `--context`, `--cluster`, `--user`, `--as` or `--kubeconfig`;
/// - `docker compose down` deleting volumes or images (`-v`, `--rmi`).
fn exact_only(binary: &str, sub: &str, rest: &[String]) -> bool {
    let third = rest.first().map(String::as_str);
    let given = |names: &[&str]| {
        rest.iter().any(|w| {
            let option = w.split_once('=').map_or(w.as_str(), |(option, _)| option);
            names.contains(&option)
        })
    };
    match (binary, sub) {
        ("git", "config") => !matches!(third, Some("get" | "list")) || names_a_file(rest),
        ("go", "tool") => matches!(third, Some("dist" | "pack" | "buildid")),
        ("cargo", "publish" | "yank") => true,
        ("npm" | "pnpm", command) => publishes(command),
        // `yarn npm publish`, `yarn npm tag` (Berry); `yarn publish`, `yarn tag` (1.x).
        ("yarn", "npm") => third.is_some_and(publishes),
        ("yarn", command) => publishes(command),
        ("git", "push" | "pull" | "fetch" | "ls-remote" | "send-pack") => names_a_location(rest),
        ("git", "remote") => matches!(third, Some("add" | "set-url")),
        ("git", "subtree") => matches!(third, Some("push" | "pull" | "add")),
        ("git", "lfs") => third == Some("push"),
        ("git", "archive") => rest.iter().any(|w| option_is(w, "--remote")),
        ("docker", "push" | "context" | "swarm" | "login") => true,
        ("docker", "image" | "manifest") => third == Some("push"),
        // The index every later install downloads from (`global.index-url`), as `git config`.
        ("pip", "config") => !matches!(third, Some("get" | "list" | "debug")),
        ("docker", "compose") => {
            third == Some("push")
                || (third == Some("down")
                    && (given(&["--volumes", "--rmi"]) || rest.iter().any(|w| cluster_has(w, 'v'))))
        }
        ("gh", _) => {
            given(&["-R", "--repo", "--hostname"])
                || rest.iter().any(|w| cluster_has(w, 'R'))
                || (sub == "gist" && third == Some("create"))
        }
        ("kubectl", _) => {
            (sub == "config" && third.is_some_and(|t| t.starts_with("use") || t.starts_with("set")))
                || given(&[
                    "--context",
                    "--cluster",
                    "--user",
                    "--as",
                    "--as-group",
                    "--kubeconfig",
                ])
        }
        _ => false,
    }
}

/// Whether npm (pnpm, yarn) reads `command` as one that publishes or changes who owns or
/// sees a package. npm takes aliases and any unambiguous prefix (`npm publ`, `npm author`).
fn publishes(command: &str) -> bool {
    const PUBLISHING: &[&str] = &[
        "publish",
        "unpublish",
        "deprecate",
        "undeprecate",
        "dist-tag",
        "access",
        "owner",
        "trust",
    ];
    // npm also reads two letters where they are unambiguous (`npm pu`, `npm ow`).
    matches!(
        command,
        "author" | "dist-tags" | "tag" | "pu" | "ac" | "ow" | "tr"
    ) || (command.len() >= 3 && PUBLISHING.iter().any(|p| p.starts_with(command)))
}

/// Whether a git transfer names where it goes as a URL or a path (`https://…`,
/// `host:x.git`, `git@host:x`, `/srv/x.git`, `--repo=…`) rather than a configured remote's
/// name (which holds no `:`). The first operand is the repository, once the values of
/// `-o`/`--push-option` (and other options taking one) are passed.
fn names_a_location(rest: &[String]) -> bool {
    // Past the first operand, or where an option's value unknown here shifts the operands
    // (`--recurse-submodules check URL`), a URL still shows: `://`, `user@host:`, a host
    // with a dot before its `:` (`evil.example:x.git`; a refspec `v1.0:v1.0` too, exactly
    // keyed), or a path.
    let unmistakable = |w: &str| {
        w.contains("://")
            || w.starts_with(['/', '.', '~'])
            || w.split_once(':')
                .is_some_and(|(host, _)| host.contains(['@', '.']))
    };
    if rest.iter().any(|w| !w.starts_with('-') && unmistakable(w)) {
        return true;
    }
    let location = |w: &str| w.contains(':') || unmistakable(w);
    let mut words = rest.iter().map(String::as_str);
    while let Some(w) = words.next() {
        if w == "--" {
            return words.next().is_some_and(location);
        }
        if w.starts_with("--") {
            // git takes any unambiguous prefix of a long option (`--rep=`).
            let value = w.split_once('=').map(|(_, v)| v);
            if option_is(w, "--repo") {
                return value.or_else(|| words.next()).is_none_or(location);
            }
            if value.is_none()
                && [
                    "--push-option",
                    "--server-option",
                    "--upload-pack",
                    "--receive-pack",
                ]
                .iter()
                .any(|o| option_is(w, o))
            {
                words.next();
            }
        } else if let Some(cluster) = w.strip_prefix('-') {
            // `-o X`: the value in the next word, unless attached (`-oX`).
            if cluster.ends_with('o') {
                words.next();
            }
        } else {
            return location(w);
        }
    }
    false
}

/// `--file`, `--blob` (git takes abbreviations: `--fil`, `--bl`; `--fi` could be
/// `--fixed-value`), attached or not, or `-f`.
fn names_a_file(words: &[String]) -> bool {
    words.iter().any(|w| {
        let option = w.split_once('=').map_or(w.as_str(), |(option, _)| option);
        (option.len() >= "--fil".len() && "--file".starts_with(option))
            || (option.len() >= "--bl".len() && "--blob".starts_with(option))
            || (w.starts_with("-f") && !w.starts_with("--"))
    })
}

/// Whether `sub` of `binary` names a group of commands rather than a command.
fn is_group(binary: &str, sub: &str) -> bool {
    GROUPS
        .iter()
        .any(|(b, groups)| *b == binary && groups.contains(&sub))
}

/// A saved "always" for commands.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum ApprovalKey {
    /// `git status` covers `git status --short`; `gh repo view` (a group and its command,
    /// one space apart) covers `gh repo view --web`.
    Prefix { binary: String, subcommand: String },
    /// `=rm old.log` covers exactly that argv.
    Exact { argv: Vec<String> },
}

impl ApprovalKey {
    /// The key of a lexed command, given the binary words written as-is that take prefix keys.
    /// `hazard_free` is the pre-check's verdict: a command it marks high-risk has no key.
    #[must_use]
    pub fn of(lexed: &Lexed, hazard_free: bool, prefix_binaries: &[String]) -> Option<Self> {
        if lexed.error.is_some() || !hazard_free {
            return None;
        }
        let script = &lexed.script;
        let f = script.features;
        if f.subshell || f.group || f.compound || f.comment || f.function || f.background {
            return None;
        }
        let [segment] = script.segments.as_slice() else {
            return None;
        };
        if !segment.assignments.is_empty()
            || !segment.redirects.is_empty()
            || !segment.evaluated.is_empty()
        {
            return None;
        }
        let argv: Vec<String> = segment
            .words
            .iter()
            .map(|w| w.literal().map(str::to_string))
            .collect::<Option<_>>()?;
        let first = segment.words.first()?;
        if command_name(first).is_some_and(is_wrapper) {
            return None;
        }
        let binary = &argv[0];
        // A key covers a subcommand at work in the workspace. One naming a path outside it
        // (`--target-dir /srv/x`, `-o /usr/local/bin/x`, `--root=/usr/local`, `git diff
        // --no-index /etc/x`) gets an exact key: the admin sees that path, and a key pressed
        // for `cargo install --path ./tool` does not cover `--root /usr/local`.
        if argv[1..].iter().any(|w| names_a_path_outside(w)) {
            return Some(ApprovalKey::Exact { argv });
        }
        if prefix_binaries.iter().any(|b| b == binary)
            && let Some(sub) = argv.get(1)
            && is_subcommand(sub)
        {
            if NAMED_FIRST.contains(&(binary.as_str(), sub.as_str()))
                && argv.get(2).is_some_and(|w| w != "list")
            {
                return Some(ApprovalKey::Exact { argv });
            }
            if exact_only(binary, sub, &argv[2..]) {
                return Some(ApprovalKey::Exact { argv });
            }
            let subcommand = if is_group(binary, sub) {
                match argv.get(2) {
                    Some(command) if is_subcommand(command) => format!("{sub} {command}"),
                    _ => return Some(ApprovalKey::Exact { argv }),
                }
            } else {
                sub.clone()
            };
            return Some(ApprovalKey::Prefix {
                binary: binary.clone(),
                subcommand,
            });
        }
        Some(ApprovalKey::Exact { argv })
    }

    /// What the "Always" button says this key covers.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            ApprovalKey::Prefix { binary, subcommand } => {
                format!("`{binary} {subcommand} …` (any arguments)")
            }
            ApprovalKey::Exact { argv } => format!("exactly `{}`", quote_argv(argv)),
        }
    }
}

/// `^[a-z][a-z0-9-]*$`
fn is_subcommand(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Words joined for display, single-quoted where the shell would need it — and the command
/// word also where bash would read it as a reserved word or an assignment (`'done'`, `'A=b'`),
/// so the notation reads back as the same key.
#[must_use]
pub fn quote_argv(argv: &[String]) -> String {
    argv.iter()
        .enumerate()
        .map(|(i, w)| {
            let special =
                i == 0 && (super::lexer::RESERVED.contains(&w.as_str()) || w.contains('='));
            if special {
                format!("'{}'", w.replace('\'', "'\\''"))
            } else {
                quote_word(w)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One word, single-quoted where the shell would need it.
#[must_use]
pub fn quote_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

impl fmt::Display for ApprovalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApprovalKey::Prefix { binary, subcommand } => write!(f, "{binary} {subcommand}"),
            ApprovalKey::Exact { argv } => write!(f, "={}", quote_argv(argv)),
        }
    }
}

impl FromStr for ApprovalKey {
    type Err = String;

    /// Parses the notation `Display` writes: `git status` or `=rm 'my file.txt'`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(exact) = s.strip_prefix('=') {
            let lexed = super::lexer::lex(exact);
            let argv = match (&lexed.error, lexed.script.segments.as_slice()) {
                (None, [segment]) => segment
                    .words
                    .iter()
                    .map(|w| w.literal().map(str::to_string))
                    .collect::<Option<Vec<_>>>(),
                _ => None,
            };
            return match argv {
                Some(argv) if !argv.is_empty() => Ok(ApprovalKey::Exact { argv }),
                _ => Err(format!("`{s}` is not an exact key of literal words")),
            };
        }
        let mut parts = s.split(' ');
        let key = match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(binary), Some(sub), None, None) if is_subcommand(sub) => {
                Some((binary, sub.to_string()))
            }
            // A group and its command (`gh repo view`).
            (Some(binary), Some(group), Some(command), None)
                if is_group(binary, group) && is_subcommand(command) =>
            {
                Some((binary, format!("{group} {command}")))
            }
            _ => None,
        };
        match key {
            Some((binary, subcommand)) if !binary.is_empty() => Ok(ApprovalKey::Prefix {
                binary: binary.to_string(),
                subcommand,
            }),
            _ => Err(format!(
                "`{s}` is not an approval key: write `binary subcommand`, `binary group \
                 command` (`gh repo view`) or `=exact command`"
            )),
        }
    }
}

impl TryFrom<String> for ApprovalKey {
    type Error = String;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl From<ApprovalKey> for String {
    fn from(key: ApprovalKey) -> Self {
        key.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notation_round_trips() {
        for text in [
            "git status",
            "gh repo view",
            "=rm old.log",
            "=rm 'my file.txt'",
            "=ls",
            "=echo 'it'\\''s'",
        ] {
            let key: ApprovalKey = text.parse().unwrap();
            assert_eq!(key.to_string(), text);
        }
        assert!("git".parse::<ApprovalKey>().is_err());
        // Three words only for a group and its command.
        assert!("git status short".parse::<ApprovalKey>().is_err());
        assert!("gh repo view web".parse::<ApprovalKey>().is_err());
        assert!("=".parse::<ApprovalKey>().is_err());
        assert!("=rm $x".parse::<ApprovalKey>().is_err());
    }

    #[test]
    fn keys_compare_as_keys() {
        let a: ApprovalKey = "=rm build".parse().unwrap();
        let b: ApprovalKey = "=rm build src".parse().unwrap();
        assert_ne!(a, b);
    }
}
