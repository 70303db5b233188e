//! Programs whose arguments are a command (`sudo`, `env`, `timeout`, `taskset`, `strace` …):
//! how to skip their own options to the command they run, and which option carries a command
//! line of its own (`env -S '…'`, `flock -c '…'`, `script -c '…'`). The denylist and the
//! pre-check judge the command behind them, so `strace -f rm -rf /` is `rm -rf /`.

use super::ast::Word;
use super::command::CommandView;
use super::names::is_wrapper_name;
use std::sync::LazyLock;

/// A wrapper that runs a command, and how to skip its own options.
pub struct Wrapper {
    pub name: &'static str,
    /// Options that take the next word as their value (or the rest of a short cluster).
    pub with_value: &'static [&'static str],
    /// Options that take the next two words (`bwrap --bind SRC DEST`).
    pub with_two_values: &'static [&'static str],
    /// Accepts `NAME=value` words before the command (for `env`, any word holding `=`).
    pub assignments: bool,
    /// Positional words before the command (`timeout DURATION`, `chroot DIR`, `taskset MASK`).
    pub positional: usize,
    /// Options whose value is itself a command line (`env -S`, `flock -c`, `script -c`).
    pub script_options: &'static [&'static str],
    /// Whether the words after its options are a command it runs (`script`'s are a file name:
    /// its command comes only through `-c`).
    pub runs_rest: bool,
}

const fn wrapper(name: &'static str, with_value: &'static [&'static str]) -> Wrapper {
    Wrapper {
        name,
        with_value,
        with_two_values: &[],
        assignments: false,
        positional: 0,
        script_options: &[],
        runs_rest: true,
    }
}

const fn positional(mut w: Wrapper, count: usize) -> Wrapper {
    w.positional = count;
    w
}

const fn scripts(mut w: Wrapper, options: &'static [&'static str]) -> Wrapper {
    w.script_options = options;
    w
}

const fn assignments(mut w: Wrapper) -> Wrapper {
    w.assignments = true;
    w
}

const fn no_command_words(mut w: Wrapper) -> Wrapper {
    w.runs_rest = false;
    w
}

const fn two_values(mut w: Wrapper, options: &'static [&'static str]) -> Wrapper {
    w.with_two_values = options;
    w
}

