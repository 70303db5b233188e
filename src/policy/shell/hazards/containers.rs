//! Container and cluster tools whose subcommands run a command, or an image's program, on a
//! daemon or a cluster — outside this command's sandbox (`docker run|exec|create`, `docker
//! compose up|run|exec`, `kubectl exec|run|debug`, `lxc exec`, `toolbox run` …). Like `npm
//! exec` and `uv run`, these run whatever follows, so no saved key may cover them: a `docker
//! exec` or `kubectl exec` key saved for `ls` would otherwise run any command in any container
//! unasked (`kubectl exec db -- rm -rf /data`).
//!
//! Subcommands are looked for among all the words that are not options, not only the first:
//! global options that take a value come before the subcommand (`docker -H tcp://h run …`,
//! `kubectl -n prod exec …`), and a container or service that happens to be named like a
//! subcommand only costs its command a key.

use super::args::Args;

/// Subcommands of a Docker-like command line that run a container or a command in one.
const DOCKER_RUNS: &[&str] = &["run", "exec", "create", "debug", "unshare"];

/// Docker's management commands, with those of their subcommands that run something.
const DOCKER_GROUPS: &[(&str, &[&str])] = &[
    ("container", &["run", "exec", "create", "debug"]),
    ("compose", COMPOSE_RUNS),
    ("stack", &["deploy", "up"]),
    ("service", &["create", "update"]),
    ("plugin", &["install", "enable", "upgrade", "create"]),
    ("machine", &["ssh"]),
];

/// Compose's subcommands that start services from a compose file or run a command in one.
const COMPOSE_RUNS: &[&str] = &["up", "run", "exec", "create", "watch"];

/// Why `name` with `args` runs a command or an image's program in a container or a cluster.
pub fn runs_elsewhere(name: &str, args: Args<'_>) -> Option<String> {
    let words: Vec<&str> = args.texts().filter(|t| !t.starts_with('-')).collect();
    let said = |sub: &str| words.contains(&sub);
    let hit = match name {
        "docker" | "podman" | "nerdctl" | "finch" => DOCKER_RUNS
            .iter()
            .find(|s| said(s))
            .map(|s| (*s).to_string())
            .or_else(|| group_hit(&words, DOCKER_GROUPS)),
        "docker-compose" | "podman-compose" => find(&words, COMPOSE_RUNS),
        "kubectl" | "oc" => find(&words, &["exec", "run", "debug", "attach", "rsh"]),
        "lxc" | "incus" => find(&words, &["exec", "shell", "launch", "console"]),
        "toolbox" => find(&words, &["run", "enter"]),
        "distrobox" => find(&words, &["enter", "ephemeral", "assemble"]),
        "machinectl" => find(&words, &["shell", "login", "start"]),
        "flatpak" => find(&words, &["run", "enter"]),
        "vagrant" => find(&words, &["ssh", "up", "provision"]),
        "distrobox-enter" | "distrobox-ephemeral" | "systemd-nspawn" | "schroot" => {
            Some(String::new())
        }
        _ => None,
    }?;
    let what = if hit.is_empty() {
        format!("`{name}`")
    } else {
        format!("`{name} {hit}`")
    };
    Some(format!(
        "{what} runs a command or an image's program in a container, a machine or a cluster, \
         outside this command's sandbox"
    ))
}

fn find(words: &[&str], subcommands: &[&str]) -> Option<String> {
    subcommands
        .iter()
        .find(|s| words.contains(s))
        .map(|s| (*s).to_string())
}

/// `group action` when a management command is followed (later) by one of its running
/// subcommands.
fn group_hit(words: &[&str], groups: &[(&str, &[&str])]) -> Option<String> {
    groups.iter().find_map(|(group, runs)| {
        let at = words.iter().position(|w| w == group)?;
        find(&words[at + 1..], runs).map(|action| format!("{group} {action}"))
    })
}
