//! Programs that run a command given after one of their subcommands, on this host: version
//! managers (`pyenv exec CMD…`, `rustup run TOOLCHAIN CMD…`), project runners (`uv run`,
//! `poetry run`, `bundle exec`) and secret injectors (`op run -- CMD…`, `aws-vault exec
//! PROFILE -- CMD…`). Unlike a wrapper (`sudo`, `timeout`), the program's own word after its
//! name (after any global options: `uv -q run`) is a subcommand, and only that subcommand runs
//! a command. Its options are read as a wrapper's are (`wrappers::skip_options`).
//!
//! The command found is judged as a nested command: the denylist sees `uv run sudo reboot` as
//! `sudo reboot`. That only adds denies. A launcher that runs a command is high-risk itself
//! (`hazards`: no saved key covers what it may run), so a command misread here (an option whose
//! value this table does not know, taken for the command; a command after no `--` where one
//! is needed) stays a high-risk prompt, never anything laxer.
//!
//! Container and cluster shells (`kubectl exec`, `toolbox run`) are not here: what they run
//! runs elsewhere, where this host's denylist does not apply (`toolbox run sudo dnf install …`
//! is ordinary); they are high-risk (`hazards::containers`).

use super::ast::Word;
use super::command::CommandView;
use super::names::names;
use super::wrappers::{Wrapper, skip_options};

mod table;

use table::LAUNCHERS;

struct Launcher {
    /// The program and the words of its subcommand (`["uv", "tool", "run"]`; the program
    /// alone when it runs the command itself, `uvx CMD…`).
    words: &'static [&'static str],
    /// How the subcommand's options are read (its name is the program's).
    options: Wrapper,
    /// The command comes only after `--` (`mise exec node@20 -- CMD…`: the words before it
    /// name tools or packages).
    after_dashes: bool,
    /// Words starting with `+` name packages before the command (`pkgx +node@20 npm …`).
    plus_packages: bool,
    /// The command's words are joined and run by a shell (`watchexec 'make test'`, `sops
    /// exec-env s.yaml 'CMD'`): they are judged as a script too.
    shell_words: bool,
    /// `-x`/`--exec` carry a cargo command line, judged as `cargo …` (cargo-watch).
    cargo_lines: bool,
    /// The command's first word may name an environment first (`hatch run test:pytest`).
    env_prefixed: bool,
}

/// The command a launcher called `name` (normalized) runs, from the words after its name;
/// the command lines its options carry (`doppler run --command '…'`) go to `view`.
pub fn command<'a>(
    name: &str,
    after: &'a [Word],
    view: &mut CommandView<'a>,
) -> Option<&'a [Word]> {
    if !is_launcher(name) {
        return None;
    }
    LAUNCHERS
        .iter()
        .filter(|l| l.words[0] == name)
        .find_map(|l| {
            let words = l.after_subcommand(after)?;
            if l.cargo_lines {
                view.inline_scripts.extend(cargo_lines(words));
            }
            // After an explicit `--`, the words are a command whatever the options before it
            // were read as (`op run --account x -- CMD`, an option this table does not know
            // taking `x`): judged too, which only adds denies.
            let explicit = words
                .iter()
                .position(|w| w.text() == "--")
                .and_then(|dashes| words.get(dashes + 1..))
                .filter(|c| !c.is_empty());
            let command = l.command(words, view);
            if let Some(explicit) = explicit
                && command.is_none_or(|c| !std::ptr::eq(c.as_ptr(), explicit.as_ptr()))
            {
                view.nested_argv.push(explicit);
            }
            let command = command?;
            // `hatch run ENV:CMD …`: the command follows the environment's name.
            if l.env_prefixed
                && let Some((_, first)) = command.first().and_then(|w| w.text().split_once(':'))
            {
                view.inline_scripts
                    .push(format!("{first} {}", joined(&command[1..])));
            }
            if l.shell_words {
                view.inline_scripts.push(joined(command));
            }
            Some(command)
        })
}

/// Words as a shell would see them joined by spaces (for judging as a script).
fn joined(words: &[Word]) -> String {
    words.iter().map(Word::text).collect::<Vec<_>>().join(" ")
}

