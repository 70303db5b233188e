//! `ansible HOSTS -m MODULE -a ARGS`: with a module that runs a command line (`command`, the
//! default, `shell`, `raw`, `script`, `expect`), ARGS carries one, and it runs on this host
//! when HOSTS is `localhost`; a `pipe` lookup in any argument (`{{ lookup("pipe", "…") }}`)
//! runs one on this machine whatever the module. Those command lines are judged as scripts (so
//! `ansible localhost -a 'sudo reboot'` is denied like `sudo reboot`). Any ad-hoc run is
//! high-risk (`hazards`): modules such as `file state=absent` or `copy` do as much harm as a
//! command, and argparse's clusters (`-vmshell`) hide which module runs.

use super::ast::Word;

/// Modules whose arguments are a command line (by their last dotted part:
/// `ansible.builtin.shell`, `ansible.legacy.command`).
const RUNS_COMMANDS: &[&str] = &["command", "shell", "raw", "script", "expect"];

/// Keys of a module's arguments that hold a command line (`cmd="…"`, `command="…"` for
/// `expect`) or its words (`argv=[…]`).
const COMMAND_KEYS: &[&str] = &["cmd", "_raw_params", "command", "argv"];

/// The module named (the default, `command`, when none is) and the arguments given.
struct Call {
    /// `None` when a short option cluster may name it (`-vmshell`, `-bm shell`).
    module: Option<String>,
    args: Option<String>,
}

impl Call {
    fn read(after: &[Word]) -> Self {
        let (mut module, mut args, mut clustered_module) = (None, None, false);
        // After `--` every word is a host pattern (`-- -mping,localhost`).
        let mut words = after.iter().map(Word::text).take_while(|t| *t != "--");
        while let Some(text) = words.next() {
            if let Some(value) = option_value(text, "-m", "--module-name", &mut words) {
                module = Some(value);
            } else if let Some(value) = option_value(text, "-a", "--args", &mut words) {
                args = Some(value);
            } else if text.len() > 2 && text.starts_with('-') && !text.starts_with("--") {
                clustered_module |= text[1..].contains('m');
            }
        }
        let module = if clustered_module {
            None
        } else {
            let module = module.unwrap_or_else(|| "command".to_string());
            Some(module.rsplit('.').next().unwrap_or_default().to_string())
        };
        Call { module, args }
    }

    /// Whether its module runs a command line (one that may be is taken for one).
    fn runs_commands(&self) -> bool {
        self.module
            .as_deref()
            .is_none_or(|m| RUNS_COMMANDS.contains(&m))
    }
}

/// The value of the option `short`/`long` if `text` is it: `-m shell`, `-mshell`,
/// `--module-name=shell`, and, as argparse reads them, unambiguous prefixes of the long name
/// (`--module-n`, `--ar`; `--module-` could be `--module-path`, `--a` `--ask-pass`).
fn option_value<'a>(
    text: &str,
    short: &str,
    long: &str,
    words: &mut impl Iterator<Item = &'a str>,
) -> Option<String> {
    if let Some(written) = text.strip_prefix("--") {
        let (name, attached) = match written.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (written, None),
        };
        let full = &long[2..];
        let unambiguous = match full {
            "module-name" => name.len() >= "module-n".len(),
            _ => name.len() >= 2,
        };
        if !(unambiguous && full.starts_with(name)) {
            return None;
        }
        return attached
            .map(str::to_string)
            .or_else(|| words.next().map(str::to_string));
    }
    if text == short {
        return words.next().map(str::to_string);
    }
    text.strip_prefix(short)
        .filter(|value| !value.is_empty())
        .map(str::to_string)
}

