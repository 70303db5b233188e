//! What the whole command holds, gathered in one walk over every script in it (substitutions,
//! function bodies, the command strings its programs run), for the rules that judge the command
//! as a whole: whether it assigns `TMPDIR`, which network client it names, whether a pattern is
//! too large to judge, and whether it evaluates strings that could hold code.

use super::ast::{Script, Segment, Word, WordPart};
use super::command::{CommandView, command_name, command_view, is_network_client};
use super::denylist::paths::built_path_may_name_secret;
use super::late_eval::{brings_in_strings, evaluates_strings};
use super::names::sets_variables;
use super::{MAX_BRACES, MAX_PATTERN_CHARS};

/// The command's facts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    /// Some segment assigns `TMPDIR` (or could, through a nameref): `$TMPDIR` is not trusted.
    pub tmpdir_assigned: bool,
    /// A network client named in any word (or a raw socket path).
    pub network: Option<String>,
    /// A glob or brace word too large to match against the secret paths in bounded time.
    pub oversized: Option<String>,
    /// Strings are evaluated as arithmetic, indirection or prompts.
    pub evaluates_strings: bool,
    /// Strings no rule read come in (a quoted `$(`, `read`, a heredoc).
    pub brings_in_strings: bool,
    /// A path built when it runs that starts like a secret's (`/etc/$c`, `~/$f`), and the
    /// variables it is built from.
    pub built_secret_path: Option<(String, Vec<String>)>,
    /// Variables the command itself sets, by any means (assignment, `read`, `for`, `declare`…).
    pub assigned: std::collections::BTreeSet<String>,
    /// Variables it sets more than once, or by `${v:=…}`/`${v=…}`: the `rm` carve-out cannot
    /// trust their `mktemp` value (a function, a trap or an expansion may set them again).
    pub reassigned: std::collections::BTreeSet<String>,
    /// It runs code no rule reads (`source`, `.`, `eval`), which could set any variable.
    pub runs_unseen_code: bool,
}

impl Facts {
    /// Gathers the facts of `script`, nested scripts included.
    #[must_use]
    pub fn of(script: &Script) -> Self {
        let mut facts = Facts::default();
        script.walk(&mut |s| {
            facts.evaluates_strings |= s.features.arithmetic;
            for segment in &s.segments {
                facts.segment(segment);
            }
        });
        facts
    }

    fn note_assigned(&mut self, name: &str) {
        if !self.assigned.insert(name.to_string()) {
            self.reassigned.insert(name.to_string());
        }
    }

    fn segment(&mut self, segment: &Segment) {
        for assignment in &segment.assignments {
            self.note_assigned(&assignment.name);
        }
        self.runs_unseen_code |= segment
            .words
            .first()
            .and_then(command_name)
            .is_some_and(|name| matches!(name, "source" | "." | "eval"));
        // Names set by builtins (`read c`, `declare c=…`, `printf -v c`, `mapfile c`): every
        // plain word after one of them could be a name.
        if segment
            .words
            .first()
            .and_then(command_name)
            .is_some_and(sets_variables)
        {
            for word in segment.words.iter().skip(1) {
                let name = word.text().split(['=', '[', '+']).next().unwrap_or("");
                if !name.is_empty() && !name.starts_with('-') {
                    self.note_assigned(name);
                }
            }
        }
        self.tmpdir_assigned |= segment.assignments.iter().any(|a| a.name == "TMPDIR");
        self.evaluates_strings |= evaluates_strings(segment);
        self.brings_in_strings |= brings_in_strings(segment);
        if self.network.is_none() {
            self.network = network_client_run_by(segment);
        }
        for word in &segment.words {
            self.word(word, false);
        }
        for word in segment.other_words() {
            self.word(word, true);
        }
    }

