//! Programs that run a command given after one of their subcommands: version managers
//! (`pyenv exec CMD…`, `rustup run TOOLCHAIN CMD…`), project runners (`uv run`, `poetry run`,
//! `bundle exec`), secret injectors (`op run -- CMD…`, `aws-vault exec PROFILE -- CMD…`) and
//! container or cluster shells (`kubectl exec POD -- CMD…`, `guix shell PKG -- CMD…`). Unlike
//! a wrapper (`sudo`, `timeout`), the program's first word after its name is a subcommand, and
//! only that subcommand runs a command.
//!
//! The command found is judged as a nested command: the denylist sees `uv run sudo reboot` as
//! `sudo reboot`. That only adds denies. The launcher itself is high-risk (`hazards`: no saved
//! key covers a command it may run), so a command misread here (an option whose value this
//! table does not know, taken for the command) stays a high-risk prompt, never anything laxer.

use super::ast::Word;

struct Launcher {
    name: &'static str,
    /// The subcommand that runs a command (`None`: the program itself does, `uvx CMD`).
    subcommand: Option<&'static str>,
    /// Its options that take the next word as their value.
    with_value: &'static [&'static str],
    /// Positional words between its options and the command (`rustup run TOOLCHAIN`).
    positional: usize,
    /// The command comes only after `--` (`kubectl exec POD -- CMD`); the subcommand may then
    /// follow global options (`kubectl -n prod exec …`).
    after_dashes: bool,
}

const fn launcher(name: &'static str, subcommand: &'static str) -> Launcher {
    Launcher {
        name,
        subcommand: Some(subcommand),
        with_value: &[],
        positional: 0,
        after_dashes: false,
    }
}

const fn values(mut l: Launcher, with_value: &'static [&'static str]) -> Launcher {
    l.with_value = with_value;
    l
}

const fn positional(mut l: Launcher, count: usize) -> Launcher {
    l.positional = count;
    l
}

const fn after_dashes(mut l: Launcher) -> Launcher {
    l.after_dashes = true;
    l
}

const fn no_subcommand(mut l: Launcher) -> Launcher {
    l.subcommand = None;
    l
}

const UV_VALUES: &[&str] = &[
    "--with",
    "-w",
    "--with-editable",
    "--with-requirements",
    "--python",
    "-p",
    "--package",
    "--extra",
    "--group",
    "--only-group",
    "--no-group",
    "--env-file",
    "--directory",
    "--project",
    "--index",
    "--default-index",
    "--index-url",
    "-i",
    "--extra-index-url",
    "--find-links",
    "-f",
    "--config-file",
    "--cache-dir",
    "--python-preference",
    "--from",
];

const CONDA_VALUES: &[&str] = &["-n", "--name", "-p", "--prefix", "--cwd", "-a", "--arch"];

const LAUNCHERS: &[Launcher] = &[
    launcher("pyenv", "exec"),
    launcher("rbenv", "exec"),
    launcher("nodenv", "exec"),
    launcher("goenv", "exec"),
    launcher("plenv", "exec"),
    launcher("jenv", "exec"),
    launcher("phpenv", "exec"),
    launcher("asdf", "exec"),
    after_dashes(launcher("mise", "exec")),
    after_dashes(launcher("mise", "x")),
    positional(launcher("rustup", "run"), 1),
    values(launcher("uv", "run"), UV_VALUES),
    values(no_subcommand(launcher("uvx", "")), UV_VALUES),
    values(
        launcher("pipx", "run"),
        &["--spec", "--python", "--index-url", "--pip-args"],
    ),
    launcher("poetry", "run"),
    launcher("pipenv", "run"),
    launcher("pdm", "run"),
    launcher("rye", "run"),
    launcher("hatch", "run"),
    values(
        launcher("pixi", "run"),
        &["-e", "--environment", "--manifest-path"],
    ),
    values(launcher("conda", "run"), CONDA_VALUES),
    values(launcher("mamba", "run"), CONDA_VALUES),
    values(launcher("micromamba", "run"), CONDA_VALUES),
    launcher("bundle", "exec"),
    positional(launcher("direnv", "exec"), 1),
    values(launcher("op", "run"), &["--env-file", "--environment"]),
    values(
        launcher("doppler", "run"),
        &[
            "-p",
            "--project",
            "-c",
            "--config",
            "--fallback",
            "--mount",
            "--token",
        ],
    ),
    positional(
        values(
            launcher("aws-vault", "exec"),
            &[
                "-d",
                "--duration",
                "-t",
                "--mfa-token",
                "--region",
                "--prompt",
            ],
        ),
        1,
    ),
    after_dashes(launcher("chamber", "exec")),
    after_dashes(launcher("dotenvx", "run")),
    after_dashes(launcher("infisical", "run")),
    positional(no_subcommand(launcher("envchain", "")), 1),
    after_dashes(launcher("guix", "shell")),
    after_dashes(launcher("guix", "environment")),
    after_dashes(launcher("kubectl", "exec")),
    after_dashes(launcher("oc", "exec")),
    after_dashes(launcher("lxc", "exec")),
    after_dashes(launcher("incus", "exec")),
    after_dashes(launcher("distrobox", "enter")),
    after_dashes(no_subcommand(launcher("distrobox-enter", ""))),
    values(
        launcher("toolbox", "run"),
        &["-c", "--container", "-d", "--distro", "-r", "--release"],
    ),
];

