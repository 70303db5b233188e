//! What a word's text mentions, found in one pass: the substrings every secret path holds
//! (`passwd`, `.ssh`, `/etc` …) and raw sockets (`/dev/tcp/`, `/dev/udp/`). Each rule used to
//! search every word once per substring; one automaton answers all of them at once.

use aho_corasick::AhoCorasick;
use std::sync::LazyLock;

/// Substrings one of which every secret path holds: words without any (and without a glob or
/// brace that could produce one) are passed over cheaply.
const SECRET_HINTS: &[&str] = &[
    "passwd",
    "shadow",
    "sudoers",
    "id_",
    "authorized_keys",
    "known_hosts",
    "credentials",
    "private-keys",
    ".netrc",
    ".ssh",
    ".aws",
    ".gnupg",
    "/etc",
    "git-credentials",
    "environ",
    ".kube",
    ".docker",
    "hosts.yml",
    "gcloud",
    ".pypirc",
    ".npmrc",
    ".cargo",
    "secrets",
    "ssh_host_",
    ".azure",
    ".pgpass",
    ".vault-token",
    ".codex",
    ".claude",
    "_history",
    "kubelet",
    "rancher",
    "tailscale",
    "krb5cc",
    ".config",
    "private",
    "mem",
    "kcore",
    "port",
];

/// Paths bash turns into network connections.
const RAW_SOCKETS: &[&str] = &["/dev/tcp/", "/dev/udp/"];

static HINTS: LazyLock<Option<AhoCorasick>> = LazyLock::new(|| AhoCorasick::new(SECRET_HINTS).ok());

/// What a text mentions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Marks {
    /// A substring of some secret path.
    pub secret_hint: bool,
    /// `/dev/tcp/` or `/dev/udp/`.
    pub raw_socket: bool,
}

/// Scans `text`. Should the automaton fail to build, the hint is set for every word: the rules
/// behind it then look closer at every word (slower, never laxer).
#[must_use]
pub fn marks(text: &str) -> Marks {
    Marks {
        secret_hint: HINTS.as_ref().is_none_or(|a| a.is_match(text)),
        // Both sockets start with `/dev/`; most words hold no `/` at all.
        raw_socket: text.contains('/') && RAW_SOCKETS.iter().any(|s| text.contains(s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_kind() {
        assert_eq!(marks("ls -la"), Marks::default());
        assert!(marks("/etc/shadow").secret_hint);
        assert!(marks("~/.ssh/id_rsa").secret_hint);
        assert!(marks("3<>/dev/tcp/1.2.3.4/80").raw_socket);
        let both = marks("/etc/x>/dev/udp/h/1");
        assert!(both.secret_hint && both.raw_socket);
    }
}
