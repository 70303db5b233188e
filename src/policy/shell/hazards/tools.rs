//! The hazard rules of single programs, one function each: editors, debuggers, `set`, tar,
//! sqlite3, and the build and package tools whose options run programs whatever the subcommand
//! (a saved `cargo build` key must not cover `cargo build --config build.rustc-wrapper=…`).

use super::args::Args;

/// vim and kin: commands at start (`-c`, `+…`, `--cmd`), scripts (`-S`, `-s`), a vimrc (`-u`),
/// and Ex mode reading commands (`-e`, `-es`).
pub fn editor(name: &str, args: Args<'_>) -> Option<String> {
    let runs = args.any(|t| t.starts_with('+'))
        || args.has(&["--cmd", "-u", "-e", "-E", "-es", "-Es", "-s"])
        || args.any(|t| t.starts_with("-c") || t.starts_with("-S"));
    runs.then(|| format!("`{name}` is given editor commands, which can run programs"))
}

/// gdb and lldb take commands on the command line (`-ex`, `-eval-command`, `-x FILE` …), with
/// one dash or two, abbreviated.
pub fn debugger(name: &str, args: Args<'_>) -> Option<String> {
    let runs = args.any(|t| {
        let Some(option) = t.strip_prefix("--").or_else(|| t.strip_prefix('-')) else {
            return false;
        };
        let option = option.split_once('=').map_or(option, |(o, _)| o);
        matches!(option, "ex" | "iex" | "x" | "ix" | "o" | "s" | "k" | "O")
            || [
                "eval-command",
                "init-eval-command",
                "command",
                "init-command",
                "one-line",
                "source",
                "batch",
            ]
            .iter()
            .any(|full| option.len() >= 3 && full.starts_with(option))
    });
    runs.then(|| format!("`{name}` is given commands, which can run programs"))
}

/// `set -o posix` (aliases expand), `set -k` (arguments become environment assignments).
pub fn set_options(args: Args<'_>) -> Option<String> {
    let texts: Vec<&str> = args.texts().collect();
    let named = texts.windows(2).any(|w| {
        w[0].starts_with('-') && w[0].contains('o') && matches!(w[1], "posix" | "keyword")
    });
    let short_k = texts
        .iter()
        .any(|t| t.starts_with('-') && !t.starts_with("--") && t.contains('k'));
    (named || short_k || texts.contains(&"--posix"))
        .then(|| "`set` changes how later words are read (posix mode, keyword arguments)".into())
}

/// tar: programs it runs for compression, checkpoints, volumes or every extracted file.
pub fn tar(args: Args<'_>) -> Option<String> {
    const LONG: &[&str] = &[
        "--to-command",
        "--checkpoint-action",
        "--use-compress-program",
        "--info-script",
        "--new-volume-script",
        "--rsh-command",
        "--rmt-command",
    ];
    if let Some(hit) = args
        .texts()
        .find(|t| LONG.iter().any(|l| super::args::option_is(t, l)))
    {
        return Some(format!("`tar {hit}` runs a program"));
    }
    // Short clusters: `-I PROG` and `-F SCRIPT` take programs; so do the same letters in the
    // old-style first word (`tar xIf zstd a.tar`).
    let with_value = ['f', 'C', 'T', 'X', 'b', 'H', 'K', 'L', 'N', 'g', 'V'];
    for (at, t) in args.texts().enumerate() {
        let (cluster, old_style) = match t.strip_prefix('-') {
            Some(c) if !c.starts_with('-') => (c, false),
            None if at == 0 => (t, true),
            _ => continue,
        };
        for c in cluster.chars() {
            if c == 'I' || c == 'F' {
                return Some(format!("`tar -{c}` runs a program"));
            }
            // In a dashed cluster a letter with a value takes the rest; in the old-style first
            // word every letter is an option, each taking its value from the words after.
            if with_value.contains(&c) && !old_style {
                break;
            }
        }
    }
    None
}

/// make's short options clustered (`-sE '…'`, `-kC dir`, `-sf x.mk`): `-E`, `-f`, `-C` and
/// `-I` give it code, another makefile or directory; `-o`, `-W`, `-j`, `-l` take the rest.
fn make_cluster(args: Args<'_>) -> bool {
    args.texts()
        .filter_map(super::args::short_cluster)
        .any(|cluster| {
            cluster
                .chars()
                .take_while(|c| !matches!(c, 'o' | 'W' | 'j' | 'l'))
                .any(|c| matches!(c, 'E' | 'f' | 'C' | 'I'))
        })
}