pub const WRAPPERS: &[Wrapper] = &[
    assignments(wrapper(
        "sudo",
        &[
            "-u",
            "-g",
            "-C",
            "-D",
            "-h",
            "-p",
            "-r",
            "-t",
            "-U",
            "-T",
            "-R",
            "--user",
            "--group",
            "--prompt",
            "--chdir",
            "--host",
            "--close-from",
            "--role",
            "--type",
            "--other-user",
            "--command-timeout",
        ],
    )),
    wrapper("doas", &["-u", "-C"]),
    scripts(
        assignments(wrapper(
            "env",
            &["-u", "-C", "-S", "--unset", "--chdir", "--split-string"],
        )),
        &["-S", "--split-string"],
    ),
    wrapper("nohup", &[]),
    wrapper("nice", &["-n", "--adjustment"]),
    positional(
        wrapper("timeout", &["-s", "-k", "--signal", "--kill-after"]),
        1,
    ),
    wrapper(
        "stdbuf",
        &["-i", "-o", "-e", "--input", "--output", "--error"],
    ),
    wrapper("ionice", &["-c", "-n", "--class", "--classdata"]),
    wrapper("command", &[]),
    wrapper("builtin", &[]),
    wrapper("exec", &["-a"]),
    wrapper(
        "xargs",
        &[
            "-I",
            "-L",
            "-n",
            "-P",
            "-s",
            "-d",
            "-E",
            "-a",
            "--max-args",
            "--max-procs",
            "--delimiter",
            "--arg-file",
            "--max-chars",
            "--process-slot-var",
        ],
    ),
    // `-d` takes its value only attached (`-d=permanent`): the next word is the command.
    wrapper("watch", &["-n", "--interval", "-q", "--equexit"]),
    wrapper("time", &["-f", "-o", "--format", "--output"]),
    wrapper("setsid", &[]),
    wrapper("unbuffer", &[]),
    wrapper("busybox", &[]),
    wrapper("toybox", &[]),
    positional(wrapper("chroot", &["--userspec", "--groups"]), 1),
    scripts(
        positional(
            wrapper(
                "flock",
                &[
                    "-w",
                    "-E",
                    "-c",
                    "--timeout",
                    "--command",
                    "--conflict-exit-code",
                ],
            ),
            1,
        ),
        &["-c", "--command"],
    ),
    positional(wrapper("taskset", &[]), 1),
    positional(
        wrapper(
            "chrt",
            &[
                "-T",
                "-P",
                "-D",
                "--sched-runtime",
                "--sched-period",
                "--sched-deadline",
            ],
        ),
        1,
    ),
    wrapper(
        "strace",
        &[
            "-e",
            "-o",
            "-p",
            "-s",
            "-u",
            "-E",
            "-a",
            "-b",
            "-I",
            "-O",
            "-P",
            "-S",
            "-X",
            "-U",
            "--trace",
            "--output",
            "--attach",
            "--user",
            "--env",
            "--string-limit",
            "--signal",
            "--status",
            "--trace-path",
            "--summary-columns",
            "--abbrev",
            "--verbose",
            "--raw",
            "--read",
            "--write",
            "--fault",
            "--inject",
            "--columns",
            "--const-print-style",
            "--detach-on",
            "--interruptible",
        ],
    ),
    wrapper(
        "ltrace",
        &[
            "-e",
            "-o",
            "-p",
            "-s",
            "-u",
            "-n",
            "-a",
            "-A",
            "-D",
            "-F",
            "-x",
            "-L",
            "-w",
            "--output",
            "--indent",
            "--align",
            "--library",
            "--config",
        ],
    ),
    wrapper(
        "unshare",
        &[
            "-S",
            "-G",
            "-R",
            "-w",
            "--setuid",
            "--setgid",
            "--root",
            "--wd",
            "--map-user",
            "--map-group",
            "--propagation",
            "--monotonic",
            "--boottime",
            "--map-users",
            "--map-groups",
        ],
    ),
    no_command_words(scripts(
        wrapper(
            "script",
            &[
                "-c",
                "--command",
                "-E",
                "--echo",
                "-I",
                "--log-in",
                "-O",
                "--log-out",
                "-B",
                "--log-io",
                "-T",
                "--log-timing",
                "-m",
                "--logging-format",
                "-t",
                "--timing",
                "-o",
                "--output-limit",
            ],
        ),
        &["-c", "--command"],
    )),
    wrapper(
        "nsenter",
        &[
            "-t",
            "-S",
            "-G",
            "--target",
            "--setuid",
            "--setgid",
            "-N",
            "--net-socket",
            "-W",
            "--wdns",
        ],
    ),
    wrapper(
        "numactl",
        &[
            "-m",
            "-N",
            "-C",
            "-p",
            "-i",
            "-P",
            "--membind",
            "--cpunodebind",
            "--physcpubind",
            "--preferred",
            "--interleave",
            "--preferred-many",
            "-w",
            "--weighted-interleave",
        ],
    ),
    wrapper(
        "setpriv",
        &[
            "--reuid",
            "--regid",
            "--ruid",
            "--rgid",
            "--euid",
            "--egid",
            "--groups",
            "--inh-caps",
            "--ambient-caps",
            "--bounding-set",
            "--securebits",
            "--pdeathsig",
            "--selinux-label",
            "--apparmor-profile",
            "--landlock-access",
            "--landlock-rule",
        ],
    ),
    wrapper(
        "systemd-run",
        &[
            "-u",
            "--unit",
            "-p",
            "--property",
            "-E",
            "--setenv",
            "--slice",
            "--json",
            "--description",
            "--uid",
            "--gid",
            "--nice",
            "--working-directory",
            "-M",
            "--machine",
            "-H",
            "--host",
            "--on-active",
            "--on-boot",
            "--on-startup",
            "--on-unit-active",
            "--on-unit-inactive",
            "--on-calendar",
            "--timer-property",
            "--path-property",
            "--socket-property",
            "--service-type",
            "--expand-environment",
        ],
    ),
    // `faketime [-m] [-f] [-p PID] [--exclude-monotonic] [--date-prog PROG] TIMESTAMP CMD`:
    // `-f` is a flag (libfaketime's source), not an option with a value.
    positional(wrapper("faketime", &["-p", "--date-prog"]), 1),
    positional(wrapper("gosu", &[]), 1),
    wrapper(
        "systemd-cat",
        &[
            "-t",
            "--identifier",
            "-p",
            "--priority",
            "--stderr-priority",
            "--level-prefix",
            "--namespace",
        ],
    ),
    wrapper("systemd-inhibit", &["--what", "--who", "--why", "--mode"]),
    wrapper("tini", &["-p", "-e"]),
    wrapper("dumb-init", &["-r", "--rewrite"]),
    wrapper(
        "rlwrap",
        &[
            "-a", "-b", "-C", "-D", "-f", "-F", "-g", "-H", "-l", "-m", "-M", "-O", "-p", "-P",
            "-q", "-S", "-t", "-w", "-z",
        ],
    ),
    positional(wrapper("su-exec", &[]), 1),
    // The dynamic loader run as a program: `ld.so [OPTIONS] PROGRAM ARGS…`.
    wrapper(
        "ld.so",
        &[
            "--library-path",
            "--preload",
            "--audit",
            "--argv0",
            "--inhibit-rpath",
            "--glibc-hwcaps-mask",
            "--glibc-hwcaps-prepend",
        ],
    ),
    wrapper(
        "torsocks",
        &[
            "-u",
            "-p",
            "-a",
            "-P",
            "--user",
            "--pass",
            "--address",
            "--port",
        ],
    ),
    wrapper("proxychains", &["-f"]),
    wrapper("proxychains4", &["-f"]),
    wrapper("dbus-run-session", &["--config-file", "--dbus-daemon"]),
    wrapper(
        "xvfb-run",
        &[
            "-n",
            "-s",
            "-f",
            "-e",
            "-p",
            "-w",
            "--server-args",
            "--server-num",
            "--auth-file",
            "--error-file",
            "--xauth-protocol",
            "--wait",
        ],
    ),
    wrapper("ssh-agent", &["-a", "-E", "-t", "-P", "-O"]),
    wrapper("valgrind", &[]),
    wrapper("catchsegv", &[]),
    wrapper("eatmydata", &[]),
    wrapper("nocache", &[]),
    wrapper("chronic", &[]),
    wrapper("ifne", &[]),
    wrapper("fakeroot", &["-l", "-s", "-i", "-b", "--lib", "--faked"]),
    wrapper(
        "fakechroot",
        &[
            "-l",
            "-d",
            "-e",
            "-c",
            "-s",
            "--lib",
            "--elfloader",
            "--environment",
            "--config-dir",
        ],
    ),
    wrapper("cgexec", &["-g"]),
    wrapper(
        "runcon",
        &[
            "-u", "-r", "-t", "-l", "--user", "--role", "--type", "--range",
        ],
    ),
    wrapper(
        "chpst",
        &[
            "-u", "-U", "-b", "-e", "-/", "-n", "-l", "-L", "-m", "-d", "-o", "-p", "-f", "-c",
            "-r", "-t",
        ],
    ),
    wrapper("firejail", &[]),
    two_values(
        wrapper(
            "bwrap",
            &[
                "--args",
                "--userns",
                "--userns2",
                "--pidns",
                "--uid",
                "--gid",
                "--hostname",
                "--chdir",
                "--unsetenv",
                "--lock-file",
                "--sync-fd",
                "--remount-ro",
                "--exec-label",
                "--file-label",
                "--proc",
                "--dev",
                "--tmpfs",
                "--tmp-overlay",
                "--ro-overlay",
                "--overlay-src",
                "--mqueue",
                "--dir",
                "--seccomp",
                "--add-seccomp-fd",
                "--block-fd",
                "--userns-block-fd",
                "--info-fd",
                "--json-status-fd",
                "--cap-add",
                "--cap-drop",
                "--perms",
                "--size",
                "--argv0",
            ],
        ),
        &[
            "--setenv",
            "--bind",
            "--bind-try",
            "--dev-bind",
            "--dev-bind-try",
            "--ro-bind",
            "--ro-bind-try",
            "--symlink",
            "--file",
            "--bind-data",
            "--ro-bind-data",
            "--chmod",
            "--bind-fd",
            "--ro-bind-fd",
        ],
    ),
    scripts(positional(wrapper("sg", &["-c"]), 1), &["-c"]),
    positional(wrapper("setarch", &[]), 1),
    wrapper("linux32", &[]),
    wrapper("linux64", &[]),
    wrapper("prlimit", &["-p", "--pid", "-o", "--output"]),
    wrapper("cpulimit", &["-l", "--limit", "-p", "--pid", "-e", "--exe"]),
    wrapper("sshpass", &["-p", "-f", "-d", "-P"]),
    wrapper("dbus-launch", &[]),
    wrapper("coproc", &[]),
    wrapper("caffeinate", &["-t", "-w"]),
];

