//! Container and cluster tools whose subcommands run a command, or an image's program, on a
//! daemon or a cluster — outside this command's sandbox (`docker run|exec|create|build`,
//! `docker compose up|run|exec`, `kubectl exec|run|debug|apply`, `lxc exec`, `toolbox run` …).
//! Like `npm exec` and `uv run`, these run whatever follows, so no saved key may cover them: a
//! `docker exec` or `kubectl exec` key saved for `ls` would otherwise run any command in any
//! container unasked (`kubectl exec db -- rm -rf /data`).
//!
//! kubectl and oc also have options that run a program (`kustomize --helm-command`) or hand
//! the cluster's credentials to another server or to the model (`-s URL`, `config view --raw`,
//! `get secrets -o yaml`): [`cluster_client`].
//!
//! The subcommand is the first word that is not an option, once the program's global options
//! and their values are skipped (`docker -H tcp://h run`, `kubectl -n prod exec`). After a
//! global option this table does not know (it could take the next word and hide the
//! subcommand), every word that is not an option is taken for a possible subcommand: a
//! container named like one (`docker logs build`) then only costs its command a key.

use super::args::Args;

/// Subcommands of a Docker-like command line that run a container or a command in one;
/// `build` and `bake` run a Dockerfile's `RUN` steps on the daemon (with the host's network
/// when asked).
const DOCKER_RUNS: &[&str] = &["run", "exec", "create", "debug", "unshare", "build", "bake"];

/// Docker's management commands, with those of their subcommands that run something.
const DOCKER_GROUPS: &[(&str, &[&str])] = &[
    ("container", &["run", "exec", "create", "debug"]),
    ("image", &["build"]),
    ("builder", &["build"]),
    ("buildx", &["build", "b", "bake"]),
    ("compose", COMPOSE_RUNS),
    ("stack", &["deploy", "up"]),
    ("service", &["create", "update"]),
    ("plugin", &["install", "enable", "upgrade", "create"]),
    ("machine", &["ssh"]),
    // podman's `kube play FILE` (and the older `play kube`) starts the pods a file describes.
    ("kube", &["play"]),
    ("play", &["kube"]),
];

/// Compose's subcommands that start services from a compose file or run a command in one.
const COMPOSE_RUNS: &[&str] = &["up", "run", "exec", "create", "watch", "scale", "build"];

/// Docker's global options that take a value, and those that take none.
const DOCKER_GLOBAL_VALUES: &[&str] = &[
    "-H",
    "--host",
    "-c",
    "--context",
    "--config",
    "-l",
    "--log-level",
    "--tlscacert",
    "--tlscert",
    "--tlskey",
    "--url",
    "--connection",
    "--identity",
    "--root",
    "--runroot",
    "--storage-driver",
    "--cgroup-manager",
    "--namespace",
    "-n",
    "-a",
    "--address",
];
const DOCKER_GLOBAL_FLAGS: &[&str] = &[
    "-D",
    "--debug",
    "--tls",
    "--tlsverify",
    "-v",
    "--version",
    "--help",
    "--remote",
    "-r",
];

/// kubectl's global options that take a value (they may also come after the subcommand).
const KUBECTL_GLOBAL_VALUES: &[&str] = &[
    "-n",
    "--namespace",
    "--context",
    "--cluster",
    "--user",
    "--as",
    "--as-group",
    "--as-uid",
    "--request-timeout",
    "--token",
    "--certificate-authority",
    "--client-certificate",
    "--client-key",
    "--tls-server-name",
    "--cache-dir",
    "-v",
    "--v",
    "--vmodule",
    "--log-file",
    "--profile",
    "--profile-output",
    "--username",
    "--password",
    "--log-flush-frequency",
    "-o",
    "--output",
    "-l",
    "--selector",
    "-f",
    "--filename",
    "-k",
    "--kustomize",
    "-c",
    "--container",
    "--image",
    "--template",
    "--field-selector",
];
const KUBECTL_GLOBAL_FLAGS: &[&str] = &[
    "--insecure-skip-tls-verify",
    "--match-server-version",
    "--warnings-as-errors",
    "--disable-compression",
    "-A",
    "--all-namespaces",
    "-i",
    "-t",
    "-it",
    "-ti",
    "--stdin",
    "--tty",
    "-q",
    "--quiet",
    "-w",
    "--watch",
    "--help",
    "-h",
];

/// The words that are not options, in order, up to a `--`: options in `with_value` skip their
/// value (unless attached). `None` when an option before the first such word is in neither
/// list: it could take the next word as its value.
fn operands<'a>(args: Args<'a>, with_value: &[&str], flags: &[&str]) -> Option<Vec<&'a str>> {
    let mut operands = Vec::new();
    let mut words = args.texts();
    while let Some(text) = words.next() {
        if text == "--" {
            break;
        }
        if text.len() > 1 && text.starts_with('-') {
            let option = text.split_once('=').map_or(text, |(option, _)| option);
            if with_value.contains(&option) {
                if !text.contains('=') {
                    words.next();
                }
            } else if operands.is_empty() && !flags.contains(&option) {
                return None;
            }
            continue;
        }
        operands.push(text);
    }
    Some(operands)
}

