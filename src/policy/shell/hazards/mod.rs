//! Code hidden behind options: arguments and sub-languages that make an otherwise read-only
//! tool run a program or write a file (`find -exec`, `sed 's/x/y/e'`, `awk 'BEGIN{system(…)}'`,
//! `git -c core.pager=…`, `tar --to-command`, `rg --pre`, `vim -c '!…'`, `less '+!…'` …), and
//! variables that name programs (`PAGER=…`, `LD_PRELOAD=…`). The pre-check makes each of these
//! high-risk, so no classifier decides them and no saved key covers them. Options are matched
//! as GNU tools read them, abbreviations included (`--to-comm=` is `--to-command=`).

mod args;
mod awk;
mod containers;
mod git;
mod sed;
mod tools;
pub mod variables;

pub use args::{Args, cluster_has, names_a_path_outside, option_is};

use super::ast::Word;
use super::command::interpreter_family;

/// Why this program, with these arguments, runs code or writes files its name does not say,
/// if it does. `name` is normalized; `argv[0]` is the command word.
#[must_use]
pub fn hidden_code(name: &str, argv: &[Word]) -> Option<String> {
    let args = Args::of(argv);
    let found = |why: &str| Some(why.to_string());
    // Every launcher, whatever arm below knows its program too (`uv`, `mise`).
    if let Some(why) = launched(name, argv) {
        return Some(why);
    }
    match name {
        "find" | "gfind" | "bfs" => {
            let hit = args.texts().find(|t| {
                matches!(
                    *t,
                    "-exec"
                        | "-execdir"
                        | "-ok"
                        | "-okdir"
                        | "-delete"
                        | "-fprint"
                        | "-fprint0"
                        | "-fprintf"
                        | "-fls"
                )
            })?;
            Some(format!(
                "`find {hit}` runs commands, deletes or writes files"
            ))
        }
        "fd" | "fdfind" => args
            .has(&["-x", "--exec", "-X", "--exec-batch"])
            .then(|| "`fd --exec` runs commands".to_string()),
        "sed" | "gsed" => sed::hazard_in_args(args),
        "awk" | "gawk" | "mawk" | "nawk" | "original-awk" | "busybox-awk" => {
            awk::hazard_in_args(args)
        }
        "git" => git::hazard(args),
        "vim" | "vi" | "nvim" | "ex" | "view" | "vimdiff" | "gvim" | "rvim" | "evim" | "editor"
        | "sensible-editor" | "vim-tiny" => tools::editor(name, args),
        "ed" | "red" => args
            .any(|t| t.starts_with('!'))
            .then(|| format!("`{name} !…` runs a command")),
        "less" | "more" | "most" | "pg" => (args.any(|t| t.starts_with('+'))
            || args.has(&["-k", "--lesskey-file", "--lesskey-src", "--lesskey-content"]))
        .then(|| format!("`{name}` is given commands to run at start")),
        // `-P` and `-H` take their program attached too (`man -Pcurl ls`, `man -aHx ls`).
        "man" => (args.has(&["--pager", "--html", "--browser"])
            || args.any(|t| args::cluster_has(t, 'P') || args::cluster_has(t, 'H')))
        .then(|| "`man` is told which program to run".into()),
        "gdb" | "lldb" => tools::debugger(name, args),
        "enable" => args
            .any(|t| t.starts_with('-') && t.contains('f'))
            .then(|| "`enable -f` loads a shared library into the shell".into()),
        "mapfile" | "readarray" => args
            .any(|t| t.starts_with('-') && t.contains('C'))
            .then(|| format!("`{name} -C` runs a callback")),
        "hash" => args
            .any(|t| t.starts_with('-') && t.contains('p'))
            .then(|| "`hash -p` makes a command name run another program".into()),
        "shopt" => args
            .any(|t| t == "expand_aliases" || t == "posix")
            .then(|| "`shopt` changes how later words are read (aliases, posix mode)".into()),
        "set" => tools::set_options(args),
        "let" => found("`let` evaluates strings as arithmetic, whose subscripts can run commands"),
        "test" | "[" | "[[" => args
            .contains("-v")
            .then(|| "`-v` evaluates a subscript, which can run commands".into()),
        "run-parts" => found("`run-parts` runs every program in a directory"),
        "crontab" => (!args.texts().all(|t| t == "-l" || t.starts_with("-u")))
            .then(|| "`crontab` installs commands that run later".into()),
        "at" | "batch" => found("`at` schedules commands to run later"),
        "tar" | "gtar" | "bsdtar" => tools::tar(args),
        // The pager they pipe their matches into.
        "ag" | "ack" | "ack-grep" => args
            .has(&["--pager"])
            .then(|| format!("`{name} --pager` runs a program")),
        "rg" | "ripgrep" => args
            .has(&["--pre", "--hostname-bin"])
            .then(|| "`rg --pre`/`--hostname-bin` runs a program".into()),
        "sort" => args
            .has(&["--compress-program"])
            .then(|| "`sort --compress-program` runs a program".into()),
        "zip" => (args.has(&["--unzip-command"]) || args.any(|t| t.starts_with("-TT")))
            .then(|| "`zip -TT` runs a program to test the archive".into()),
        "strace" | "ltrace" => args
            .values(&["-o", "--output"])
            .any(|v| v.starts_with('!') || v.starts_with('|'))
            .then(|| format!("`{name} -o '!…'` pipes into a command")),
        "tcpdump" => args
            .has(&["-z"])
            .then(|| "`tcpdump -z` runs a program".into()),
        "sqlite3" => tools::sqlite(args),
        "dc" => args
            .any(|t| t.contains('!'))
            .then(|| "the `dc` program runs a shell command".into()),
        "tmux" | "screen" | "byobu" => {
            found("a terminal multiplexer runs commands outside this command's view")
        }
        "xdg-open" | "sensible-browser" | "x-www-browser" | "www-browser" | "gio" => {
            found("it opens files with whatever program is registered for them")
        }
        "parallel" => found("`parallel` runs shell commands built from its arguments"),
        "make" | "gmake" | "cargo" | "go" | "npm" | "pnpm" | "yarn" | "bun" | "npx" | "pnpx"
        | "bunx" | "uv" | "uvx" | "pip" | "pip3" | "pipx" | "poetry" | "pipenv" | "conda"
        | "bundle" | "pdm" | "hatch" | "rye" | "mise" | "rtx" | "direnv" => {
            tools::build_tool(name, args)
        }
        "split" | "gsplit" => args
            .has(&["--filter"])
            .then(|| "`split --filter` runs a command for each piece".into()),
        "gh" => gh(args),
        "kubectl" | "helm" | "oc" => containers::cluster_client(name, args),
        "docker"
        | "podman"
        | "nerdctl"
        | "finch"
        | "docker-compose"
        | "podman-compose"
        | "lxc"
        | "incus"
        | "toolbox"
        | "distrobox"
        | "distrobox-enter"
        | "distrobox-ephemeral"
        | "machinectl"
        | "flatpak"
        | "vagrant"
        | "systemd-nspawn"
        | "schroot" => containers::runs_elsewhere(name, args),
        "faketime" => args
            .has(&["--date-prog"])
            .then(|| "`faketime --date-prog` runs a program".into()),
        "ip" => (args.contains("netns") && args.contains("exec"))
            .then(|| "`ip netns exec` runs a command".into()),
        "nix-shell" | "nix" => args
            .has(&["--run", "--command", "-c"])
            .then(|| format!("`{name}` runs a shell command")),
        "capsh" => found("`capsh` runs a shell with its arguments"),
        // Any ad-hoc run: its modules delete, copy and run commands (`ansible` module).
        "ansible" => args
            .any(|t| !matches!(t, "--version" | "--help" | "-h"))
            .then(|| "`ansible` runs modules that change hosts, this one among them".into()),
        "ansible-playbook" | "ansible-pull" | "ansible-console" => {
            found("it runs the tasks a playbook or its console names, commands among them")
        }
        // `cmake -E rm -rf DIR` is `rm -rf DIR` (judged so by the denylist, too).
        // (`rm -r`/`-f` are high-risk; plain `cmake -E rm x.o` is judged as `rm x.o` alone.)
        "cmake" => {
            let mut words = args.texts();
            let removes = match (words.next(), words.next()) {
                (Some("-E"), Some("remove_directory")) => true,
                (Some("-E"), Some("rm" | "remove")) => words.any(|t| {
                    t.len() > 1
                        && t.starts_with('-')
                        && !t.starts_with("--")
                        && t.contains(['r', 'R', 'f'])
                }),
                _ => false,
            };
            removes.then(|| "`cmake -E rm -r`/`-f` deletes without asking".into())
        }
        // `bazel run --run_under='CMD' //x` runs the target under a command line.
        "bazel" | "bazelisk" => args
            .any(|t| t.starts_with("--run_under"))
            .then(|| format!("`{name} --run_under` runs a command line")),
        "start-stop-daemon" => found("`start-stop-daemon` runs the program it is given"),
        "flatpak-spawn" => found("`flatpak-spawn` runs a command outside the sandbox"),
        "ld.so" => args
            .has(&["--preload", "--audit", "--library-path"])
            .then(|| "the dynamic loader is told to load other code".into()),
        "emacs" | "emacsclient" => args
            .has(&[
                "--eval",
                "-eval",
                "-e",
                "--execute",
                "-l",
                "--load",
                "-f",
                "--funcall",
                "-batch",
                "--batch",
                "--script",
                "-x",
            ])
            .then(|| format!("`{name}` is given Lisp to run")),
        "gnuplot" | "octave" | "octave-cli" | "raku" | "perl6" | "rakudo" | "bb" | "babashka" => {
            args.has(&["-e", "--eval", "--execute"])
                .then(|| format!("`{name}` is given code to run"))
        }
        "m4" | "gm4" => found("`m4` runs shell commands through `syscmd` and `esyscmd`"),
        "gpg" | "gpg2" => args
            .has(&[
                "--agent-program",
                "--dirmngr-program",
                "--photo-viewer",
                "--exec-path",
                "--keyserver-options",
            ])
            .then(|| "`gpg` is told which program to run".into()),
        "deno" => args
            .any(|t| {
                t.starts_with("http://")
                    || t.starts_with("https://")
                    || t.starts_with("npm:")
                    || t.starts_with("jsr:")
            })
            .then(|| "`deno` runs code it downloads".into()),
        "xterm" | "uxterm" | "urxvt" | "rxvt" | "gnome-terminal" | "konsole" | "xfce4-terminal"
        | "alacritty" | "kitty" | "terminator" | "tilix" | "st" | "foot" | "wezterm" => {
            found("a terminal emulator runs the command it is given")
        }
        _ => python_module(name, args),
    }
}

