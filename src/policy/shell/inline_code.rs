//! Shells and interpreters given code on their command line: `bash -c`, `python -c`, `node -e`,
//! `perl -e`, `php -r`, `deno eval` … wherever the flag stands — after other options
//! (`python3 -W ignore -c …`, `bash --rcfile f -c …`), clustered (`perl -lne`, `python -Bc`),
//! or long (`node --eval=…`). Code written inline is code nobody reviewed as a file, so the
//! pre-check makes it high-risk; for shells the command string is also judged as a script.

use super::ast::Word;
use super::command::{interpreter_family, is_shell};

/// How one family of interpreters takes code on its command line.
struct CodeFlags {
    family: &'static str,
    /// Short flags that mean "the code follows" (`-c`, `-e`).
    short: &'static [char],
    /// Short flags that take a value, ending a cluster (`-W ignore`, `-Mstrict`): the letters
    /// after them are that value, not flags.
    short_with_value: &'static [char],
    /// Long options that carry code (`--eval`, `--command`).
    long: &'static [&'static str],
}

const INTERPRETERS: &[CodeFlags] = &[
    CodeFlags {
        family: "python",
        short: &['c'],
        short_with_value: &['W', 'X', 'm', 'Q'],
        long: &[],
    },
    CodeFlags {
        family: "ipython",
        short: &['c'],
        short_with_value: &['m'],
        long: &[],
    },
    CodeFlags {
        family: "pypy",
        short: &['c'],
        short_with_value: &['W', 'X', 'm', 'Q'],
        long: &[],
    },
    CodeFlags {
        family: "node",
        short: &['e', 'p'],
        short_with_value: &['r', 'C'],
        long: &["--eval", "--print"],
    },
    CodeFlags {
        family: "nodejs",
        short: &['e', 'p'],
        short_with_value: &['r', 'C'],
        long: &["--eval", "--print"],
    },
    CodeFlags {
        family: "bun",
        short: &['e', 'p'],
        short_with_value: &['r'],
        long: &["--eval", "--print"],
    },
    CodeFlags {
        family: "deno",
        short: &['e'],
        short_with_value: &[],
        long: &["--eval", "--eval-file"],
    },
    CodeFlags {
        family: "perl",
        short: &['e', 'E'],
        short_with_value: &['M', 'm', 'I', 'i', '0', 'C', 'x', 'd', 'D', 'F', 'V'],
        long: &[],
    },
    CodeFlags {
        family: "ruby",
        short: &['e'],
        short_with_value: &['I', 'r', 'C', 'E', 'F', 'x', '0', 'W', 'K', 'T'],
        long: &[],
    },
    CodeFlags {
        family: "php",
        short: &['r', 'B', 'R', 'E'],
        short_with_value: &['d', 'c', 'z', 'f', 'F', 't', 'S'],
        long: &[],
    },
    CodeFlags {
        family: "lua",
        short: &['e'],
        short_with_value: &['l'],
        long: &[],
    },
    CodeFlags {
        family: "luajit",
        short: &['e'],
        short_with_value: &['l', 'j', 'b', 'O'],
        long: &[],
    },
    CodeFlags {
        family: "osascript",
        short: &['e'],
        short_with_value: &['l', 's'],
        long: &[],
    },
    CodeFlags {
        family: "expect",
        short: &['c'],
        short_with_value: &['f'],
        long: &[],
    },
    CodeFlags {
        family: "Rscript",
        short: &['e'],
        short_with_value: &[],
        long: &["--expr"],
    },
    CodeFlags {
        family: "R",
        short: &['e'],
        short_with_value: &[],
        long: &[],
    },
    CodeFlags {
        family: "julia",
        short: &['e', 'E'],
        short_with_value: &['L', 'J', 'p', 't'],
        long: &["--eval", "--print"],
    },
    CodeFlags {
        family: "elixir",
        short: &['e'],
        short_with_value: &['r', 'S'],
        long: &["--eval"],
    },
    CodeFlags {
        family: "iex",
        short: &['e'],
        short_with_value: &['r', 'S'],
        long: &["--eval"],
    },
    CodeFlags {
        family: "erl",
        short: &[],
        short_with_value: &[],
        long: &["-eval", "-run", "-s", "-S"],
    },
    CodeFlags {
        family: "racket",
        short: &['e', 'i'],
        short_with_value: &['f', 'l', 't', 'r', 'u', 'k', 'p', 'S', 'A', 'X', 'G'],
        long: &["--eval"],
    },
    CodeFlags {
        family: "guile",
        short: &['c'],
        short_with_value: &['L', 'l', 'e', 'x', 's'],
        long: &[],
    },
    CodeFlags {
        family: "sbcl",
        short: &[],
        short_with_value: &[],
        long: &["--eval", "--load"],
    },
    CodeFlags {
        family: "clisp",
        short: &['x'],
        short_with_value: &['i', 'B', 'M', 'm', 'L', 'E'],
        long: &[],
    },
    CodeFlags {
        family: "ghc",
        short: &['e'],
        short_with_value: &[],
        long: &[],
    },
    CodeFlags {
        family: "groovy",
        short: &['e'],
        short_with_value: &[],
        long: &[],
    },
    CodeFlags {
        family: "scala",
        short: &['e'],
        short_with_value: &[],
        long: &[],
    },
    CodeFlags {
        family: "kotlin",
        short: &['e'],
        short_with_value: &[],
        long: &[],
    },
];