/// The command lines `ansible` with these words runs: `pipe` lookups anywhere, and with a
/// command module the free-form arguments and the values of `cmd=`, `_raw_params=`,
/// `command=` and `argv=[…]`, written as `key=value` words or as JSON (`-a '{"cmd": "…"}'`).
#[must_use]
pub fn command_lines(after: &[Word]) -> Vec<String> {
    let mut lines: Vec<String> = after.iter().flat_map(|w| pipe_lookups(w.text())).collect();
    let call = Call::read(after);
    let runs_commands = call.runs_commands();
    let Some(args) = call.args.filter(|_| runs_commands) else {
        return lines;
    };
    lines.push(args.clone());
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_str(&args) {
        for key in COMMAND_KEYS {
            match map.get(*key) {
                Some(serde_json::Value::String(line)) => lines.push(line.clone()),
                Some(serde_json::Value::Array(words)) => lines.push(
                    words
                        .iter()
                        .filter_map(serde_json::Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                _ => {}
            }
        }
        return lines;
    }
    for key in COMMAND_KEYS {
        lines.extend(key_values(&args, key));
    }
    lines
}

/// The command of each `pipe` lookup in a Jinja expression: `lookup("pipe", "CMD")`,
/// `query('pipe', 'CMD')`, `q("pipe", "CMD")` — the quoted string after `pipe` and a comma.
fn pipe_lookups(text: &str) -> Vec<String> {
    let mut commands = Vec::new();
    for quote in ['"', '\''] {
        let name = format!("{quote}pipe{quote}");
        let mut rest = text;
        while let Some(at) = rest.find(&name) {
            rest = &rest[at + name.len()..];
            let after_comma = rest.trim_start().strip_prefix(',').map(str::trim_start);
            if let Some(value) = after_comma.and_then(|v| {
                let quote = v.chars().next().filter(|c| matches!(c, '"' | '\''))?;
                v[1..].split(quote).next()
            }) {
                commands.push(value.to_string());
            }
        }
    }
    commands
}

/// The values of `key=…` in `key=value` arguments: quoted (`cmd="sudo reboot"`), a list
/// (`argv=["sudo", "reboot"]`, its items joined by spaces) or a bare word.
fn key_values(args: &str, key: &str) -> Vec<String> {
    let pattern = format!("{key}=");
    let mut values = Vec::new();
    let mut from = 0;
    while let Some(found) = args[from..].find(&pattern) {
        let at = from + found;
        from = at + pattern.len();
        let starts_word = args[..at]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace);
        if !starts_word {
            continue;
        }
        let value = &args[from..];
        let text = match value.chars().next() {
            Some(quote @ ('"' | '\'')) => value[1..].split(quote).next().unwrap_or_default(),
            Some('[') => {
                let list = value[1..].split(']').next().unwrap_or_default();
                values.push(
                    list.split(',')
                        .map(|item| item.trim().trim_matches(['"', '\'']))
                        .collect::<Vec<_>>()
                        .join(" "),
                );
                continue;
            }
            _ => value.split(char::is_whitespace).next().unwrap_or_default(),
        };
        values.push(text.to_string());
    }
    values
}

#[cfg(test)]
mod tests {
    use super::command_lines;
    use crate::policy::shell::lexer::lex;

    fn lines(cmd: &str) -> Vec<String> {
        let lexed = lex(cmd);
        command_lines(&lexed.script.segments[0].words[1..])
    }

    #[test]
    fn finds_the_command_lines() {
        for (cmd, expected) in [
            ("ansible localhost -a 'sudo reboot'", "sudo reboot"),
            ("ansible localhost -m shell -a 'rm -rf ~'", "rm -rf ~"),
            ("ansible all -mraw --args='sudo reboot'", "sudo reboot"),
            (
                "ansible localhost -m ansible.legacy.shell -a 'sudo reboot'",
                "sudo reboot",
            ),
            (
                "ansible localhost --module-n shell --ar 'sudo reboot'",
                "sudo reboot",
            ),
            ("ansible localhost -a 'cmd=\"sudo reboot\"'", "sudo reboot"),
            (
                "ansible localhost -m command -a 'argv=[\"sudo\",\"reboot\"]'",
                "sudo reboot",
            ),
            (
                "ansible localhost -m expect -a 'command=\"sudo reboot\" responses={}'",
                "sudo reboot",
            ),
            (
                "ansible localhost -a '{\"cmd\": \"sudo reboot\"}'",
                "sudo reboot",
            ),
            (
                "ansible localhost -a '{\"argv\": [\"sudo\", \"reboot\"]}'",
                "sudo reboot",
            ),
            (
                "ansible localhost -m ping -vmshell -a 'sudo reboot'",
                "sudo reboot",
            ),
            (
                "ansible localhost -m debug -a 'msg={{ lookup(\"pipe\", \"sudo reboot\") }}'",
                "sudo reboot",
            ),
            (
                "ansible localhost -m ping -e \"x={{ query('pipe', 'sudo reboot') }}\"",
                "sudo reboot",
            ),
        ] {
            assert!(
                lines(cmd).iter().any(|l| l == expected),
                "{cmd}: {:?}",
                lines(cmd)
            );
        }
    }

    #[test]
    fn other_modules_run_no_command_line() {
        for cmd in [
            "ansible localhost -m ping",
            "ansible all -m setup -a 'filter=ansible_os_family'",
            "ansible localhost --module-path ./m -m ping",
        ] {
            assert!(lines(cmd).is_empty(), "{cmd}");
        }
        // After `--`, a host pattern.
        assert_eq!(lines("ansible -a 'id' -- -mping,localhost"), ["id"]);
    }
}