/// `pyenv exec CMD…`, `op run -- CMD…` and the other launchers of `launchers`: they run
/// whatever command follows, so no saved key may cover them (the command itself is judged too).
fn launched(name: &str, argv: &[Word]) -> Option<String> {
    super::launchers::runs_something(name, argv.get(1..).unwrap_or(&[]))
        .then(|| format!("`{name}` runs whatever command follows"))
}

/// gh set up to run a program or a shell alias, handing git options on (`gh repo clone R --
/// -c core.fsmonitor=…` is `git clone -c …`), or printing its token.
fn gh(args: Args<'_>) -> Option<String> {
    if matches!(args.first(), Some("alias" | "config" | "extension" | "ext"))
        && args.any(|t| matches!(t, "set" | "install" | "exec" | "import"))
    {
        return Some("`gh` is set up to run a program or shell alias".into());
    }
    if args.first() == Some("repo")
        && args.any(|t| matches!(t, "clone" | "fork"))
        && args.contains("--")
    {
        return Some("`gh repo clone … --` hands options to `git clone`".into());
    }
    // `gh api https://host/…` sends its token and fields to that host.
    if args.first() == Some("api") && args.any(|t| t.contains("://")) {
        return Some("`gh api` is given a URL: another server".into());
    }
    if args.first() == Some("api") && gh_api_writes(args) {
        return Some("`gh api` with a method or fields writes to the API".into());
    }
    // `-t` may sit in a cluster (`gh auth status -th github.com`).
    (args.first() == Some("auth")
        && (args.any(|t| matches!(t, "token" | "git-credential"))
            || args.has(&["--show-token"])
            || args.any(|t| args::cluster_has(t, 't'))))
    .then(|| "`gh auth` prints the token it holds".into())
}

