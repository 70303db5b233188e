//! `rm` and its temp-dir carve-out. `rm` on `/`, home or a glob is denied with any flags;
//! `rm -r`/`-f` on an absolute path, a path with `..` or an expansion is denied unless the
//! target is a fresh temp dir: an inline `"$(mktemp …)"`, a variable last assigned from
//! `mktemp`, or `$TMPDIR` (void when the command assigns `TMPDIR`).

use super::paths::normalize;
use crate::policy::shell::ast::{Connector, Script, Segment, Word, WordPart};
use crate::policy::shell::command::command_name;
use crate::policy::shell::names::sets_variables;
use std::collections::HashMap;

/// How `rm` was asked to delete.
#[derive(Debug, Default)]
pub struct RmArgs<'a> {
    pub recursive: bool,
    pub force: bool,
    pub no_preserve_root: bool,
    pub targets: Vec<&'a Word>,
}

/// Splits `rm`'s arguments (after the command word) into flags and targets.
#[must_use]
pub fn parse_rm(args: &[Word]) -> RmArgs<'_> {
    let mut rm = RmArgs::default();
    let mut options_done = false;
    for word in args {
        let text = word.text();
        if !options_done && text == "--" {
            options_done = true;
            continue;
        }
        if !options_done && text.starts_with('-') && text.len() > 1 {
            if word.literal().is_none() {
                // `rm -$FLAGS x`: whatever the flags turn out to be, assume the worst.
                rm.recursive = true;
                rm.force = true;
                continue;
            }
            // GNU rm takes any unambiguous prefix of a long option (`--r`, `--recu`, `--f`).
            let long_is = |full: &str| text.len() > 2 && full.starts_with(text);
            match text {
                long if long.starts_with("--") => {
                    if long_is("--recursive") {
                        rm.recursive = true;
                    } else if long_is("--force") {
                        rm.force = true;
                    } else if long_is("--no-preserve-root") && text.len() > 4 {
                        rm.no_preserve_root = true;
                    }
                }
                short => {
                    for c in short.chars().skip(1) {
                        match c {
                            'r' | 'R' => rm.recursive = true,
                            'f' => rm.force = true,
                            _ => {}
                        }
                    }
                }
            }
            continue;
        }
        rm.targets.push(word);
    }
    rm
}

/// What the whole command could do to the carve-out's variables (from its facts): which it
/// sets where the script's own order does not tell (a function, a trap, `${v:=…}`, twice), and
/// whether it runs code no rule reads.
#[derive(Clone, Debug, Default)]
pub struct CarveOutTrust {
    /// The command assigns `TMPDIR` somewhere: `$TMPDIR` is no longer trusted.
    pub tmpdir_assigned: bool,
    pub reassigned: std::sync::Arc<std::collections::BTreeSet<String>>,
    pub runs_unseen_code: bool,
}

impl CarveOutTrust {
    #[must_use]
    pub fn of(facts: &crate::policy::shell::facts::Facts) -> Self {
        CarveOutTrust {
            tmpdir_assigned: facts.tmpdir_assigned,
            reassigned: std::sync::Arc::new(facts.reassigned.clone()),
            runs_unseen_code: facts.runs_unseen_code,
        }
    }
}

/// What the script has assigned so far, for the carve-out.
#[derive(Debug, Default)]
pub struct TempVars {
    /// Variable → (assigned from `mktemp`, index of the assigning segment).
    vars: HashMap<String, (bool, usize)>,
    /// What the whole command could do to them.
    pub trust: CarveOutTrust,
    /// For each segment, the index of the last segment at or before it not joined by `&&`:
    /// whether an assignment guards an `rm` is then one comparison, not a scan.
    last_unguarded: Vec<Option<usize>>,
}

impl TempVars {
    /// Starts with what the whole command could do to them, for a script of `segments`.
    #[must_use]
    pub fn for_script(trust: &CarveOutTrust, segments: &[Segment]) -> Self {
        let mut last = None;
        let last_unguarded = segments
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if s.connector != Connector::And {
                    last = Some(i);
                }
                last
            })
            .collect();
        TempVars {
            vars: HashMap::new(),
            trust: trust.clone(),
            last_unguarded,
        }
    }

    /// Whether every segment after `assigned_at` up to `index` is joined by `&&`.
    fn guarded(&self, assigned_at: usize, index: usize) -> bool {
        match self.last_unguarded.get(index) {
            Some(Some(last)) => *last <= assigned_at,
            Some(None) => true,
            None => false,
        }
    }

    /// Records the assignments a segment makes (standalone `x=…`, or `export`/`local`/`read` …).
    pub fn record(&mut self, segment: &Segment, index: usize) {
        if segment.words.is_empty() {
            for assignment in &segment.assignments {
                let from_mktemp = is_mktemp_value(&assignment.value);
                self.vars
                    .insert(assignment.name.clone(), (from_mktemp, index));
            }
        }
        for assignment in &segment.assignments {
            if assignment.name == "TMPDIR" {
                self.trust.tmpdir_assigned = true;
            }
        }
        let declares = segment
            .words
            .first()
            .and_then(command_name)
            .is_some_and(sets_variables);
        if declares {
            for word in &segment.words[1..] {
                let text = word.text();
                let name = text.split_once('=').map_or(text, |(n, _)| n);
                if name == "TMPDIR" {
                    self.trust.tmpdir_assigned = true;
                }
                self.vars.insert(name.to_string(), (false, index));
            }
        }
    }

    fn lookup(&self, name: &str) -> Option<(bool, usize)> {
        self.vars.get(name).copied()
    }
}

