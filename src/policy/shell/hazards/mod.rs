//! Code hidden behind options: arguments and sub-languages that make an otherwise read-only
//! tool run a program or write a file (`find -exec`, `sed 's/x/y/e'`, `awk 'BEGIN{system(…)}'`,
//! `git -c core.pager=…`, `tar --to-command`, `rg --pre`, `vim -c '!…'`, `less '+!…'` …), and
//! variables that name programs (`PAGER=…`, `LD_PRELOAD=…`). The pre-check makes each of these
//! high-risk, so no classifier decides them and no saved key covers them.

mod awk;
mod git;
mod sed;
pub mod variables;

use super::ast::Word;
use super::command::interpreter_family;

/// Why this program, with these arguments, runs code or writes files its name does not say,
/// if it does. `name` is normalized; `args[0]` is the command word.
#[must_use]
pub fn hidden_code(name: &str, args: &[Word]) -> Option<String> {
    let texts: Vec<&str> = args.iter().skip(1).map(Word::text).collect();
    let any = |pred: &dyn Fn(&str) -> bool| texts.iter().any(|t| pred(t));
    let option = |names: &[&str]| {
        texts.iter().any(|t| {
            names
                .iter()
                .any(|n| *t == *n || t.strip_prefix(n).is_some_and(|r| r.starts_with('=')))
        })
    };
    let found = |why: &str| Some(why.to_string());
    match name {
        "find" | "gfind" | "bfs" => {
            let hit = texts.iter().find(|t| {
                matches!(
                    **t,
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
        "fd" | "fdfind" => option(&["-x", "--exec", "-X", "--exec-batch"])
            .then(|| "`fd --exec` runs commands".to_string()),
        "sed" | "gsed" => sed_hazard(&texts),
        "awk" | "gawk" | "mawk" | "nawk" | "original-awk" => awk_hazard(&texts),
        "git" => git::hazard(args),
        "tar" | "gtar" | "bsdtar" => tar_hazard(&texts),
        "rg" | "ripgrep" => {
            option(&["--pre"]).then(|| "`rg --pre` runs a program on every file".into())
        }
        "sort" => option(&["--compress-program"])
            .then(|| "`sort --compress-program` runs a program".into()),
        "zip" => (option(&["--unzip-command"]) || texts.contains(&"-TT"))
            .then(|| "`zip -TT` runs a program to test the archive".into()),
        "vim" | "vi" | "nvim" | "ex" | "view" | "vimdiff" | "gvim" | "rvim" | "evim" => {
            let runs = any(&|t| t.starts_with('+'))
                || option(&["-c", "--cmd", "-S", "-s", "-u", "-e", "-E", "-es", "-Es"])
                || any(&|t| t.starts_with("-c") || t.starts_with("-S"));
            runs.then(|| format!("`{name}` is given editor commands, which can run programs"))
        }
        "less" | "more" | "most" | "pg" => (any(&|t| t.starts_with('+'))
            || option(&["-k", "--lesskey-file", "--lesskey-src", "--lesskey-content"]))
        .then(|| format!("`{name}` is given commands to run at start")),
        "man" => option(&["-P", "--pager", "-H", "--html", "--browser"])
            .then(|| "`man` is told which program to run".into()),
        "gdb" | "lldb" => option(&[
            "-ex",
            "--ex",
            "-iex",
            "-x",
            "-ix",
            "--command",
            "--eval-command",
            "--init-eval-command",
            "--init-command",
            "-o",
            "--one-line",
            "-s",
            "--source",
        ])
        .then(|| format!("`{name}` is given commands, which can run programs")),
        "enable" => any(&|t| t.starts_with('-') && t.contains('f'))
            .then(|| "`enable -f` loads a shared library into the shell".into()),
        "mapfile" | "readarray" => any(&|t| t.starts_with('-') && t.contains('C'))
            .then(|| format!("`{name} -C` runs a callback")),
        "shopt" => (texts.contains(&"expand_aliases") && any(&|t| t.starts_with("-s")))
            .then(|| "`shopt -s expand_aliases` makes later words mean something else".into()),
        "set" => (texts
            .windows(2)
            .any(|w| w[0].starts_with('-') && w[0].contains('o') && w[1] == "posix")
            || texts.contains(&"--posix"))
        .then(|| "`set -o posix` makes bash expand aliases".into()),
        "run-parts" => found("`run-parts` runs every program in a directory"),
        "crontab" => (!texts.iter().all(|t| *t == "-l" || t.starts_with("-u")))
            .then(|| "`crontab` installs commands that run later".into()),
        "at" | "batch" => found("`at` schedules commands to run later"),
        "make" | "gmake" => (option(&["--eval", "-E"])
            || any(&|t| {
                ["SHELL=", ".SHELLFLAGS=", "MAKESHELL="]
                    .iter()
                    .any(|p| t.starts_with(p))
            }))
        .then(|| "`make` is given code or a shell to run its recipes with".into()),
        // Options of the prefix binaries that run a program whatever the subcommand: a saved
        // `cargo build` key must not cover `cargo build --config build.rustc-wrapper=…`.
        "cargo" => option(&["--config"])
            .then(|| "`cargo --config` can name programs for cargo to run".into()),
        "go" => option(&["-toolexec", "--toolexec", "-exec", "--exec"])
            .then(|| "`go -toolexec`/`-exec` runs a program".into()),
        "npm" | "pnpm" | "yarn" if option(&["--script-shell", "--node-options"]) => {
            found("it is told which shell or code to run scripts with")
        }
        "tcpdump" => option(&["-z"]).then(|| "`tcpdump -z` runs a program".into()),
        "tmux" | "screen" | "byobu" => {
            found("a terminal multiplexer runs commands outside this command's view")
        }
        "xdg-open" | "sensible-browser" | "x-www-browser" | "www-browser" | "gio" => {
            found("it opens files with whatever program is registered for them")
        }
        "npx" | "pnpx" | "bunx" | "uvx" => {
            found("it runs a package, downloading it if it is not installed")
        }
        "pipx" | "npm" | "pnpm" | "yarn" | "bun"
            if matches!(
                (name, texts.first().copied()),
                ("pipx", Some("run"))
                    | ("npm", Some("exec" | "x"))
                    | ("pnpm" | "yarn", Some("dlx"))
                    | ("bun", Some("x"))
            ) =>
        {
            found("it runs a package, downloading it if it is not installed")
        }
        "parallel" => found("`parallel` runs shell commands built from its arguments"),
        "dc" => any(&|t| t.contains('!')).then(|| "the `dc` program runs a shell command".into()),
        "sqlite3" => any(&|t| t.contains(".shell") || t.contains(".system"))
            .then(|| "`sqlite3` is told to run a shell command".into()),
        _ => python_module(name, &texts),
    }
}

/// `python -m timeit '…'` and `python -m pdb -c '…'` run code given as arguments.
fn python_module(name: &str, texts: &[&str]) -> Option<String> {
    if !matches!(interpreter_family(name), "python" | "pypy") {
        return None;
    }
    let at = texts.iter().position(|t| *t == "-m")?;
    let module = *texts.get(at + 1)?;
    matches!(
        module,
        "timeit" | "pdb" | "code" | "cProfile" | "profile" | "trace"
    )
    .then(|| format!("`{name} -m {module}` runs code given as an argument"))
}

/// sed: a program read from a file cannot be judged; a script that runs or writes is marked.
fn sed_hazard(texts: &[&str]) -> Option<String> {
    let mut scripts = Vec::new();
    let mut i = 0;
    let mut explicit = false;
    let mut first_operand = None;
    while i < texts.len() {
        let t = texts[i];
        if t == "-f"
            || t.starts_with("--file")
            || (t.starts_with('-') && !t.starts_with("--") && t.contains('f') && !t.contains('e'))
        {
            return Some("`sed -f` runs a script from a file nobody reviewed".into());
        }
        if t == "-e" || t == "--expression" {
            explicit = true;
            scripts.extend(texts.get(i + 1));
            i += 2;
            continue;
        }
        if let Some(s) = t.strip_prefix("--expression=") {
            explicit = true;
            scripts.push(s);
        } else if let Some(s) = t.strip_prefix("-e").filter(|_| !t.starts_with("--")) {
            explicit = true;
            scripts.push(s);
        } else if t.starts_with('-') && t.len() > 1 {
            if matches!(t, "-l" | "--line-length") {
                i += 1;
            }
        } else if first_operand.is_none() {
            first_operand = Some(t);
        }
        i += 1;
    }
    if !explicit {
        scripts.extend(first_operand);
    }
    scripts
        .iter()
        .find_map(|s| sed::hazard(s))
        .map(str::to_string)
}

/// awk: a program read from a file (or a loaded extension) cannot be judged.
fn awk_hazard(texts: &[&str]) -> Option<String> {
    let mut i = 0;
    while i < texts.len() {
        let t = texts[i];
        match t {
            "-f" | "--file" | "-E" | "--exec" | "-i" | "--include" | "-l" | "--load" => {
                return Some(format!(
                    "`awk {t}` runs a program from a file nobody reviewed"
                ));
            }
            _ if t.starts_with("--file=")
                || t.starts_with("--include=")
                || t.starts_with("--load=")
                || (t.starts_with("-f") && t.len() > 2) =>
            {
                return Some("`awk -f` runs a program from a file nobody reviewed".into());
            }
            "-F" | "-v" | "--field-separator" | "--assign" | "-W" => i += 2,
            "--" => {
                return texts
                    .get(i + 1)
                    .and_then(|p| awk::hazard(p))
                    .map(str::to_string);
            }
            _ if t.starts_with('-') && t.len() > 1 => i += 1,
            program => return awk::hazard(program).map(str::to_string),
        }
    }
    None
}

/// tar: programs it runs for compression, checkpoints, volumes or every extracted file.
fn tar_hazard(texts: &[&str]) -> Option<String> {
    const LONG: &[&str] = &[
        "--to-command",
        "--checkpoint-action",
        "--use-compress-program",
        "--info-script",
        "--new-volume-script",
        "--rsh-command",
        "--rmt-command",
    ];
    let long = texts.iter().find(|t| LONG.iter().any(|l| t.starts_with(l)));
    if let Some(hit) = long {
        return Some(format!("`tar {hit}` runs a program"));
    }
    // Short clusters: `-I PROG` and `-F SCRIPT` take programs; so do the same letters in the
    // old-style first word (`tar xIf zstd a.tar`).
    let with_value = ['f', 'C', 'T', 'X', 'b', 'H', 'K', 'L', 'N', 'g', 'V'];
    for (at, t) in texts.iter().enumerate() {
        let cluster = match t.strip_prefix('-') {
            Some(c) if !c.starts_with('-') => c,
            None if at == 0 => t,
            _ => continue,
        };
        for c in cluster.chars() {
            if c == 'I' || c == 'F' {
                return Some(format!("`tar -{c}` runs a program"));
            }
            if with_value.contains(&c) {
                break;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::hidden_code;
    use crate::policy::shell::command::command_view;
    use crate::policy::shell::lexer::lex;

    fn check(cmd: &str) -> Option<String> {
        let lexed = lex(cmd);
        let view = command_view(&lexed.script.segments[0].words);
        hidden_code(view.name.unwrap_or_default(), view.args)
    }

    #[test]
    fn finds_hidden_programs() {
        for cmd in [
            "find . -name x -exec id \\;",
            "find . -fprint /tmp/out",
            "find . -delete",
            "fd -x rm",
            "sed 's/a/b/e' f",
            "sed -n -e p -e 'w out' f",
            "sed --expression='1e id' f",
            "sed -f script.sed f",
            "sed -nf s.sed f",
            "awk 'BEGIN{system(\"id\")}'",
            "awk -F: '{print | \"sh\"}' f",
            "awk -f prog.awk f",
            "gawk -l filefuncs 1",
            "awk -v x=1 '{print > \"out\"}'",
            "tar --to-command='sh -c id' -xf a.tar",
            "tar -xf a.tar --checkpoint=1 --checkpoint-action=exec=id",
            "tar -I 'sh -c id' -xf a.tar",
            "tar xIf zstd a.tar",
            "tar --use-compress-program=x -cf a.tar .",
            "rg --pre ./x.sh pattern",
            "rg --pre=./x pattern",
            "sort --compress-program=sh f",
            "zip -T -TT 'sh -c id' a.zip f",
            "vim -c '!id' f",
            "vim +'!id' f",
            "nvim --cmd x f",
            "vi -es < x",
            "less '+!id' f",
            "more +/x f",
            "man -P 'sh -c id' ls",
            "gdb -batch -ex 'shell id'",
            "enable -f ./x.so x",
            "mapfile -C cb -c 1 arr",
            "shopt -s expand_aliases",
            "set -o posix",
            "run-parts ./d",
            "crontab f",
            "at now",
            "make --eval='x:;id'",
            "make SHELL=./x build",
            "cargo build --config build.rustc-wrapper=./x",
            "go build -toolexec=./x",
            "npm test --script-shell=./x",
            "make SHELL=./x build",
            "cargo build --config build.rustc-wrapper=./x",
            "go build -toolexec=./x",
            "npm test --script-shell=./x",
            "python3 -m timeit 'import os'",
            "npx cowsay",
            "tmux new -d id",
            "parallel echo ::: a",
            "sqlite3 db '.shell id'",
        ] {
            assert!(check(cmd).is_some(), "{cmd}");
        }
    }

    #[test]
    fn read_only_uses_pass() {
        for cmd in [
            "find . -name '*.rs' -print",
            "sed 's/a/b/g' f",
            "sed -n '1,5p' f",
            "sed -i 's/a/b/' f",
            "awk '{print $1}' f",
            "awk -F, '$3 > 10 {print $1}' f",
            "tar -xzf a.tar.gz",
            "tar czf a.tgz dir",
            "tar -tvf a.tar",
            "rg -n TODO",
            "sort -u f",
            "zip -r a.zip dir",
            "vim f",
            "less f",
            "man ls",
            "crontab -l",
            "make test",
            "python3 -m pytest",
            "npm test",
            "npm run build",
        ] {
            assert_eq!(check(cmd), None, "{cmd}");
        }
    }
}
