//! Credentials on a host by where they live: tools' logins and tokens under a home, the
//! keys and secrets system services keep under `/etc` and `/var/lib`, a container's mounted
//! secrets, and raw memory. Paths arrive split into components, normalized (`paths`).

/// Under a home directory: `(path from home, what it holds)`. The last component matches
/// its copies too (`.npmrc.bak`); a directory listed covers all it holds and itself, read
/// whole (`tar czf k.tgz ~/.kube`).
const IN_HOME: &[(&[&str], &str)] = &[
    (&[".kube"], "a cluster's credentials"),
    (&[".docker"], "registry logins"),
    (&[".config", "gh"], "GitHub CLI's token"),
    (&[".config", "gcloud"], "Google Cloud credentials"),
    (&[".azure"], "Azure credentials"),
    (&[".pypirc"], "a package index login"),
    (&[".npmrc"], "a package registry token"),
    (&[".cargo", "credentials"], "a crate registry token"),
    (&[".pgpass"], "database passwords"),
    (&[".vault-token"], "a Vault token"),
    (&[".codex", "auth.json"], "an AI agent's login"),
    (&[".claude", ".credentials"], "an AI agent's login"),
    (
        &[".bash_history"],
        "a shell history (commands typed with their secrets)",
    ),
    (
        &[".zsh_history"],
        "a shell history (commands typed with their secrets)",
    ),
];

/// From the root: `(path, what it holds)`, matched as [`IN_HOME`]'s are.
const FROM_ROOT: &[(&[&str], &str)] = &[
    (
        &["etc", "kubernetes"],
        "a cluster's keys and admin credentials",
    ),
    (
        &["etc", "rancher"],
        "a cluster's keys and admin credentials",
    ),
    (&["var", "lib", "kubelet", "pki"], "a cluster node's keys"),
    (
        &["var", "lib", "rancher"],
        "a cluster's keys and admin credentials",
    ),
    (&["etc", "ssl", "private"], "TLS private keys"),
    (&["etc", "pki", "tls", "private"], "TLS private keys"),
    (&["etc", "letsencrypt"], "TLS private keys"),
    (&["etc", "wireguard"], "VPN keys"),
    (&["etc", "openvpn"], "VPN keys"),
    (&["etc", "ipsec.secrets"], "VPN secrets"),
    (&["etc", "ipsec.d", "private"], "VPN keys"),
    (
        &["etc", "NetworkManager", "system-connections"],
        "network passwords",
    ),
    (&["etc", "wpa_supplicant"], "network passwords"),
    (&["etc", "krb5.keytab"], "Kerberos keys"),
    (
        &["etc", "mysql", "debian.cnf"],
        "a database's maintenance password",
    ),
    (&["etc", "postfix", "sasl_passwd"], "mail relay passwords"),
    (&["etc", "security", "opasswd"], "old password hashes"),
    (&["var", "lib", "tailscale"], "a VPN node's keys"),
    (
        &["run", "secrets"],
        "a container's mounted secrets (a service-account token)",
    ),
    (
        &["var", "run", "secrets"],
        "a container's mounted secrets (a service-account token)",
    ),
    (&["usr", "lib", "ssl", "private"], "TLS private keys"),
    (&["proc", "kcore"], "the machine's memory"),
    (&["dev", "mem"], "the machine's memory"),
    (&["dev", "kmem"], "the machine's memory"),
    (&["dev", "port"], "the machine's I/O ports"),
];

/// Why a path (split into components) names a credential these tables list, if it does.
pub(super) fn credential_in(components: &[&str]) -> Option<&'static str> {
    if let Some(rest) = under_home(components)
        && let Some(what) = listed(IN_HOME, rest)
    {
        return Some(what);
    }
    // Any file in a home's `.ssh` but public keys (`deploy_key`, `github`, not only `id_*`).
    if let Some([".ssh", file]) = under_home(components)
        && !file.ends_with(".pub")
    {
        return Some("SSH keys and trust files");
    }
    if let ["etc", "ssh", file] = components
        && file.starts_with("ssh_host_")
        && !file.ends_with(".pub")
    {
        return Some("the host's SSH private keys");
    }
    // Kerberos tickets: `/tmp/krb5cc_0`.
    if let ["tmp", file] = components
        && file.starts_with("krb5cc")
    {
        return Some("Kerberos tickets");
    }
    // `../../../../etc/ssl/private/k` climbs from a directory known only when it runs, as
    // far as the root if it is deep enough.
    let from_root = match components.iter().position(|c| *c != "..") {
        Some(at) if at > 0 => &components[at..],
        _ => components,
    };
    listed(FROM_ROOT, from_root)
}

/// What the first entry of `table` that `path` is, is under, or is a backup of holds.
fn listed(table: &[(&[&str], &'static str)], path: &[&str]) -> Option<&'static str> {
    table.iter().find_map(|(place, what)| {
        let (last, dirs) = place.split_last()?;
        let matches = path.len() >= place.len()
            && path.iter().zip(dirs.iter()).all(|(p, d)| p == d)
            && path.get(dirs.len()).is_some_and(|c| is_or_copies(c, last));
        matches.then_some(*what)
    })
}

/// Whether a file name is `name` or a copy of it (`.npmrc.bak`, `.npmrc~`, `credentials.toml`,
/// `sasl_passwd.db`); `.dockerignore` is not `.docker`.
fn is_or_copies(file: &str, name: &str) -> bool {
    file.strip_prefix(name)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '~', '-', '_']))
}

/// The components after a home directory `components` starts with (`~`, `~user`, `/root`,
/// `/home/user`), if it starts with one.
fn under_home<'a, 'b>(components: &'b [&'a str]) -> Option<&'b [&'a str]> {
    match components {
        [first, rest @ ..] if first.starts_with('~') => Some(rest),
        ["root", rest @ ..] => Some(rest),
        ["home", _, rest @ ..] => Some(rest),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::credential_in;

    fn of(path: &str) -> Option<&'static str> {
        let components: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        credential_in(&components)
    }

    #[test]
    fn finds_credentials_and_passes_their_neighbours() {
        for secret in [
            "~/.kube",
            "~/.kube/config",
            "/root/.docker/config.json",
            "~/.docker",
            "/home/dev/.config/gh/hosts.yml",
            "~/.npmrc.bak",
            "~/.cargo/credentials.toml",
            "~/.ssh/deploy_key",
            "/etc/kubernetes/pki/ca.key",
            "/etc/ssl/private/server.key",
            "/etc/letsencrypt/live/example.com/privkey.pem",
            "/tmp/krb5cc_0",
            "/var/run/secrets/kubernetes.io/serviceaccount/token",
            "/dev/mem",
            "/etc/ssh/ssh_host_rsa_key",
            "../../../../../etc/ssl/private/server.key",
            "/usr/lib/ssl/private/server.key",
            "/proc/kcore",
        ] {
            assert!(of(secret).is_some(), "{secret}");
        }
        for plain in [
            "~/.config",
            "~/.dockerignore",
            "~/.cargo/bin/cargo",
            "~/.ssh/id_ed25519.pub",
            "/etc/ssl/certs/ca-certificates.crt",
            "/etc/ssh/ssh_host_rsa_key.pub",
            "/etc/ssh/sshd_config",
            "project/.npmrc",
            "/tmp/build",
            "/dev/null",
            "/etc/kube",
        ] {
            assert!(of(plain).is_none(), "{plain}");
        }
    }
}