/// The wrappers sorted by name, for a binary search per segment instead of a scan.
static BY_NAME: LazyLock<Vec<&'static Wrapper>> = LazyLock::new(|| {
    let mut sorted: Vec<&'static Wrapper> = WRAPPERS.iter().collect();
    sorted.sort_by_key(|w| w.name);
    sorted
});

/// The wrapper called `name` (normalized), if it is one.
#[must_use]
pub fn find(name: &str) -> Option<&'static Wrapper> {
    // Most commands are no wrapper: a `match` on the names answers them without a search.
    if !is_wrapper_name(name) {
        return None;
    }
    BY_NAME
        .binary_search_by(|w| w.name.cmp(name))
        .ok()
        .and_then(|i| BY_NAME.get(i).copied())
}

/// Skips a wrapper's options, assignments and positional words; records the command lines its
/// script options carry and the variables it sets in `view`; returns the words of the command
/// it runs (none when it runs only what its options carry).
pub fn skip_options<'a>(
    wrapper: &Wrapper,
    words: &'a [Word],
    view: &mut CommandView<'a>,
) -> &'a [Word] {
    let mut i = skip_leading_options(wrapper, words, view);
    // `runcon CONTEXT CMD` names a context only when no option does (`runcon -t T CMD`).
    let mut positionals = if wrapper.name == "runcon" {
        usize::from(i == 0)
    } else {
        wrapper.positional
    };
    while positionals > 0 && i < words.len() {
        i += 1;
        positionals -= 1;
        // `flock FILE -c '…'`: its options may follow its positional word.
        let rest = words.get(i..).unwrap_or(&[]);
        i += skip_leading_options(wrapper, rest, view);
    }
    let rest = words.get(i..).unwrap_or(&[]);
    if wrapper.runs_rest {
        return rest;
    }
    // Its command comes only through its script option, which GNU getopt also finds after the
    // file name (`script -q /dev/null -c '…'`).
    let mut later = rest.iter();
    while let Some(word) = later.next() {
        let text = word.text();
        if wrapper.script_options.contains(&text) {
            view.inline_scripts
                .extend(later.next().map(|w| w.text().to_string()));
        } else if let Some((option, value)) = text.split_once('=')
            && wrapper.script_options.contains(&option)
        {
            view.inline_scripts.push(value.to_string());
        }
    }
    &[]
}