/// `make test CC=./x`, `make test 'ARGS=-x; id'`: a variable given on the command line
/// overrides the makefile's, and a recipe that uses it hands its value to the shell, or runs
/// the program it names (`X!=cmd` runs cmd as make starts). Which variables a recipe uses is
/// the makefile's business, so any value counts that holds shell syntax or make code (a
/// separator, a substitution, a redirection, a quote, a glob, a newline), names a program by
/// a relative or home path (`./x`, `~/x`), or is a shell; so does a variable that names a
/// program (`CC`, `PAGER` …) given a path. Spaces, flags and data paths stay plain:
/// `FILE=tests/x.py`, `CFLAGS=-O2 -g`, `PREFIX=/usr/local`, `PYTHON=python3`.
fn make_variable_runs_code(word: &str) -> bool {
    let Some((name, value)) = word.split_once('=') else {
        return false;
    };
    let name = name.trim().trim_end_matches([':', '+', '?', '!']).trim();
    let shell_syntax = value.contains([
        ';', '|', '&', '$', '`', '<', '>', '(', ')', '\n', '\'', '"', '\\', '*', '?', '[', '{',
    ]);
    word.contains("!=")
        || shell_syntax
        || value.starts_with(['.', '~'])
        || crate::policy::shell::command::is_shell(value)
        || (super::variables::names_code(name) && value.contains('/'))
        || matches!(name, "AS" | "SHELL" | "MAKESHELL" | "MAKEFILES")
}

/// sqlite3: dot-commands (`.shell`, `.system`, `.once '|cmd'`) given as arguments, or run at
/// start (`-cmd`, `-init`).
pub fn sqlite(args: Args<'_>) -> Option<String> {
    let positional: Vec<&str> = args.texts().filter(|t| !t.starts_with('-')).collect();
    let dot_command = positional
        .iter()
        .skip(1)
        .any(|t| t.trim_start().starts_with('.'));
    (dot_command || args.has(&["-cmd", "-init"]))
        .then(|| "`sqlite3` is given dot-commands, which can run programs".into())
}

/// A go flag as `-name`: go takes `--name` for every `-name` (`go vet --C /x`, `go env --w`).
fn go_flag(text: &str) -> &str {
    match text.strip_prefix('-') {
        Some(rest) if rest.starts_with('-') && rest.len() > 1 => rest,
        _ => text,
    }
}

/// Whether any of `names` (each `-name`) is given, with one dash or two, alone or `=value`.
fn go_flag_given(args: Args<'_>, names: &[&str]) -> bool {
    args.any(|t| {
        let flag = go_flag(t);
        let name = flag.split_once('=').map_or(flag, |(name, _)| name);
        names.contains(&name)
    })
}

