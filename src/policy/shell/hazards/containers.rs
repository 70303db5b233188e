//! Container and cluster tools whose subcommands run a command, or an image's program, on a
//! daemon or a cluster — outside this command's sandbox (`docker run|exec|create`, `docker
//! compose up|run|exec`, `kubectl exec|run|debug`, `lxc exec`, `toolbox run` …). Like `npm
//! exec` and `uv run`, these run whatever follows, so no saved key may cover them: a `docker
//! exec` or `kubectl exec` key saved for `ls` would otherwise run any command in any container
//! unasked (`kubectl exec db -- rm -rf /data`).
//!
//! kubectl and oc also have options that run a program (`kustomize --helm-command`) or hand
//! the cluster's credentials to another server or to the model (`-s URL`, `config view --raw`,
//! `get secrets -o yaml`): [`cluster_client`].
//!
//! Subcommands are looked for among all the words that are not options, not only the first:
//! global options that take a value come before the subcommand (`docker -H tcp://h run …`,
//! `kubectl -n prod exec …`), and a container or service that happens to be named like a
//! subcommand only costs its command a key.

use super::args::Args;

/// Subcommands of a Docker-like command line that run a container or a command in one.
/// `build` and `bake` run a Dockerfile's `RUN` steps on the daemon (with the host's network
/// when asked).
const DOCKER_RUNS: &[&str] = &["run", "exec", "create", "debug", "unshare", "build", "bake"];

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
const COMPOSE_RUNS: &[&str] = &["up", "run", "exec", "create", "watch", "scale", "build"];

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
        "kubectl" | "oc" => {
            find(&words, &["exec", "run", "debug", "attach", "rsh"]).or_else(|| {
                // `kubectl create job x --image=i -- CMD`, like `kubectl run`.
                let at = words.iter().position(|w| *w == "create")?;
                find(&words[at + 1..], &["job", "deployment", "cronjob"])
                    .map(|kind| format!("create {kind}"))
            })
        }
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

/// kubectl and oc options that run a program of the caller's choosing or hand the cluster's
/// credentials to the model or another server.
pub fn cluster_client(name: &str, args: Args<'_>) -> Option<String> {
    let words: Vec<&str> = args.texts().filter(|t| !t.starts_with('-')).collect();
    if args.has(&["--kubeconfig"])
        // `config set-credentials --exec-command=…` runs it on the next request.
        || (args.first() == Some("config") && args.any(|t| t.starts_with("set")))
    {
        return Some(format!(
            "`{name} --kubeconfig` reads a file that can run credential plugins"
        ));
    }
    // `kustomize --enable-helm --helm-command=./x`, and plugins that run programs.
    if args.has(&["--helm-command", "--enable-alpha-plugins", "--enable-exec"]) {
        return Some(format!(
            "`{name}` is told to run a program to build manifests"
        ));
    }
    // `-s`/`--server` sends the kubeconfig's token to that server; `config view --raw`,
    // `create token` and secrets printed whole show credentials.
    let shows_secrets = (words.contains(&"config") && args.has(&["--raw"]))
        || (words.contains(&"create") && words.contains(&"token"))
        || (words.contains(&"get")
            && words.iter().any(|w| w.starts_with("secret"))
            && args.any(|t| t.starts_with("-o") || t.starts_with("--output")));
    if args.any(|t| t == "-s" || t.starts_with("-s=")) || args.has(&["--server"]) || shows_secrets {
        return Some(format!("`{name}` sends or shows the cluster's credentials"));
    }
    runs_elsewhere(name, args)
}