/// `$(mktemp …)` or `` `mktemp …` `` and nothing else.
fn is_mktemp_value(word: &Word) -> bool {
    match word.parts.as_slice() {
        [WordPart::CommandSub { script, .. }] => is_single_mktemp(script),
        _ => false,
    }
}

fn is_single_mktemp(script: &Script) -> bool {
    match script.segments.as_slice() {
        [only] => {
            only.assignments.is_empty()
                && only.words.first().and_then(command_name) == Some("mktemp")
        }
        _ => false,
    }
}

/// Whether a `${name…}` operator keeps the variable's own value (`:?` and `?` fail when unset).
fn safe_operator(op: &str) -> (bool, bool) {
    match op {
        "" => (true, false),
        ":?" | "?" => (true, true),
        _ if op.starts_with(":?") || op.starts_with('?') => (true, true),
        _ => (false, false),
    }
}

/// A suffix after the variable (`/x`, `/*`): must start with `/` and never climb with `..`.
fn safe_suffix(parts: &[WordPart]) -> Option<String> {
    let mut suffix = String::new();
    for part in parts {
        match part {
            WordPart::Literal { text, .. } => suffix.push_str(text),
            _ => return None,
        }
    }
    if suffix.is_empty() {
        return Some(suffix);
    }
    if !suffix.starts_with('/') || suffix.split('/').any(|c| c == "..") {
        return None;
    }
    Some(suffix)
}

/// Whether `target` is a carve-out target for the rm in segment `index`.
#[must_use]
pub fn is_carve_out(target: &Word, vars: &TempVars, index: usize) -> bool {
    if is_mktemp_value(target) {
        return true;
    }
    let Some(WordPart::Param { name, op, .. }) = target.parts.first() else {
        return false;
    };
    let (keeps_value, fails_when_unset) = safe_operator(op);
    if !keeps_value {
        return false;
    }
    let Some(suffix) = safe_suffix(&target.parts[1..]) else {
        return false;
    };
    if name == "TMPDIR" {
        return !vars.trust.tmpdir_assigned && !target.glob && !target.brace;
    }
    // Set again where the script's order does not show it (a function body, a trap,
    // `${v:=…}`), or by code no rule reads: its `mktemp` value is not what `rm` gets.
    if vars.trust.runs_unseen_code || vars.trust.reassigned.contains(name) {
        return false;
    }
    let Some((from_mktemp, assigned_at)) = vars.lookup(name) else {
        return false;
    };
    if !from_mktemp {
        return false;
    }
    if suffix.is_empty() {
        return true;
    }
    // With a suffix, a failed mktemp would leave `"$tmp"/*` as `/*`: the assignment must
    // guard the rm with `&&` all the way, or the expansion must fail when unset.
    vars.guarded(assigned_at, index) || fails_when_unset
}

/// Why an `rm` must be denied, with its rule name.
#[must_use]
pub fn deny_rm(
    rm: &RmArgs<'_>,
    vars: &TempVars,
    index: Option<usize>,
) -> Option<(&'static str, String)> {
    if rm.no_preserve_root {
        return Some((
            "rm-root",
            "`rm --no-preserve-root` is never allowed".to_string(),
        ));
    }
    for target in &rm.targets {
        if let Some(i) = index
            && is_carve_out(target, vars, i)
        {
            continue;
        }
        let text = target.text();
        let first = target.parts.first();
        if matches!(first, Some(WordPart::Tilde { .. }))
            || target
                .parts
                .iter()
                .any(|p| matches!(p, WordPart::Param { name, .. } if name == "HOME"))
        {
            return Some(("rm-home", format!("`rm` on the home directory (`{text}`)")));
        }
        if text.starts_with('/') && normalize(text) == "/" {
            return Some(("rm-root", "`rm` on `/`".to_string()));
        }
        // Braces alone name exactly their words (`rm -f file.{o,d}`): each is judged as a
        // target; a glob (or more words than can be checked) could delete anything.
        let braces_named = target.brace
            && !target.glob
            && super::paths::expand_braces(text, 64).is_some_and(|words| {
                words.iter().all(|w| {
                    let normal = normalize(w);
                    let outside =
                        w.starts_with('/') || w.starts_with('~') || w.split('/').any(|c| c == "..");
                    normal != "/" && !(outside && (rm.recursive || rm.force || w.starts_with('~')))
                })
            });
        if target.glob || (target.brace && !braces_named) {
            return Some((
                "rm-glob",
                format!("`rm` on a glob (`{text}`) could delete more than anyone read"),
            ));
        }
        if rm.recursive || rm.force {
            let absolute = text.starts_with('/');
            let climbs = text.split('/').any(|c| c == "..");
            if absolute || climbs || (target.has_expansion() && !braces_named) {
                return Some((
                    "rm-recursive",
                    format!(
                        "`rm -r`/`-f` on `{text}` (an absolute path, a path with `..` or an expansion); use a relative path inside the workspace, or a `mktemp` directory"
                    ),
                ));
            }
        }
    }
    None
}

/// Whether an `rm` the denylist let through still deletes with `-r`/`-f` outside a carve-out
/// (the pre-check makes that high-risk).
#[must_use]
pub fn forceful_outside_carve_out(rm: &RmArgs<'_>, vars: &TempVars, index: usize) -> bool {
    (rm.recursive || rm.force) && rm.targets.iter().any(|t| !is_carve_out(t, vars, index))
}