/// Shells: `-c` takes code; `-o`/`-O` take an option name.
const SHELL_FLAGS: CodeFlags = CodeFlags {
    family: "sh",
    short: &['c'],
    short_with_value: &['o', 'O'],
    long: &["--command", "--init-command"],
};

/// Shell options whose value is the next word.
const SHELL_LONG_WITH_VALUE: &[&str] = &["--rcfile", "--init-file"];

/// Whether a shell or interpreter is given code inline, wherever the flag stands. Every word is
/// looked at, not only the leading options: a value-taking option this table does not know
/// must not hide a `-c` behind it (a script argument that looks like one costs a prompt).
#[must_use]
pub fn runs_inline_code(name: &str, args: &[Word]) -> bool {
    let family = interpreter_family(name);
    if family == "pwsh" || family == "powershell" {
        return powershell_code(family, args);
    }
    let mut words = args.iter().skip(1).map(Word::text);
    let flags = if is_shell(name) {
        if name == "fish" {
            // fish: `-C`/`--init-command` runs code before anything else.
            return words.any(|w| {
                cluster_has(w, &['c', 'C'], &[]) || long_is(w, &["--command", "--init-command"])
            });
        }
        &SHELL_FLAGS
    } else if let Some(flags) = INTERPRETERS.iter().find(|f| f.family == family) {
        flags
    } else {
        return false;
    };
    // `deno eval '…'`, and modules written inline as `data:` URLs (`node --import=data:…`).
    let data_url = |w: &str| {
        matches!(family, "deno" | "node" | "nodejs" | "bun")
            && (w.contains("data:") || (family == "deno" && w == "eval"))
    };
    words.any(|w| {
        data_url(w)
            || perl_module_code(family, w)
            || cluster_has(w, flags.short, flags.short_with_value)
            || long_is(w, flags.long)
    })
}

/// perl's `-MModule=args` becomes `use Module split(/,/, q{args});`: anything beyond a module
/// name and plain import arguments is code (`-M'strict;system("id")'`).
fn perl_module_code(family: &str, word: &str) -> bool {
    if family != "perl" {
        return false;
    }
    // `-M` may follow other switches in one cluster (`-wM'…'`).
    let Some(cluster) = word.strip_prefix('-').filter(|c| !c.starts_with('-')) else {
        return false;
    };
    let Some(at) = cluster.find(['M', 'm']) else {
        return false;
    };
    let spec = &cluster[at + 1..];
    let spec = spec.strip_prefix('-').unwrap_or(spec);
    let (module, imports) = spec.split_once('=').unwrap_or((spec, ""));
    let module_ok = module
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
    let imports_ok = imports
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | ',' | '.' | '-'));
    !(module_ok && imports_ok)
}

/// A short-option cluster (`-lne`) holding one of `code` before any value-taking letter.
fn cluster_has(word: &str, code: &[char], with_value: &[char]) -> bool {
    let Some(cluster) = word.strip_prefix('-') else {
        return false;
    };
    if cluster.starts_with('-') {
        return false;
    }
    for c in cluster.chars() {
        if code.contains(&c) {
            return true;
        }
        if with_value.contains(&c) {
            return false;
        }
    }
    false
}

/// `--eval`, `--eval=…`.
fn long_is(word: &str, names: &[&str]) -> bool {
    names.iter().any(|n| {
        word.strip_prefix(n)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('='))
    })
}

/// PowerShell takes options case-insensitively and abbreviated (`-c`, `-Comm`, `-ec`,
/// `-EncodedCommand`, `-cwa`); Windows PowerShell runs its first positional word as a command.
fn powershell_code(family: &str, args: &[Word]) -> bool {
    let mut positional_seen = false;
    for word in args.iter().skip(1) {
        let lower = word.text().to_ascii_lowercase();
        let option = lower.strip_prefix('-').or_else(|| lower.strip_prefix('/'));
        match option {
            Some(o) if !o.is_empty() => {
                let is_prefix_of = |full: &str| full.starts_with(o);
                if is_prefix_of("commandwithargs")
                    || is_prefix_of("encodedcommand")
                    || o == "cwa"
                    || o == "ec"
                {
                    return true;
                }
            }
            _ => {
                if family == "powershell" && !positional_seen {
                    return true;
                }
                positional_seen = true;
            }
        }
    }
    false
}

