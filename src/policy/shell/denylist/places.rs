//! Where a command's paths lead as it goes: the working directory as `cd`, `pushd`, `popd`
//! and `cd -` move it (with the directories visited, for `~-` and `~N`), and the names it gives
//! to other paths (`ln -s /etc e`, `cp -r`, `mv`), so a later relative or renamed path is read
//! as the path it is.

use super::paths::{self, path_view};
use super::{DenyMatch, deny};
use crate::policy::shell::ast::{Segment, Word};
use crate::policy::shell::command::CommandView;

/// Names a command gives to other paths as it goes — `ln -s /etc e`, `cp -r ~/.ssh k`,
/// `mv /etc/x y` — so a later `e/shadow` is read as `/etc/shadow`.
#[derive(Default)]
pub(super) struct Aliases {
    to: Vec<(String, String)>,
}

impl Aliases {
    pub(super) fn record(&mut self, view: &CommandView<'_>) {
        let Some(name) = view.name.filter(|n| matches!(*n, "ln" | "cp" | "mv")) else {
            return;
        };
        let args = view.args.get(1..).unwrap_or(&[]);
        let flags: Vec<&str> = args
            .iter()
            .map(Word::text)
            .filter(|t| t.starts_with('-'))
            .collect();
        let makes_alias = match name {
            "ln" => {
                flags
                    .iter()
                    .any(|f| !f.starts_with("--") && f.contains('s'))
                    || flags.contains(&"--symbolic")
            }
            "cp" => flags.iter().any(|f| {
                (!f.starts_with("--") && f.contains(['r', 'R', 'a']))
                    || *f == "--recursive"
                    || *f == "--archive"
            }),
            "mv" => true,
            _ => false,
        };
        let operands: Vec<&Word> = args.iter().filter(|w| !w.text().starts_with('-')).collect();
        let [sources @ .., dest] = operands.as_slice() else {
            return;
        };
        if !makes_alias || sources.is_empty() || self.to.len() >= MAX_VISITED {
            return;
        }
        for source in sources {
            let from = path_view(source);
            if !(from.starts_with('/') || from.starts_with('~')) {
                continue;
            }
            let dest = path_view(dest).trim_end_matches('/').to_string();
            // `ln -s /etc d/` makes `d/etc`; `ln -s /etc e` makes `e`.
            let base = from.rsplit('/').next().unwrap_or("");
            self.to.push((dest.clone(), from.clone()));
            self.to.push((format!("{dest}/{base}"), from));
        }
    }

    pub(super) fn check(&self, segment: &Segment) -> Option<DenyMatch> {
        if self.to.is_empty() {
            return None;
        }
        for word in segment.all_words() {
            let text = path_view(word);
            for (alias, target) in &self.to {
                let Some(rest) = text.strip_prefix(alias.as_str()) else {
                    continue;
                };
                if !(rest.is_empty() || rest.starts_with('/')) {
                    continue;
                }
                let path = paths::normalize(&format!("{target}{rest}"));
                if let Some(what) = paths::secret_in_path(&path) {
                    return deny("secrets", format!("`{}` touches {what}", word.text()));
                }
            }
        }
        None
    }
}

/// Directories remembered for `~-` and `~N`.
const MAX_VISITED: usize = 64;

/// The working directory as `cd`, `pushd`, `popd` and `cd -` move it (`None`: unknown).
#[derive(Default)]
pub(super) struct Moves {
    pub(super) now: Option<String>,
    /// `$OLDPWD`, where `cd -` goes.
    previous: Option<String>,
    /// `pushd`'s stack, where `popd` goes.
    stack: Vec<Option<String>>,
    /// Every directory moved to, for `~-` and `~N` (which name one of them).
    visited: Vec<String>,
}

impl Moves {
    /// Starting in `dir` (`None`: unknown).
    pub(super) fn starting_in(dir: Option<&str>) -> Moves {
        Moves {
            now: dir.map(str::to_string),
            ..Moves::default()
        }
    }