/// The values of `-x`/`--exec` (`-x V`, `-qxV`, `-qx V`, `--exec=V`, `--exe V`, up to `--`)
/// as `cargo V`.
fn cargo_lines(words: &[Word]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut texts = words.iter().map(Word::text).take_while(|t| *t != "--");
    while let Some(text) = texts.next() {
        let value = if let Some(long) = text.strip_prefix("--") {
            let (name, attached) = long
                .split_once('=')
                .map_or((long, None), |(n, v)| (n, Some(v)));
            if name.len() >= 3 && "exec".starts_with(name) {
                attached.or_else(|| texts.next())
            } else {
                None
            }
        } else if let Some(cluster) = text.strip_prefix('-')
            && let Some(at) = cluster.find('x')
        {
            Some(&cluster[at + 1..])
                .filter(|v| !v.is_empty())
                .or_else(|| texts.next())
        } else {
            None
        };
        lines.extend(value.map(|v| format!("cargo {v}")));
    }
    lines
}

/// Whether a launcher called `name` is given its running subcommand and anything after it:
/// whether or not the command is found in those words (`chamber exec svc CMD` without `--`),
/// it may run one. Asking for its help or version (`uv run --help`) runs nothing.
#[must_use]
pub fn runs_something(name: &str, after: &[Word]) -> bool {
    is_launcher(name)
        && LAUNCHERS.iter().filter(|l| l.words[0] == name).any(|l| {
            l.after_subcommand(after).is_some_and(|rest| {
                !rest
                    .iter()
                    .all(|w| matches!(w.text(), "--help" | "-h" | "--version"))
            })
        })
}

names!(
    /// The programs of [`LAUNCHERS`]: most commands are none, answered by a `match` (the list
    /// itself is read by a test only).
    #[cfg_attr(not(test), allow(dead_code))]
    const LAUNCHER_NAMES, fn is_launcher = [
        "pyenv", "rbenv", "nodenv", "goenv", "plenv", "jenv", "phpenv", "asdf", "mise", "rustup",
        "uv", "uvx", "pipx", "poetry", "pipenv", "pdm", "rye", "hatch", "pixi", "conda", "mamba",
        "micromamba", "bundle", "direnv", "op", "doppler", "aws-vault", "chamber", "dotenvx",
        "infisical", "envchain", "guix", "npx", "pnpx", "bunx", "npm", "pnpm", "yarn", "bun",
        "nvm", "n", "volta", "fnm", "opam", "stack", "cabal", "devbox", "pkgx", "cargo",
        "cargo-watch", "go", "watchexec", "nodemon", "chruby-exec", "tox", "meson", "cmake",
        "dotenv", "env-cmd", "summon", "teller", "berglas", "bws", "saml2aws", "aws-sso", "sops",
        "foreman", "honcho",
    ]
);

