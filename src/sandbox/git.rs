//! Git never runs code the agent could have planted. The workspace is the command's `HOME` and
//! usually holds repositories, so an agent can write `~/.gitconfig`, `.git/config` and
//! `.git/hooks/*` — and a later `git status` (which the gate rightly sees as harmless) would run
//! `core.fsmonitor`, a commit would run hooks, a diff `diff.external`. Every command therefore
//! gets an environment in which:
//! - the system and global files are not read (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL` and
//!   the attributes' equivalents point nowhere);
//! - the keys that name a program are pinned through `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/
//!   `GIT_CONFIG_VALUE_n`, which outrank every file, the repository's own `.git/config`
//!   included; hooks come from an empty directory;
//! - the variables that outrank those keys (`GIT_PAGER`, `GIT_EDITOR`, `GIT_SSH_COMMAND`, …)
//!   are set to programs that do nothing harmful.
//!
//! What stays open is written in `docs/security.md`: keys whose names the agent chooses
//! (`alias.*`, `filter.<driver>.*`, `diff.<driver>.textconv`, `merge.<driver>.driver`,
//! `difftool.<tool>.cmd`) cannot be pinned. An agent whose config says
//! `trust_git_config = true` gets git as the host has it.

use std::collections::BTreeMap;

/// The keys that run a program, and the value each is pinned to.
const PINNED_KEYS: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("sequence.editor", "true"),
    ("core.sshCommand", "ssh"),
    ("core.askPass", ""),
    ("core.attributesFile", "/dev/null"),
    ("diff.external", PLAIN_DIFF),
    ("credential.helper", ""),
    ("gpg.program", "gpg"),
    ("gpg.ssh.program", "ssh-keygen"),
    ("gpg.x509.program", "gpgsm"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("protocol.ext.allow", "never"),
    // A local-path remote runs its `uploadpack`/`receivepack` program and the other
    // repository's hooks, and git drops these pins for that child: no file transport.
    ("protocol.file.allow", "never"),
    ("core.alternateRefsCommand", "true"),
    ("log.showSignature", "false"),
    ("merge.verifySignatures", "false"),
    ("tag.forceSignAnnotated", "false"),
    ("push.gpgSign", "false"),
    ("gpg.ssh.defaultKeyCommand", "true"),
    ("ssh.variant", "ssh"),
    // `git imap-send` runs the tunnel's command line; an empty one runs nothing.
    ("imap.tunnel", ""),
];

/// `diff.external` cannot be unset from the environment (an empty value makes git try to run
/// ""), so it is pinned to a program that prints what git's own diff would: a unified diff of
/// the old and new file (git passes `path old-file old-hex old-mode new-file new-hex new-mode`
/// and stops at a non-zero exit, which `diff` gives for a difference).
const PLAIN_DIFF: &str = r#"f() { printf 'diff --git a/%s b/%s\n' "$1" "$1"; diff -u --label "a/$1" --label "b/$1" -- "$2" "$5"; true; }; f"#;

/// Variables that outrank configuration, set to programs that do nothing harmful.
const PINNED_VARIABLES: &[(&str, &str)] = &[
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_CONFIG_GLOBAL", "/dev/null"),
    ("GIT_ATTR_NOSYSTEM", "1"),
    ("GIT_PAGER", "cat"),
    ("GIT_EDITOR", "true"),
    ("GIT_SEQUENCE_EDITOR", "true"),
    ("GIT_SSH_COMMAND", "ssh"),
    ("GIT_TERMINAL_PROMPT", "0"),
    // Empty: git then ignores `core.gitProxy` (whose first configured value would win over a
    // pin) and connects to `git://` remotes directly.
    ("GIT_PROXY_COMMAND", ""),
    // gpg would read a `gpg.conf` planted in the workspace (`HOME`); a home that is no
    // directory makes any verification fail instead.
    ("GNUPGHOME", "/dev/null"),
];

/// Pins git's code-running configuration in a command's environment. Every `GIT_*` variable
/// the service inherited is dropped first: `GIT_DIR`, `GIT_CONFIG_PARAMETERS` or
/// `GIT_EXTERNAL_DIFF` from the host would otherwise steer the command's git.
pub fn pin(env: &mut BTreeMap<String, String>) {
    env.retain(|name, _| !name.starts_with("GIT_"));
    for (name, value) in PINNED_VARIABLES {
        env.insert((*name).to_string(), (*value).to_string());
    }
    env.insert("GIT_CONFIG_COUNT".into(), PINNED_KEYS.len().to_string());
    for (n, (key, value)) in PINNED_KEYS.iter().enumerate() {
        env.insert(format!("GIT_CONFIG_KEY_{n}"), (*key).to_string());
        env.insert(format!("GIT_CONFIG_VALUE_{n}"), (*value).to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_replace_what_the_host_set() {
        let mut env: BTreeMap<String, String> = [
            ("GIT_DIR", "/srv/other"),
            ("GIT_CONFIG_PARAMETERS", "'core.fsmonitor'='evil'"),
            ("PATH", "/usr/bin"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .into();
        pin(&mut env);
        assert!(!env.contains_key("GIT_DIR"));
        assert!(!env.contains_key("GIT_CONFIG_PARAMETERS"));
        assert_eq!(env["PATH"], "/usr/bin");
        assert_eq!(env["GIT_CONFIG_KEY_0"], "core.fsmonitor");
        assert_eq!(env["GIT_CONFIG_VALUE_0"], "false");
        assert_eq!(env["GIT_CONFIG_COUNT"], PINNED_KEYS.len().to_string());
    }
}