    pub(super) fn follow(&mut self, name: &str, argv: &[Word]) {
        let operand = argv
            .iter()
            .skip(1)
            .find(|w| w.text() == "-" || !w.text().starts_with('-'));
        let next = match (name, operand.map(Word::text)) {
            ("cd", Some("-")) => self.previous.clone(),
            ("cd", _) => moved_to(operand, self.now.as_deref()),
            ("pushd", _) => {
                self.stack.push(self.now.clone());
                moved_to(operand, self.now.as_deref())
            }
            ("popd", _) => self.stack.pop().flatten(),
            _ => return,
        };
        if let Some(dir) = &next
            && self.visited.len() < MAX_VISITED
        {
            self.visited.push(dir.clone());
        }
        self.previous = std::mem::replace(&mut self.now, next);
    }

    /// A word written from the directory stack (`~-/x`, `~2/x`, `~+1/x`) read from each
    /// directory visited, when one of those is a secret.
    pub(super) fn stack_paths(&self, segment: &Segment) -> Option<DenyMatch> {
        for word in segment.all_words() {
            let text = word.text();
            let Some(rest) = text.strip_prefix('~') else {
                continue;
            };
            let digits = rest.trim_start_matches(['+', '-']);
            let tail = digits.trim_start_matches(|c: char| c.is_ascii_digit());
            let stack_form = rest.starts_with('-') || tail.len() < digits.len();
            if !stack_form || !(tail.is_empty() || tail.starts_with('/')) {
                continue;
            }
            for dir in &self.visited {
                let path = paths::normalize(&format!("{dir}{tail}"));
                if let Some(what) = paths::secret_in_path(&path) {
                    return deny("secrets", format!("`{text}` touches {what}"));
                }
            }
        }
        None
    }
}

/// The directories a segment's program (or a wrapper in front of it) is told to work in by
/// an option — `env -C /`, `env --chdir=/etc`, `tar -C /etc`, `git -C /etc`, `make -C /`,
/// and a launcher's for the command it runs: `cmake -E chdir / …`, `uv --directory /etc run
/// …`, `conda run --cwd /`, `mise exec -C /` — each as `cd` would reach it from `cwd`: the
/// segment's relative words are read from each, as after a `cd` (`env -C / rm -rf etc` is
/// `rm -rf /etc`).
pub(super) fn option_dirs(view: &CommandView<'_>, cwd: Option<&str>) -> Vec<String> {
    let mut named: Vec<String> = Vec::new();
    for (wrapper, argv) in view.wrappers.iter().zip(&view.wrapper_argv) {
        named.extend(dirs_of(wrapper, argv));
    }
    if let Some(name) = view.name {
        named.extend(dirs_of(name, view.args));
        named.extend(launcher_dirs(name, view));
    }
    named
        .into_iter()
        .filter_map(|dir| {
            if dir.starts_with('/') || dir.starts_with('~') {
                Some(dir)
            } else {
                cwd.map(|c| paths::normalize(&format!("{c}/{dir}")))
            }
        })
        .collect()
}

/// The directories `name`'s options in `argv` (its name first) name as its working
/// directory, as paths.
fn dirs_of(name: &str, argv: &[Word]) -> Vec<String> {
    let long: &[&str] = match name {
        "env" => &["--chdir"],
        "tar" | "gtar" | "bsdtar" | "make" | "gmake" => &["--directory"],
        // Only before the subcommand: after it, `-C` is something else (`git grep -C 3`).
        "ninja" | "git" => &[],
        _ => return Vec::new(),
    };
    // Only before the subcommand for git, whose `-C` takes no attached value.
    let git = name == "git";
    dirs_given(
        argv,
        |text| text == "-C" || long.contains(&text),
        (!git).then_some("-C"),
        git,
    )
}

