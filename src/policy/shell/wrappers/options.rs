//! Reading a wrapper's own arguments the way its option parser does (short clusters, long
//! options and their unambiguous prefixes, `--`, assignments, positional words), to find the
//! command it runs and the command lines its options carry.

use super::Wrapper;
use crate::policy::shell::ast::Word;
use crate::policy::shell::command::CommandView;

/// Skips a wrapper's options, assignments and positional words; records the command lines its
/// script options carry and the variables it sets in `view`; returns the words of the command
/// it runs (none when it runs only what its options carry).
pub fn skip_options<'a>(
    wrapper: &Wrapper,
    words: &'a [Word],
    view: &mut CommandView<'a>,
) -> &'a [Word] {
    if wrapper.name == "sg" {
        return sg_command(words, view);
    }
    if wrapper.name == "command" && looks_up_only(words) {
        // `command -v NAME` says what NAME is; nothing runs (agents check for a program
        // this way: `command -v sudo` is no use of sudo).
        return &[];
    }
    let mut i = skip_leading_options(wrapper, words, view);
    // `runcon CONTEXT CMD` names a context only when no option does (`runcon -t T CMD`);
    // `runcon -- CONTEXT CMD` still names one.
    let mut positionals = if wrapper.name == "runcon" {
        let named_by_option = words
            .get(..i)
            .unwrap_or(&[])
            .iter()
            .any(|w| w.literal().is_some_and(|t| t.starts_with('-') && t != "--"));
        usize::from(!named_by_option)
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

/// Whether `command`'s options include `-v` or `-V` (bash: print how the name would be
/// found, and run nothing). Only literal options count: a word bash expands could be anything.
fn looks_up_only(words: &[Word]) -> bool {
    for word in words {
        let Some(text) = word.literal() else {
            return false;
        };
        if text == "--" || !text.starts_with('-') || text.len() < 2 {
            return false;
        }
        if text.contains(['v', 'V']) {
            return true;
        }
    }
    false
}

/// `sg [-|-l] GROUP [-c] COMMAND`: shadow's `sg` runs the one word after the group with
/// `/bin/sh -c`, whether or not `-c` comes first (words after it are ignored). A first word
/// bash expands could be `-` or the group: both readings are judged.
fn sg_command<'a>(words: &'a [Word], view: &mut CommandView<'a>) -> &'a [Word] {
    let first = words.first();
    let login = first
        .and_then(Word::literal)
        .is_some_and(|t| t == "-" || t == "-l");
    let expanded = first.is_some_and(|w| w.literal().is_none());
    let groups_at = [(login || expanded).then_some(1), (!login).then_some(0)];
    for group_at in groups_at.into_iter().flatten() {
        let mut rest = words.get(group_at + 1..).unwrap_or(&[]);
        if rest.first().and_then(Word::literal) == Some("-c") {
            rest = rest.get(1..).unwrap_or(&[]);
        }
        view.inline_scripts
            .extend(rest.first().map(|w| w.text().to_string()));
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
            if wrapper.with_three_values.contains(&option) {
                i += 4;
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
        .chain(wrapper.with_three_values)
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