/// `gh api -X DELETE …`, a POST made by fields (`-f`, `-F`) or `--input`: a write to the API,
/// as `http_request` with any method but GET or HEAD is high-risk. gh takes the last `-X`;
/// every one given must be a read. With an explicit GET, fields are query parameters.
fn gh_api_writes(args: Args<'_>) -> bool {
    let mut methods = args.values(&["-X", "--method"]).peekable();
    let explicit = methods.peek().is_some();
    let reads = |m: &str| m.eq_ignore_ascii_case("GET") || m.eq_ignore_ascii_case("HEAD");
    let all_read = methods.all(reads);
    let fields = args.has(&["-f", "-F", "--field", "--raw-field"])
        || args.any(|t| t.starts_with("-f") || t.starts_with("-F"));
    // `-iX DELETE`, `-iF title=x`: an option bunched after another (its value unread here).
    let bunched = args.any(|t| {
        args::short_cluster(t).is_some_and(|c| c.len() > 1 && c[1..].contains(['X', 'f', 'F']))
    });
    !all_read || bunched || args.has(&["--input"]) || (fields && !explicit)
}

/// `python -m timeit '…'` and `python -m pdb -c '…'` run code given as arguments;
/// `python -m ansible adhoc …` is `ansible`.
fn python_module(name: &str, args: Args<'_>) -> Option<String> {
    if !matches!(interpreter_family(name), "python" | "pypy") {
        return None;
    }
    let module = args.values(&["-m"]).next()?;
    matches!(
        module,
        "timeit" | "pdb" | "code" | "cProfile" | "profile" | "trace" | "ansible"
    )
    .then(|| format!("`{name} -m {module}` runs code given as an argument"))
}

#[cfg(test)]
mod tests;