/// The directories `words` (a program's own, its name first) give to the options `names`
/// picks out — `OPT DIR`, `OPT=DIR`, and for the one-letter `short`, `-CDIR` — as paths;
/// with `stop_at_operand`, read up to the first word that is not an option.
fn dirs_given(
    words: &[Word],
    names: impl Fn(&str) -> bool,
    short: Option<&str>,
    stop_at_operand: bool,
) -> Vec<String> {
    let mut dirs = Vec::new();
    let mut words = words.iter().skip(1);
    while let Some(word) = words.next() {
        let text = word.text();
        if stop_at_operand && !text.starts_with('-') {
            break;
        }
        if names(text) {
            dirs.extend(words.next().map(path_view));
        } else if let Some((option, _)) = text.split_once('=')
            && names(option)
        {
            dirs.extend(attached_dir(word, option.len() + 1));
        } else if let Some(short) = short
            && text.len() > short.len()
            && text.starts_with(short)
        {
            // `env -C/etc`, `make -C/`, `mise exec -C/etc`: the directory attached.
            dirs.extend(attached_dir(word, short.len()));
        }
    }
    dirs
}

/// The directory written in `word` after its first `skip` bytes (an option's name), as a
/// path: taken out before normalizing, or `--chdir=/` would lose its `/`.
fn attached_dir(word: &Word, skip: usize) -> Option<String> {
    let text = paths::path_text(word);
    text.get(skip..)
        .filter(|dir| !dir.is_empty())
        .map(paths::normalize)
}

/// The words of the segment's program before the command it runs (all of them when it runs
/// none): a launcher's options end where its command begins (`uv run --directory /etc cat`
/// is the launcher's, `uv run pytest --directory x` is pytest's).
fn own_words<'a>(view: &CommandView<'a>) -> &'a [Word] {
    let args = view.args;
    let start = view.nested_argv.iter().find_map(|nested| {
        let first = nested.first()?;
        args.iter().position(|w| std::ptr::eq(w, first))
    });
    args.get(..start.unwrap_or(args.len())).unwrap_or(args)
}

/// The working directories launchers are told to run their command in, read from the
/// launcher's own words.
fn launcher_dirs(name: &str, view: &CommandView<'_>) -> Vec<String> {
    let options: &[&str] = match name {
        // `cmake -E chdir DIR CMD…`: the directory is a word of its own.
        "cmake" => {
            let argv = own_words(view);
            let texts: Vec<&str> = argv.iter().map(Word::text).collect();
            return match texts.as_slice() {
                [_, "-E", "chdir", ..] => argv.get(3).map(path_view).into_iter().collect(),
                _ => Vec::new(),
            };
        }
        "uv" => &["--directory"],
        "conda" | "mamba" | "micromamba" => &["--cwd"],
        "mise" => &["-C", "--cd"],
        "bun" | "yarn" => &["--cwd"],
        "pnpm" => &["-C", "--dir"],
        _ => return Vec::new(),
    };
    // A long option abbreviated (conda's argparse takes `--cw` for `--cwd`).
    let names = |given: &str| {
        options.contains(&given)
            || (given.len() >= 4
                && given.starts_with("--")
                && options
                    .iter()
                    .any(|o| o.starts_with("--") && o.starts_with(given)))
    };
    let short = options
        .iter()
        .find(|o| o.len() == 2 && o.starts_with('-'))
        .copied();
    dirs_given(own_words(view), names, short, false)
}

/// The directory `cd DIR` moves to from `cwd`, when the words say (`None`: unknown).
fn moved_to(dir: Option<&Word>, cwd: Option<&str>) -> Option<String> {
    let Some(dir) = dir else {
        return Some("~".into());
    };
    let path = path_view(dir);
    if path.starts_with('/') || path.starts_with('~') {
        return Some(path);
    }
    cwd.map(|c| paths::normalize(&format!("{c}/{path}")))
}