/// Build and package tools: options that name programs, code or another build file, and
/// subcommands that run whatever command follows (or download and run a package).
pub fn build_tool(name: &str, args: Args<'_>) -> Option<String> {
    let first = args.first();
    let hit = match name {
        "make" | "gmake" => {
            args.any(|t| !t.starts_with('-') && make_variable_runs_code(t))
                || make_cluster(args)
                || args.has(&[
                    "--eval",
                    "-E",
                    "-f",
                    "--file",
                    "--makefile",
                    "-C",
                    "--directory",
                    "-I",
                    "--include-dir",
                ])
                || args.any(|t| {
                    ["SHELL=", ".SHELLFLAGS=", "MAKESHELL=", "MAKEFLAGS="]
                        .iter()
                        .any(|p| t.starts_with(p))
                })
                || args.any(|t| t.starts_with("-f") || t.starts_with("-C"))
        }
        "cargo" => {
            args.has(&["--config", "--manifest-path", "-Z"])
                || args.any(|t| t.starts_with("-Z"))
                // `cargo rustc -- -C linker=./x`: flags handed to the compiler name programs.
                || (args.subcommand_is(&["rustc", "rustdoc"]) && args.contains("--"))
                // `cargo clean --target-dir .` deletes whatever directory it is given (cargo
                // takes no abbreviations: `--target` is another option).
                || (args.subcommand_is(&["clean"])
                    && args.any(|t| t == "--target-dir" || t.starts_with("--target-dir=")))
        }
        "go" => {
            go_flag_given(
                args,
                &[
                    "-toolexec",
                    "-exec",
                    "-vettool",
                    "-overlay",
                    // `go test -C DIR` runs another directory's code, like `make -C`.
                    "-C",
                ],
            ) || (matches!(first, Some("run" | "install" | "get" | "generate"))
                && args.any(|t| t.contains('@') || t == "generate"))
                // `go env -w GOFLAGS=-toolexec=…` changes what every later go command runs.
                || (first == Some("env") && go_flag_given(args, &["-w", "-u"]))
                // `go clean -modcache` deletes the module cache, outside the workspace.
                || (first == Some("clean") && go_flag_given(args, &["-modcache"]))
                // `-ldflags '-extld=./x'` links with a program of the caller's choosing.
                // `-ldflags=-extar=./x` archives with one.
                || args.any(|t| t.contains("extld") || t.contains("extar") || t.contains("toolexec"))
                // `go tool cgo -- -wrapper ./x`: the words after `--` go to the C compiler.
                || (args.subcommand_is(&["tool"]) && args.contains("cgo") && args.contains("--"))
        }
        "npm" | "pnpm" | "yarn" | "bun" => {
            let operands = args.texts().skip(1).filter(|t| !t.starts_with('-')).count();
            // `-C DIR` (npm's short `--prefix`, pnpm's `--dir`): another directory's scripts.
            args.any(|t| t.starts_with("-C"))
                // `config edit`, `edit` and `--editor=…` run the editor they are given.
                || matches!(first, Some("edit"))
                || (matches!(first, Some("config" | "c")) && args.contains("edit"))
                // `yarn workspaces foreach -A exec …`, `pnpm recursive exec …`: the running
                // subcommand need not come first.
                || (matches!(name, "yarn" | "pnpm") && args.any(|t| matches!(t, "exec" | "dlx")))
                // Plugins and a Yarn release run in every later yarn command.
                || (name == "yarn"
                    && ((args.contains("plugin") && args.contains("import"))
                        || (args.contains("set") && args.contains("version"))))
                || args.has(&[
                "--editor",
                "--dir",
                "--script-shell",
                "--node-options",
                "--userconfig",
                "--init-module",
                "--onload-script",
                "--browser",
                "--prefix",
                // The programs npm runs as git, as the shell, as node-gyp, for `help`.
                "--git",
                "--shell",
                "--node-gyp",
                "--viewer",
            ])
                // `--global` is an option of its own, not a short `--globalconfig`.
                || args.any(|t| t != "--global" && super::args::option_is(t, "--globalconfig"))
                // Installed globally: on the PATH every later command searches.
                || (matches!(
                    first,
                    Some("install" | "i" | "add" | "link" | "ln" | "update" | "up" | "upgrade")
                ) && (args.any(|t| matches!(t, "-g" | "--global" | "--location=global"))
                    || args.values(&["--location"]).any(|v| v == "global")))
                // `npm pkg set scripts.test=…` is run by the next `npm test`.
                || (first == Some("pkg") && args.any(|t| t == "set"))
                || matches!(
                    (name, first),
                    ("npm", Some("exec" | "x" | "explore" | "set"))
                        | ("pnpm", Some("dlx" | "exec"))
                        | ("yarn", Some("dlx" | "exec" | "node"))
                        | ("bun", Some("x"))
                )
                // Configuration names the shell scripts run in (`script-shell`) and more.
                || (matches!(first, Some("config" | "c")) && args.any(|t| t == "set"))
                // `npm init foo` downloads and runs `create-foo`.
                || (matches!(first, Some("init" | "innit" | "create")) && operands > 0)
        }
        // `--python ./p` runs that file to inspect it, in every uv command (`uv pip list`).
        "uv" => {
            // `uv run CMD` and `uv tool run CMD` are launchers (`launchers`); `install` and
            // `upgrade` put programs on the PATH later commands run, `update-shell` edits the
            // shell's startup files. `uv tool list` does none of these. `tool` is looked for
            // anywhere: global options with values may come first.
            (args.contains("tool")
                && args.any(|t| {
                    matches!(
                        t,
                        "run" | "install" | "upgrade" | "update-shell" | "ensurepath"
                    )
                }))
                // `uv auth token` prints a credential.
                || (first == Some("auth") && args.contains("token"))
                || args
                    .values(&["--python", "-p"])
                    .any(|v| v.contains('/') || v.starts_with(['.', '~']))
        }
        "pip" | "pip3" => {
            args.has(&["--python", "--editor"])
                || (first == Some("config") && args.contains("edit"))
        }
        "pipx" | "poetry" | "pipenv" | "conda" | "pdm" | "hatch" | "rye" => first == Some("run"),
        "mise" | "rtx" => matches!(first, Some("exec" | "x" | "run" | "r")),
        "direnv" => first == Some("exec"),
        "bundle" => first == Some("exec"),
        "npx" | "pnpx" | "bunx" | "uvx" => true,
        _ => false,
    };
    hit.then(|| {
        format!("`{name}` is given code or a program to run (or runs whatever command follows)")
    })
}