fn skip_leading_options<'a>(
    wrapper: &Wrapper,
    words: &'a [Word],
    view: &mut CommandView<'a>,
) -> usize {
    let inline = &mut view.inline_scripts;
    let mut i = 0;
    while i < words.len() {
        let Some(text) = words[i].literal() else {
            break;
        };
        if text == "--" {
            return i + 1;
        }
        if let Some(long) = text.strip_prefix("--")
            && !long.is_empty()
        {
            let (written, attached) = match text.split_once('=') {
                Some((o, v)) => (o, Some(v.to_string())),
                None => (text, None),
            };
            // getopt_long takes any unambiguous prefix (`timeout --sig KILL`, `env --spl`).
            let option = long_option(wrapper, written);
            if wrapper.with_two_values.contains(&option) {
                i += 3;
                continue;
            }
            let takes = wrapper.with_value.contains(&option);
            let value = match attached {
                Some(v) => Some(v),
                None if takes => {
                    i += 1;
                    words.get(i).map(|w| w.text().to_string())
                }
                None => None,
            };
            if wrapper.script_options.contains(&option) {
                inline.extend(value.map(|v| split_string(wrapper, &v)));
            } else if let Some(piped) = value
                .as_deref()
                .and_then(|v| piped_output(wrapper, option, v))
            {
                inline.push(piped);
            }
            i += 1;
            continue;
        }
        if text.starts_with('-') && text.len() > 1 {
            let cluster: Vec<char> = text.chars().skip(1).collect();
            for (at, c) in cluster.iter().enumerate() {
                let option = format!("-{c}");
                if wrapper.with_value.contains(&option.as_str()) {
                    let attached: String = cluster[at + 1..].iter().collect();
                    let value = if attached.is_empty() {
                        i += 1;
                        words.get(i).map(|w| w.text().to_string())
                    } else {
                        Some(attached)
                    };
                    if wrapper.script_options.contains(&option.as_str()) {
                        inline.extend(value.map(|v| split_string(wrapper, &v)));
                    } else if let Some(piped) = value
                        .as_deref()
                        .and_then(|v| piped_output(wrapper, &option, v))
                    {
                        inline.push(piped);
                    }
                    break;
                }
            }
            i += 1;
            continue;
        }
        if wrapper.assignments && is_assignment_for(wrapper, text) {
            view.assignments.push(text);
            i += 1;
            continue;
        }
        break;
    }
    i
}