/// The command a launcher called `name` (normalized) runs, from the words after its name.
#[must_use]
pub fn command<'a>(name: &str, after: &'a [Word]) -> Option<&'a [Word]> {
    LAUNCHERS
        .iter()
        .filter(|l| l.name == name)
        .find_map(|l| l.command(after))
}

impl Launcher {
    fn command<'a>(&self, after: &'a [Word]) -> Option<&'a [Word]> {
        if self.after_dashes {
            let dashes = after.iter().position(|w| w.text() == "--")?;
            let named = match self.subcommand {
                Some(sub) => after[..dashes].iter().any(|w| w.text() == sub),
                None => true,
            };
            return after.get(dashes + 1..).filter(|c| named && !c.is_empty());
        }
        let rest = match self.subcommand {
            Some(sub) => {
                let (first, rest) = after.split_first()?;
                if first.text() != sub {
                    return None;
                }
                rest
            }
            None => after,
        };
        self.command_after_options(rest)
    }

    /// Skips the subcommand's options (and their values) and its positional words; `--`
    /// before the command ends the options.
    fn command_after_options<'a>(&self, words: &'a [Word]) -> Option<&'a [Word]> {
        let mut positional = self.positional;
        let mut at = 0;
        while let Some(word) = words.get(at) {
            let text = word.text();
            if text == "--" {
                at += 1;
                continue;
            }
            if text.len() > 1 && text.starts_with('-') && positional == self.positional {
                at += if self.with_value.contains(&text) {
                    2
                } else {
                    1
                };
                continue;
            }
            if positional > 0 {
                positional -= 1;
                at += 1;
                continue;
            }
            return Some(&words[at..]);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::command;
    use crate::policy::shell::lexer::lex;

    fn found(cmd: &str) -> Option<String> {
        let lexed = lex(cmd);
        let words = &lexed.script.segments[0].words;
        let name = crate::policy::shell::command::command_name(&words[0])?;
        command(name, &words[1..]).map(|c| c.iter().map(|w| w.text()).collect::<Vec<_>>().join(" "))
    }

    #[test]
    fn finds_the_command_each_launcher_runs() {
        for (cmd, expected) in [
            ("pyenv exec sudo reboot", "sudo reboot"),
            ("rustup run stable rm -rf /", "rm -rf /"),
            ("rustup run --install nightly cargo build", "cargo build"),
            ("uv run --with requests python x.py", "python x.py"),
            ("uv run -- sudo reboot", "sudo reboot"),
            ("uvx --from ruff ruff check", "ruff check"),
            ("poetry run pytest -- -k x", "pytest -- -k x"),
            ("conda run -n base sudo reboot", "sudo reboot"),
            ("bundle exec rake", "rake"),
            ("direnv exec . make", "make"),
            ("op run --env-file .env -- rm -rf ~", "rm -rf ~"),
            ("aws-vault exec prod -- aws s3 ls", "aws s3 ls"),
            ("aws-vault exec -d 1h prod aws s3 ls", "aws s3 ls"),
            (
                "kubectl -n prod exec -it db -- rm -rf /data",
                "rm -rf /data",
            ),
            ("guix shell coreutils -- rm -rf /", "rm -rf /"),
            ("mise exec node@20 -- node x.js", "node x.js"),
            ("distrobox-enter box -- sudo reboot", "sudo reboot"),
            ("/usr/bin/pyenv exec ls", "ls"),
        ] {
            assert_eq!(found(cmd).as_deref(), Some(expected), "{cmd}");
        }
    }

    #[test]
    fn other_subcommands_run_nothing() {
        for cmd in [
            "pyenv versions",
            "uv pip install sudo",
            "poetry add reboot",
            "kubectl get pods",
            "kubectl exec db ls",
            "rustup run stable",
            "guix install reboot",
            "aws-vault list",
            "git run sudo",
        ] {
            assert_eq!(found(cmd), None, "{cmd}");
        }
    }
}