/// The script a shell runs with `-c` (`bash -c '…'`, `sh -ec '…'`, `bash --rcfile f -c '…'`,
/// `fish --command=…`): the first word that is not an option or an option's value.
#[must_use]
pub fn shell_command_string(args: &[Word]) -> Option<String> {
    let mut wants_script = false;
    let mut i = 0;
    while i < args.len() {
        let text = args[i].text();
        for long in ["--command", "--init-command"] {
            if let Some(value) = text.strip_prefix(long).and_then(|r| r.strip_prefix('=')) {
                return Some(value.to_string());
            }
            if text == long {
                return args.get(i + 1).map(|w| w.text().to_string());
            }
        }
        if text == "--" || text == "-" {
            i += 1;
            break;
        }
        if SHELL_LONG_WITH_VALUE.contains(&text) {
            i += 2;
            continue;
        }
        if text.starts_with("--") {
            i += 1;
            continue;
        }
        if (text.starts_with('-') || text.starts_with('+')) && text.len() > 1 {
            let mut takes_value = false;
            for c in text.chars().skip(1) {
                if c == 'c' || c == 'C' {
                    wants_script = true;
                }
                if SHELL_FLAGS.short_with_value.contains(&c) {
                    takes_value = true;
                    break;
                }
            }
            i += if takes_value { 2 } else { 1 };
            continue;
        }
        break;
    }
    if wants_script {
        return args.get(i).map(|w| w.text().to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::shell::command::command_view;
    use crate::policy::shell::lexer::lex;

    fn inline(cmd: &str) -> bool {
        let lexed = lex(cmd);
        let seg = &lexed.script.segments[0];
        let view = command_view(&seg.words);
        runs_inline_code(view.name.unwrap_or_default(), view.args)
    }

    #[test]
    fn finds_code_flags_wherever_they_stand() {
        for cmd in [
            "python3 -c 'x'",
            "python3 -W ignore -c 'x'",
            "python3 -I -B -c x",
            "python3 -Bc x",
            "python3.12 -X dev -c x",
            "node -e 'x'",
            "node -r ./hook.js -e x",
            "node --eval=x",
            "node --print x",
            "nodejs -p 1",
            "bun -e x",
            "perl -ne 'print'",
            "perl -I lib -e x",
            "perl -Mstrict -e x",
            "perl -lne x",
            "ruby -r json -e x",
            "ruby -Ilib -e x",
            "php -d k=v -r x",
            "php -B 'system(1);' -R x",
            "lua5.4 -l m -e x",
            "deno eval x",
            "deno -e x",
            "deno run data:text/javascript,x",
            "bash -lc x",
            "bash --rcfile f -c x",
            "bash -o pipefail -c x",
            "bash --norc --noprofile -c x",
            "sh -ec x",
            "zsh -f -c x",
            "fish -C x",
            "fish --init-command=x",
            "pwsh -NoProfile -Command x",
            "pwsh -nop -c x",
            "pwsh -Comm x",
            "pwsh -EncodedCommand eA==",
            "pwsh -enc eA==",
            "pwsh -ec eA==",
            "powershell Get-Process",
            "osascript -l JavaScript -e x",
        ] {
            assert!(inline(cmd), "{cmd}");
        }
    }

    #[test]
    fn scripts_and_values_are_not_code() {
        for cmd in [
            "python3 script.py",
            "python3 -W once script.py",
            "python3 -m pytest",
            "node app.js",
            "perl -Mstrict script.pl",
            "perl -i.bak script.pl",
            "ruby script.rb",
            "deno run main.ts",
            "bash script.sh",
            "bash -x script.sh",
            "pwsh -File x.ps1",
            "pwsh -ExecutionPolicy Bypass -File x.ps1",
        ] {
            assert!(!inline(cmd), "{cmd}");
        }
    }

    #[test]
    fn finds_the_shell_script() {
        let script = |cmd: &str| {
            let lexed = lex(cmd);
            shell_command_string(&lexed.script.segments[0].words[1..])
        };
        assert_eq!(script("bash -c 'ls'").as_deref(), Some("ls"));
        assert_eq!(script("bash --rcfile f -c 'ls'").as_deref(), Some("ls"));
        assert_eq!(script("bash -o pipefail -c 'ls'").as_deref(), Some("ls"));
        assert_eq!(script("bash -c -x 'ls'").as_deref(), Some("ls"));
        assert_eq!(script("sh -ec 'ls'").as_deref(), Some("ls"));
        assert_eq!(script("fish --command='ls'").as_deref(), Some("ls"));
        assert_eq!(script("bash script.sh"), None);
    }
}