/// The operands of a Docker-like or kubectl-like command line (`operands` with its global
/// options); `None` for another program or after an unknown option.
fn operands_of<'a>(name: &str, args: Args<'a>) -> Option<Vec<&'a str>> {
    match name {
        "docker" | "podman" | "nerdctl" | "finch" => {
            operands(args, DOCKER_GLOBAL_VALUES, DOCKER_GLOBAL_FLAGS)
        }
        "kubectl" | "oc" => operands(args, KUBECTL_GLOBAL_VALUES, KUBECTL_GLOBAL_FLAGS),
        _ => None,
    }
}

/// Why `name` with `args` runs a command or an image's program in a container or a cluster,
/// or copies files between one and this host.
pub fn runs_elsewhere(name: &str, args: Args<'_>) -> Option<String> {
    elsewhere(name, args, operands_of(name, args).as_deref())
}

/// [`runs_elsewhere`], given the command line's operands (read once per command).
fn elsewhere(name: &str, args: Args<'_>, known: Option<&[&str]>) -> Option<String> {
    let every_word: Vec<&str> = args.texts().filter(|t| !t.starts_with('-')).collect();
    if let Some(hit) = copy_hit(name, known, &every_word) {
        return Some(format!(
            "`{name} {hit}` copies files between this host and a container, a machine or a \
             cluster, outside this command's sandbox"
        ));
    }
    let hit = match name {
        "docker" | "podman" | "nerdctl" | "finch" => match known {
            Some(words) => subcommand_hit(words, DOCKER_RUNS, DOCKER_GROUPS),
            None => find(&every_word, DOCKER_RUNS).or_else(|| {
                DOCKER_GROUPS.iter().find_map(|(group, runs)| {
                    let at = every_word.iter().position(|w| w == group)?;
                    find(&every_word[at + 1..], runs).map(|r| format!("{group} {r}"))
                })
            }),
        },
        "docker-compose" | "podman-compose" => find(&every_word, COMPOSE_RUNS),
        "kubectl" | "oc" => kubectl_hit(args, known, &every_word),
        "lxc" | "incus" => find(&every_word, &["exec", "shell", "launch", "console"]),
        "toolbox" => find(&every_word, &["run", "enter"]),
        "distrobox" => find(&every_word, &["enter", "ephemeral", "assemble"]),
        "machinectl" => find(&every_word, &["shell", "login", "start"]),
        "flatpak" => find(&every_word, &["run", "enter"]),
        "vagrant" => find(&every_word, &["ssh", "up", "provision"]),
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

/// The subcommand that copies files between this host and a container, a machine or a
/// cluster. The daemon (often root) or the cluster writes what it is given where it is told,
/// where this command's sandbox does not reach: a `docker cp` key saved for one copy must not
/// cover `docker cp c:/x ~/.bashrc`, nor a `kubectl cp` key an upload of `~/.ssh`.
fn copy_hit(name: &str, known: Option<&[&str]>, every_word: &[&str]) -> Option<String> {
    match name {
        "docker" | "podman" | "nerdctl" | "finch" => match known {
            Some(words) => subcommand_hit(
                words,
                &["cp"],
                &[
                    ("container", &["cp"]),
                    ("compose", &["cp"]),
                    ("machine", &["cp"]),
                ],
            ),
            None => find(every_word, &["cp"]),
        },
        "docker-compose" | "podman-compose" => find(every_word, &["cp"]),
        "kubectl" | "oc" => match known {
            Some(words) => (words.first() == Some(&"cp")).then(|| "cp".to_string()),
            None => find(every_word, &["cp"]),
        },
        "lxc" | "incus" => every_word
            .contains(&"file")
            .then(|| find(every_word, &["push", "pull", "edit", "mount"]))
            .flatten()
            .map(|action| format!("file {action}")),
        "machinectl" => find(every_word, &["copy-to", "copy-from", "bind"]),
        "vagrant" => find(every_word, &["upload", "scp"]),
        _ => None,
    }
}

/// The running subcommand of kubectl or oc: one that runs a command or an image (`exec`,
/// `run`, `debug`), or starts what a file or the caller describes (`apply`, `replace`,
/// `patch`, `create -f`, `create job`, `set image`).
fn kubectl_hit(args: Args<'_>, known: Option<&[&str]>, every_word: &[&str]) -> Option<String> {
    const RUNS: &[&str] = &[
        "exec", "run", "debug", "attach", "rsh", "apply", "replace", "patch",
    ];
    let Some(words) = known else {
        return find(every_word, RUNS).or_else(|| find(every_word, &["create"]));
    };
    let (sub, kind) = (*words.first()?, words.get(1).copied());
    if RUNS.contains(&sub) {
        return Some(sub.to_string());
    }
    match (sub, kind) {
        ("create", _) if from_file(args) => Some("create -f".into()),
        ("create", Some(kind @ ("job" | "deployment" | "deploy" | "cronjob" | "cj" | "token"))) => {
            Some(format!("create {kind}"))
        }
        ("set", Some("image")) => Some("set image".into()),
        _ => None,
    }
}

/// The first operand if it runs something, or a group and a running subcommand among the
/// operands after it (a group's own options, which this table does not know, may take values
/// before it: `docker compose -f x.yml -p p up`).
fn subcommand_hit(words: &[&str], runs: &[&str], groups: &[(&str, &[&str])]) -> Option<String> {
    let first = *words.first()?;
    if runs.contains(&first) {
        return Some(first.to_string());
    }
    let (group, group_runs) = groups.iter().find(|(group, _)| *group == first)?;
    find(&words[1..], group_runs).map(|action| format!("{group} {action}"))
}

/// `-f FILE`, `-fFILE`, `--filename`, `-k DIR`, `--kustomize`: what to act on comes from files.
fn from_file(args: Args<'_>) -> bool {
    args.has(&["-f", "--filename", "-k", "--kustomize"])
        || args.any(|t| (t.starts_with("-f") || t.starts_with("-k")) && !t.starts_with("--"))
}

fn find(words: &[&str], subcommands: &[&str]) -> Option<String> {
    subcommands
        .iter()
        .find(|s| words.contains(s))
        .map(|s| (*s).to_string())
}

/// kubectl, oc and helm options that run a program of the caller's choosing or hand the
/// cluster's credentials to the model or another server; then what [`runs_elsewhere`] finds.
pub fn cluster_client(name: &str, args: Args<'_>) -> Option<String> {
    if args.has(&["--kubeconfig"]) {
        return Some(format!(
            "`{name} --kubeconfig` reads a file that can run credential plugins"
        ));
    }
    // `config set-credentials --exec-command=…` runs it on the next request, and
    // `config set-cluster --server=…` sends the next request's token elsewhere.
    let known = operands(args, KUBECTL_GLOBAL_VALUES, KUBECTL_GLOBAL_FLAGS);
    let words = known
        .clone()
        .unwrap_or_else(|| args.texts().filter(|t| !t.starts_with('-')).collect());
    if words.first() == Some(&"config") && words.get(1).is_some_and(|t| t.starts_with("set")) {
        return Some(format!(
            "`{name} config set…` can name a program the next request runs"
        ));
    }
    // `kustomize --enable-helm --helm-command=./x`, and plugins that run programs; helm's
    // post-renderer is a program it runs on what it renders.
    if args.has(&[
        "--helm-command",
        "--enable-alpha-plugins",
        "--enable-exec",
        "--post-renderer",
    ]) {
        return Some(format!("`{name}` is told to run a program"));
    }
    // `edit` runs an editor; `proxy` serves the cluster with the caller's credentials.
    if name != "helm"
        && words
            .first()
            .is_some_and(|w| matches!(*w, "edit" | "proxy"))
    {
        return Some(format!(
            "`{name}` runs an editor or serves the cluster's credentials"
        ));
    }
    if name != "helm" && (sends_credentials(args) || shows_secrets(args)) {
        return Some(format!("`{name}` sends or shows the cluster's credentials"));
    }
    if name == "helm" && args.has(&["--kube-apiserver", "--kube-token"]) {
        return Some("`helm` sends the cluster's credentials to the server it is given".into());
    }
    elsewhere(name, args, known.as_deref())
}

/// `-s URL`/`--server URL` (attached or not) sends the kubeconfig's token to that server.
fn sends_credentials(args: Args<'_>) -> bool {
    args.values(&["-s", "--server"]).next().is_some()
}

/// `config view --raw|--flatten`, `get --raw …`, `create token`, and secrets printed with
/// their data (`get secret x -o yaml`, `--template`).
fn shows_secrets(args: Args<'_>) -> bool {
    if args.has(&["--raw", "--flatten"]) {
        return true;
    }
    let words: Vec<String> = args
        .texts()
        .filter(|t| !t.starts_with('-'))
        .map(str::to_ascii_lowercase)
        .collect();
    let said = |w: &str| words.iter().any(|t| t == w);
    if said("create") && said("token") {
        return true;
    }
    let secrets = words
        .iter()
        .flat_map(|w| w.split([',', '/']))
        .any(|part| part.starts_with("secret"));
    // `-Ao yaml`: `-o` bunched after another option.
    let output = args
        .values(&["-o", "--output"])
        .any(|format| format != "name")
        || args.has(&["--template"])
        || args
            .any(|t| super::args::short_cluster(t).is_some_and(|c| c.len() > 1 && c.contains('o')));
    // A file names what is read (`get -f s.yaml -o yaml`): it may be a secret.
    (secrets || from_file(args)) && output
}