    fn word(&mut self, word: &Word, may_name_a_client: bool) {
        let text = word.text();
        // `${v:=x}` and `${v=x}` assign when `v` is unset (or empty).
        for part in &word.parts {
            if let WordPart::Param { name, op, .. } = part
                && (op.starts_with(":=") || op.starts_with('='))
            {
                self.assigned.insert(name.clone());
                self.reassigned.insert(name.clone());
            }
        }
        // A nameref (`declare -n r=TMPDIR`) can assign it under another name.
        self.tmpdir_assigned |=
            text == "TMPDIR" || text.starts_with("TMPDIR=") || text.ends_with("=TMPDIR");
        if self.network.is_none() {
            if let Some(name) =
                command_name(word).filter(|n| may_name_a_client && is_network_client(n))
            {
                self.network = Some(name.to_string());
            } else if word.marks.raw_socket {
                self.network = Some(text.to_string());
            }
        }
        if self.built_secret_path.is_none()
            && word.has_expansion()
            && built_path_may_name_secret(word)
        {
            let names = word
                .parts
                .iter()
                .filter_map(|p| match p {
                    WordPart::Param { name, .. } => Some(name.clone()),
                    _ => None,
                })
                .collect();
            self.built_secret_path = Some((text.to_string(), names));
        }
        if self.oversized.is_none() && (word.glob || word.brace) {
            if text.chars().count() > MAX_PATTERN_CHARS {
                self.oversized = Some(format!(
                    "a pattern of more than {MAX_PATTERN_CHARS} characters"
                ));
            } else if word.brace && text.matches('{').count() > MAX_BRACES {
                self.oversized = Some(format!(
                    "a word with more than {MAX_BRACES} brace expressions"
                ));
            }
        }
    }

    /// Why a path built from strings brought in (`read f <<< …; cat ~/$f`) may name a secret.
    #[must_use]
    pub fn secret_from_input(&self) -> Option<String> {
        let (path, names) = self.built_secret_path.as_ref()?;
        // Built from what the command sets itself (the environment is the operator's), through
        // indirection (`${!r}`), or from input it reads.
        let its_own = names
            .iter()
            .any(|n| self.assigned.contains(n) || n.starts_with('!'));
        (its_own || self.brings_in_strings).then(|| {
            format!("a path built from values it sets or reads could name a secret (`{path}`)")
        })
    }

    /// Why strings in this command may be evaluated as code later, if they may.
    #[must_use]
    pub fn late_evaluation(&self) -> Option<String> {
        (self.evaluates_strings && self.brings_in_strings).then(|| {
            "it evaluates strings (arithmetic, `[[ -eq ]]`, `${!x}`, `${x@P}`) that come from a quoted literal holding `$(`, a file or its input; a subscript in them can run commands".into()
        })
    }
}

/// Programs that read their words as text and run none of them: a network client's name among
/// their words is a search pattern, a file or a unit name (`grep -rn curl src/`, `git log --
/// ssh`, `man 1 ssh`), not a command. Only when nothing in the segment runs a command of its
/// own (`find -exec`, an inline script) and the pre-check finds no option that runs a program
/// (`rg --pre curl`, `ag --pager curl`, `man -Pcurl`, `sort --compress-program=curl`). Not
/// `echo` or `printf`, whose text the next command in a pipeline may run.
const READS_WORDS_AS_DATA: &[&str] = &[
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "ack",
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "sort",
    "uniq",
    "cut",
    "diff",
    "cmp",
    "file",
    "stat",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "which",
    "whatis",
    "man",
    "journalctl",
];

/// git's subcommands that read their words as text (`git grep curl`, `git log -- ssh`).
const GIT_READS_WORDS_AS_DATA: &[&str] = &[
    "grep", "log", "show", "diff", "blame", "status", "ls-files", "shortlog",
];

/// The network client a segment's words name, where something may run it (`curl …`,
/// `xargs curl`, `timeout 5 wget …`). `grep -rn fetch src/`, `rg curl`, `systemctl status ssh`:
/// a program that only reads its words as text names no client by them, only by its
/// wrappers (`ssh host grep x`).
fn network_client_run_by(segment: &Segment) -> Option<String> {
    let client = segment
        .words
        .iter()
        .find_map(|w| command_name(w).filter(|n| is_network_client(n)))?;
    let view = command_view(&segment.words);
    if !reads_its_words_as_data(&view) {
        return Some(client.to_string());
    }
    view.wrappers
        .iter()
        .find(|w| is_network_client(w))
        .map(|w| (*w).to_string())
}

fn reads_its_words_as_data(view: &CommandView<'_>) -> bool {
    if !view.nested_argv.is_empty() || !view.inline_scripts.is_empty() || view.too_deep {
        return false;
    }
    let Some(name) = view.name else {
        return false;
    };
    let reads = match name {
        "git" => view
            .args
            .get(1)
            .is_some_and(|sub| GIT_READS_WORDS_AS_DATA.contains(&sub.text())),
        // `systemctl -H host` reaches another machine.
        "systemctl" => !view
            .args
            .iter()
            .any(|w| w.text().starts_with("-H") || w.text().starts_with("--host")),
        _ => READS_WORDS_AS_DATA.contains(&name),
    };
    reads && super::hazards::hidden_code(name, view.args).is_none()
}