/// The long option `written` names: itself, or the one known option it is a prefix of. A
/// prefix of several is taken as one that takes a value (getopt refuses it anyway).
fn long_option<'a>(wrapper: &Wrapper, written: &'a str) -> &'a str {
    let known = wrapper
        .with_two_values
        .iter()
        .chain(wrapper.with_value)
        .chain(wrapper.script_options)
        .copied()
        .filter(|o| o.starts_with("--"));
    let mut matches = known
        .clone()
        .filter(|o| o.starts_with(written) && written.len() > 2);
    if known.clone().any(|o| o == written) {
        return written;
    }
    match (matches.next(), matches.next()) {
        (Some(only), None) => only,
        (Some(first), Some(_)) => {
            let all_valued = known
                .filter(|o| o.starts_with(written))
                .all(|o| wrapper.with_value.contains(&o));
            if all_valued { first } else { written }
        }
        _ => written,
    }
}

/// `env -S` reads `\_` as a space (so `sh\_-c\_…` is `sh -c …`): the command string is judged
/// with it as bash would see the words.
fn split_string(wrapper: &Wrapper, value: &str) -> String {
    if wrapper.name == "env" {
        value.replace("\\_", " ")
    } else {
        value.to_string()
    }
}

/// strace and ltrace write their output to a command when `-o` starts with `!` or `|`.
fn piped_output(wrapper: &Wrapper, option: &str, value: &str) -> Option<String> {
    let tracer = matches!(wrapper.name, "strace" | "ltrace");
    let output = option == "-o" || option == "--output";
    let command = value
        .strip_prefix('!')
        .or_else(|| value.strip_prefix('|'))?;
    (tracer && output).then(|| command.to_string())
}

/// `NAME=value`: for `env`, any word holding `=` before the command is an assignment (even
/// `BASH_FUNC_x%%=…`), so the command behind it is never mistaken for one.
fn is_assignment_for(wrapper: &Wrapper, text: &str) -> bool {
    if wrapper.name == "env" {
        return text.find('=').is_some_and(|eq| eq > 0);
    }
    is_assignment_word(text)
}

/// `NAME=value` with a shell-valid name.
#[must_use]
pub fn is_assignment_word(text: &str) -> bool {
    text.split_once('=').is_some_and(|(name, _)| {
        name.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::shell::names::WRAPPER_NAMES;

    /// The fast name test and the table name the same wrappers.
    #[test]
    fn the_name_list_is_the_table() {
        let mut table: Vec<&str> = WRAPPERS.iter().map(|w| w.name).collect();
        let mut names = WRAPPER_NAMES.to_vec();
        table.sort_unstable();
        names.sort_unstable();
        assert_eq!(table, names);
        assert!(
            WRAPPERS
                .iter()
                .all(|w| find(w.name).is_some_and(|f| f.name == w.name))
        );
    }
}