impl Launcher {
    /// The words after the subcommand, whose words may each follow options (`uv -q run`, `uv
    /// --directory x run`, `uv tool -q run`: a word after an option may be its value). Any
    /// other word first means another subcommand.
    fn after_subcommand<'a>(&self, after: &'a [Word]) -> Option<&'a [Word]> {
        let mut subcommand = self.words[1..].iter().peekable();
        if subcommand.peek().is_none() {
            return Some(after);
        }
        // After an option this table knows takes a value, the next word is that value even
        // when it reads like the subcommand (`uv --directory run run …`); after an unknown
        // option it may be.
        let (mut value, mut maybe_value) = (false, false);
        for (at, word) in after.iter().enumerate() {
            let text = word.text();
            if std::mem::take(&mut value) {
                continue;
            }
            if subcommand.next_if(|s| **s == text).is_some() {
                if subcommand.peek().is_none() {
                    return after.get(at + 1..);
                }
                maybe_value = false;
                continue;
            }
            // `+nightly` picks a toolchain (rustup's proxies).
            let option = text.len() > 1 && text.starts_with(['-', '+']);
            if option {
                value = self.options.with_value.contains(&text);
                maybe_value = !value && !text.contains('=');
            } else if std::mem::take(&mut maybe_value) {
                continue;
            } else {
                return None;
            }
        }
        None
    }

    fn command<'a>(&self, words: &'a [Word], view: &mut CommandView<'a>) -> Option<&'a [Word]> {
        if !self.after_dashes {
            let mut command = skip_options(&self.options, words, view);
            while self.plus_packages
                && let Some((first, rest)) = command.split_first()
                && first.text().starts_with('+')
            {
                command = skip_options(&self.options, rest, view);
            }
            return Some(command).filter(|c| !c.is_empty());
        }
        let dashes = words.iter().position(|w| w.text() == "--");
        // The options before `--` (or all of them) may carry a command line.
        let before = &words[..dashes.unwrap_or(words.len())];
        // Options may follow other words (`mise exec node@20 -c '…'`): each run of options is
        // read as a wrapper's are, so bunched ones (`cargo watch -qs '…'`) count too.
        let mut scripts = CommandView::default();
        let mut at = 0;
        while at < before.len() {
            let rest = skip_options(&self.options, &before[at..], &mut scripts);
            // Past the options read and the word after them (not an option).
            at = before.len() - rest.len() + 1;
        }
        view.inline_scripts.extend(scripts.inline_scripts);
        words.get(dashes? + 1..).filter(|c| !c.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::command;
    use crate::policy::shell::command::CommandView;
    use crate::policy::shell::lexer::lex;

    fn found(cmd: &str) -> Option<String> {
        let lexed = lex(cmd);
        let words = &lexed.script.segments[0].words;
        let name = crate::policy::shell::command::command_name(&words[0])?;
        command(name, &words[1..], &mut CommandView::default())
            .map(|c| c.iter().map(|w| w.text()).collect::<Vec<_>>().join(" "))
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
            ("uv -q run sudo reboot", "sudo reboot"),
            ("uv --directory x run sudo reboot", "sudo reboot"),
            ("uv run --color always sudo reboot", "sudo reboot"),
            ("uv tool run ruff check", "ruff check"),
            (
                "aws-vault exec prod --no-session -- sudo reboot",
                "sudo reboot",
            ),
            ("pixi exec sudo reboot", "sudo reboot"),
            ("bundle --gemfile x exec rake", "rake"),
            ("guix shell coreutils -- rm -rf /", "rm -rf /"),
            ("mise exec node@20 -- node x.js", "node x.js"),
            ("/usr/bin/pyenv exec ls", "ls"),
            ("hatch env run -e test -- sudo reboot", "sudo reboot"),
            ("opam exec --switch 5.1 -- sudo reboot", "sudo reboot"),
            ("volta run --node 20 sudo reboot", "sudo reboot"),
            ("fnm exec --using=20 sudo reboot", "sudo reboot"),
            ("devbox run -e A=b -- sudo reboot", "sudo reboot"),
            ("stack exec sudo -- reboot", "sudo -- reboot"),
            ("cabal exec -- sudo reboot", "sudo reboot"),
            ("asdf env nodejs sudo reboot", "sudo reboot"),
            ("nvm exec 20 sudo reboot", "sudo reboot"),
            ("n exec 20 sudo reboot", "sudo reboot"),
            ("pkgx +node@20 +npm sudo reboot", "sudo reboot"),
            ("pkgx sudo reboot", "sudo reboot"),
            ("cargo watch -w src -- sudo reboot", "sudo reboot"),
            ("cargo +nightly watch -- sudo reboot", "sudo reboot"),
            ("cargo-watch watch -- sudo reboot", "sudo reboot"),
            ("cargo-watch -- sudo reboot", "sudo reboot"),
            ("go tool test2json -t rm -rf /", "rm -rf /"),
            (
                "go tool test2json -p x ./x.test -test.v",
                "./x.test -test.v",
            ),
            ("cabal v2-exec -- sudo reboot", "sudo reboot"),
            ("opam config exec -- sudo reboot", "sudo reboot"),
            ("uv tool -q run sudo reboot", "sudo reboot"),
            ("uv tool uvx sudo reboot", "sudo reboot"),
            ("fnm exec --log-level quiet sudo reboot", "sudo reboot"),
            ("stack exec -j 4 sudo reboot", "sudo reboot"),
            ("watchexec -e rs -- cargo test", "cargo test"),
            ("chruby-exec 3.1 -- sudo reboot", "sudo reboot"),
            ("tox exec -e py -- sudo reboot", "sudo reboot"),
            ("meson devenv -C build sudo reboot", "sudo reboot"),
            ("cmake -E env A=b --unset=C sudo reboot", "sudo reboot"),
            ("cmake -E chdir build sudo reboot", "sudo reboot"),
            ("dotenv -e .env -- sudo reboot", "sudo reboot"),
            ("env-cmd -f .env sudo reboot", "sudo reboot"),
            ("teller run -- sudo reboot", "sudo reboot"),
            ("sops exec-env s.yaml 'sudo reboot'", "sudo reboot"),
            ("foreman run sudo reboot", "sudo reboot"),
            ("uv --directory run run sudo reboot", "sudo reboot"),
            ("watchexec -o restart 'sudo reboot'", "sudo reboot"),
            ("bws run -o json 'sudo reboot'", "sudo reboot"),
        ] {
            assert_eq!(found(cmd).as_deref(), Some(expected), "{cmd}");
        }
    }

    /// The fast name test and the table name the same programs.
    #[test]
    fn the_name_list_is_the_table() {
        let mut table: Vec<&str> = super::LAUNCHERS.iter().map(|l| l.words[0]).collect();
        table.sort_unstable();
        table.dedup();
        let mut names = super::LAUNCHER_NAMES.to_vec();
        names.sort_unstable();
        assert_eq!(table, names);
    }

    #[test]
    fn a_command_line_in_an_option_is_a_script() {
        for cmd in [
            "doppler run --command 'sudo reboot'",
            "infisical run --command='sudo reboot'",
            "mise exec -c 'sudo reboot'",
            "npx -c 'sudo reboot'",
            "cargo watch -s 'sudo reboot'",
            "cargo watch -w src --shell='sudo reboot'",
            "cargo watch -qs 'sudo reboot'",
            "cargo watch -wsrc -s'sudo reboot'",
            "cargo-watch -s 'sudo reboot'",
            "mise exec node@20 -c 'sudo reboot'",
            "watchexec 'sudo reboot'",
            "nodemon --exec 'sudo reboot'",
            "sops exec-env s.yaml 'sudo reboot'",
            "bun exec 'sudo reboot'",
            "bun exec --cwd /tmp 'sudo reboot'",
        ] {
            let lexed = lex(cmd);
            let words = &lexed.script.segments[0].words;
            let mut view = CommandView::default();
            let _ = command(words[0].text(), &words[1..], &mut view);
            assert_eq!(view.inline_scripts, ["sudo reboot"], "{cmd}");
        }
    }

    #[test]
    fn cargo_watch_exec_is_a_cargo_command_line() {
        let lexed = lex("cargo watch -x test -x'watch -s x' --exec=run -qx b --exe c -- -x no");
        let words = &lexed.script.segments[0].words;
        let mut view = CommandView::default();
        let _ = command("cargo", &words[1..], &mut view);
        assert_eq!(
            view.inline_scripts,
            [
                "cargo test",
                "cargo watch -s x",
                "cargo run",
                "cargo b",
                "cargo c"
            ]
        );
    }

    #[test]
    fn other_subcommands_run_nothing() {
        for cmd in [
            "pyenv versions",
            "uv pip install sudo",
            "poetry add reboot",
            "kubectl get pods",
            "kubectl exec db -- ls",
            "poetry add run sudo",
            "uv tool install sudo",
            "rustup run stable",
            "guix install reboot",
            "aws-vault list",
            "git run sudo",
            "cargo build --release",
            "cargo run sudo",
            "cargo watch",
            "cargo watch -x test",
            "stack build",
            "n 20",
            "hatch env show",
            "go tool cover -html=c.out",
            "go test ./...",
            "cargo-watch --help",
            "uv tool list",
            "cmake -E copy a b",
            "cmake --build build",
            "tox -e py",
            "sops -d s.yaml",
            "meson setup build",
        ] {
            assert_eq!(found(cmd), None, "{cmd}");
        }
    }
}
