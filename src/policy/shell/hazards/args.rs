//! A program's arguments read the way GNU `getopt_long` reads them, for the hazard rules:
//! `--name`, `--name=value`, and any prefix of a long name (`--to-comm` is `--to-command`,
//! `--expr` is `--expression`) — tools accept unambiguous prefixes, so a rule that only knew the
//! full spelling would be walked around. Short options may be clustered (`-ne'…'`).

use crate::policy::shell::ast::Word;

/// Whether `path` leads out of the workspace as written: from the root, a home, a variable
/// (known only when it runs), or climbing out (`../x`, `a/../../x`; not `..bin`).
#[must_use]
pub fn outside_workspace(path: &str) -> bool {
    let normalized = crate::policy::shell::denylist::paths::normalize(path);
    path.starts_with(['/', '~', '$']) || normalized == ".." || normalized.starts_with("../")
}

/// Whether an argument names a path outside the workspace: itself (`/srv/x`, `../x`), an
/// option's value (`--root=/usr/local`, `-o/tmp/x`, `-qo../x`), a setting's (`PREFIX=/usr`),
/// or a part of a list (`--mount type=bind,source=/etc`).
#[must_use]
pub fn names_a_path_outside(word: &str) -> bool {
    // `file:../x`, `file:///srv/x` (npm, pip), `..[dev]` (a package's extras).
    let path = word.strip_prefix("file:").unwrap_or(word);
    let path = path.split('[').next().unwrap_or(path);
    if outside_workspace(path) {
        return true;
    }
    // `--x=V`, `K=V`, `a=b,c=V`: every value after `=` or `,`.
    if word.split(['=', ',']).skip(1).any(outside_workspace) {
        return true;
    }
    // A value attached to a short option, alone or after others (`-D/x`, `-qo../x`): from the
    // first character a path starts with.
    if let Some(cluster) = short_cluster(word)
        && let Some(at) = cluster.find(['/', '~', '.'])
    {
        return cluster.get(at..).is_some_and(outside_workspace);
    }
    false
}

/// The arguments after the command word.
#[derive(Clone, Copy)]
pub struct Args<'a> {
    words: &'a [Word],
}

/// The shortest prefix of a long option taken as that option: `--` and one letter. GNU tools
/// take any unambiguous prefix (`sed --e=…` is `--expression`), and a rule that waited for two
/// letters would be walked around; a false match only asks a human.
const MIN_PREFIX: usize = 3;

impl<'a> Args<'a> {
    /// `argv` with its command word first.
    #[must_use]
    pub fn of(argv: &'a [Word]) -> Self {
        Args {
            words: argv.get(1..).unwrap_or(&[]),
        }
    }

    pub fn texts(self) -> impl Iterator<Item = &'a str> {
        self.words.iter().map(Word::text)
    }

    #[must_use]
    pub fn first(self) -> Option<&'a str> {
        self.texts().next()
    }

    /// Whether the subcommand is one of `names`, where it may follow global options (and a
    /// toolchain, `cargo +nightly`), one of which may take a value (`uv --directory x tool`,
    /// `cargo --color always clean`): either of the first two words that are not options.
    #[must_use]
    pub fn subcommand_is(self, names: &[&str]) -> bool {
        self.texts()
            .filter(|t| !t.starts_with(['-', '+']))
            .take(2)
            .any(|t| names.contains(&t))
    }

    #[must_use]
    pub fn any(self, pred: impl Fn(&str) -> bool) -> bool {
        self.texts().any(pred)
    }

    #[must_use]
    pub fn contains(self, text: &str) -> bool {
        self.texts().any(|t| t == text)
    }

    /// Whether any of `names` is given: a long option by its name or a prefix of it (with or
    /// without `=value`), anything else (`-c`, `-exec`, `-ex`) exactly or with `=value`.
    #[must_use]
    pub fn has(self, names: &[&str]) -> bool {
        self.texts().any(|t| names.iter().any(|n| option_is(t, n)))
    }

    /// The values given to any of `names`: attached (`--x=v`, `-xv` for a one-letter `-x`) or
    /// the next word.
    pub fn values(self, names: &'a [&'a str]) -> impl Iterator<Item = &'a str> {
        let texts: Vec<&'a str> = self.texts().collect();
        let mut out = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            for n in names {
                if let Some(value) = attached_value(t, n) {
                    out.push(value);
                } else if option_is(t, n) {
                    out.extend(texts.get(i + 1).copied());
                }
            }
        }
        out.into_iter()
    }
}

/// Whether the argument `word` is the option `name`.
#[must_use]
pub fn option_is(word: &str, name: &str) -> bool {
    let given = word.split_once('=').map_or(word, |(n, _)| n);
    if given == name {
        return true;
    }
    name.starts_with("--")
        && given.starts_with("--")
        && given.len() >= MIN_PREFIX
        && name.starts_with(given)
}

/// The letters of a cluster of short options (`-qx` → `qx`; `-` → empty), or `None` for a
/// long option or a word that is no option.
#[must_use]
pub fn short_cluster(word: &str) -> Option<&str> {
    word.strip_prefix('-')
        .filter(|cluster| !cluster.starts_with('-'))
}

/// Whether `word` is a cluster of short options (`-qx`, `-iO'cmd'`) holding `letter`: tools
/// read `-qx cmd` as `-q -x cmd`. Letters of an attached value count too, so a value that
/// holds the letter is judged as if it were the option (a prompt, never a miss).
#[must_use]
pub fn cluster_has(word: &str, letter: char) -> bool {
    short_cluster(word).is_some_and(|cluster| cluster.contains(letter))
}

/// The value attached to `name` in `word` (`--name=v`, a prefix of it `=v`, or `-xv`).
fn attached_value<'w>(word: &'w str, name: &str) -> Option<&'w str> {
    if let Some((given, value)) = word.split_once('=')
        && option_is(given, name)
    {
        return Some(value);
    }
    let short = name.strip_prefix('-').filter(|n| n.len() == 1)?;
    short_cluster(word)
        .and_then(|w| w.strip_prefix(short))
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::{names_a_path_outside, option_is};

    #[test]
    fn paths_outside_the_workspace_in_any_spelling() {
        for outside in [
            "/srv/x",
            "../x",
            "a/../../x",
            "..",
            "--root=/usr/local",
            "-o/tmp/x",
            "-qo../x",
            "PREFIX=/usr",
            "type=bind,source=/etc",
            "-Wl,-rpath,/opt/lib",
            "file:../x",
            "file:///srv/x",
            "..[dev]",
        ] {
            assert!(names_a_path_outside(outside), "{outside}");
        }
        for inside in [
            "src/main.rs",
            "..bin",
            "./out",
            "-o./out",
            "-rf",
            "--depth=1",
            "https://example.com/x",
            "HEAD~1",
            "-v1.2.3",
            "a/../b",
        ] {
            assert!(!names_a_path_outside(inside), "{inside}");
        }
    }

    #[test]
    fn long_options_by_prefix() {
        assert!(option_is("--to-command=x", "--to-command"));
        assert!(option_is("--to-comm=x", "--to-command"));
        assert!(option_is("--expr", "--expression"));
        assert!(
            option_is("--e", "--expression"),
            "one letter is a prefix too"
        );
        assert!(!option_is("--", "--expression"));
        assert!(!option_is("--pre-glob=x", "--pre"));
        assert!(option_is("-c", "-c"));
        assert!(!option_is("-cx", "-c"));
        assert!(option_is("-exec", "-exec"));
    }
}
