//! Environment variables that name programs or code: setting one — as a prefix
//! (`PAGER=… git log`), through `env`, with `export`/`declare`, with `read`, `printf -v` or
//! `mapfile`, or alone before a later command — changes what a harmless-looking command runs
//! (`LD_PRELOAD`, `BASH_ENV`, `GIT_SSH_COMMAND`, `LESSOPEN`, `PYTHONSTARTUP`, `PATH`, `HOME` …),
//! makes bash expand aliases (`POSIXLY_CORRECT`), or maps a command name to another program
//! (`BASH_CMDS`, `BASH_ALIASES`). A nameref (`declare -n`) can set any of them by another name.

use crate::policy::shell::ast::{Segment, Word};
use crate::policy::shell::command::CommandView;
use crate::policy::shell::names::sets_variables;

/// Names that are code or name a program to run.
const EXACT: &[&str] = &[
    "PAGER",
    "MANPAGER",
    "SYSTEMD_PAGER",
    "EDITOR",
    "VISUAL",
    "FCEDIT",
    "SUDO_EDITOR",
    "BROWSER",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "POSIXLY_CORRECT",
    "PATH",
    "LESSOPEN",
    "LESSCLOSE",
    "LESSKEY",
    "LESSKEYIN",
    "LESS",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONINSPECT",
    "PYTHONBREAKPOINT",
    "PYTHONUSERBASE",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5DB",
    "RUBYOPT",
    "RUBYLIB",
    "NODE_OPTIONS",
    "NODE_PATH",
    "TAR_OPTIONS",
    "GZIP",
    "ZIPOPT",
    "UNZIP",
    "XZ_OPT",
    "RSYNC_RSH",
    "CVS_RSH",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "CC",
    "CXX",
    "CPP",
    "LD",
    "AR",
    "MAKEFLAGS",
    "MAKE",
    "RUSTC",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTDOC",
    "RUSTFLAGS",
    "TERMINFO",
    "MAILCAP",
    "HOSTALIASES",
    "LOCPATH",
    "GCONV_PATH",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "LUA_INIT",
    "LUA_PATH",
    "LUA_CPATH",
    "PHPRC",
    "PHP_INI_SCAN_DIR",
    "R_PROFILE",
    "R_PROFILE_USER",
    "JULIA_LOAD_PATH",
    "BASH_CMDS",
    "BASH_ALIASES",
    "HOME",
    "ZDOTDIR",
    "VIMINIT",
    "EXINIT",
    "MYVIMRC",
    "GNUPGHOME",
    "KUBECONFIG",
    "DOCKER_CONFIG",
    "DOCKER_HOST",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "BOTO_CONFIG",
    "GOFLAGS",
    "GOPROXY",
    "GOTOOLCHAIN",
    "GH_PAGER",
    "GH_EDITOR",
    "KUBE_EDITOR",
    "WGETRC",
    "SCREENRC",
    "CURL_HOME",
    "INPUTRC",
    "TERMINFO_DIRS",
    "MANOPT",
    "MANPATH",
    // `flock -c`, `script -c`, `make` and others run their commands with `$SHELL`.
    "SHELL",
    "MAKEFILES",
    "GOENV",
    "GOROOT",
    "OPENSSL_CONF",
    "OPENSSL_ENGINES",
    "NIX_PATH",
];

/// Families of names (prefixes) that configure programs or the dynamic linker.
const PREFIXES: &[&str] = &[
    "GIT_",
    "LD_",
    "DYLD_",
    "BASH_FUNC_",
    "NPM_CONFIG_",
    "npm_config_",
    "YARN_",
    "CARGO_",
    "PIP_",
    "LESS_",
    "MALLOC_",
    "GLIBC_TUNABLES",
    "XDG_",
    "RUSTUP_",
];

/// Endings of names that point programs at other programs, options or configuration
/// (`GIT_PAGER`, `KUBE_EDITOR`, `CFLAGS`, `MAVEN_OPTS`, `PIP_CONFIG_FILE`, `CARGO_HOME`).
const SUFFIXES: &[&str] = &[
    "_PAGER",
    "_EDITOR",
    "_BROWSER",
    "_SHELL",
    "FLAGS",
    "_OPTS",
    "_OPTIONS",
    "_CONFIG",
    "_CONFIG_FILE",
    "_CONFIG_HOME",
    "_HOME",
    "_PATH",
    "_PRELOAD",
    "_COMMAND",
    "_PROGRAM",
];

/// Whether setting `name` can change what a command runs.
#[must_use]
pub fn names_code(name: &str) -> bool {
    EXACT.contains(&name)
        || PREFIXES.iter().any(|p| name.starts_with(p))
        || SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// Why this segment sets a variable that names code, if it does: as a prefix or alone
/// (`PAGER=x git log`, `LESSOPEN='|x'`), through a wrapper (`env LD_PRELOAD=x cmd`), by a
/// builtin (`export BASH_ENV=x`, `read PATH`, `printf -v PATH`, `mapfile BASH_ALIASES`), or
/// through a nameref.
#[must_use]
pub fn sets_code_variable(segment: &Segment, view: &CommandView<'_>) -> Option<String> {
    let found = |name: &str| format!("it sets `{name}`, which names a program or code to run");
    let assigned = segment.assignments.iter().map(|a| a.name.as_str());
    let through_wrappers = view.assignments.iter().map(|w| assigned_name(w));
    if let Some(name) = assigned.chain(through_wrappers).find(|n| names_code(n)) {
        return Some(found(name));
    }
    let builtin = view.name?;
    if !sets_variables(builtin) {
        return None;
    }
    let args: Vec<&str> = view.args.iter().skip(1).map(Word::text).collect();
    let options = || args.iter().filter(|a| a.starts_with('-'));
    let names: Vec<&str> = match builtin {
        "export" | "declare" | "typeset" | "local" | "readonly" => {
            if options().any(|o| o.contains('n')) {
                return Some(
                    "a nameref (`declare -n`) can set any variable by another name".into(),
                );
            }
            args.iter()
                .filter(|a| !a.starts_with('-'))
                .map(|a| assigned_name(a))
                .collect()
        }
        // `read [-a NAME] [NAME…]`: every name, and the array's.
        "read" => {
            let mut names: Vec<&str> = option_values(&args, &["-a"]);
            names.extend(plain_operands(
                &args,
                &["-d", "-n", "-N", "-p", "-t", "-u", "-i"],
            ));
            names
        }
        "printf" => option_values(&args, &["-v"]),
        "mapfile" | "readarray" => {
            plain_operands(&args, &["-d", "-n", "-O", "-s", "-u", "-C", "-c"])
                .into_iter()
                .last()
                .into_iter()
                .collect()
        }
        "getopts" => args.get(1).copied().into_iter().collect(),
        _ => return None,
    };
    names.into_iter().find(|n| names_code(n)).map(found)
}

/// The values of `options` (`-v NAME`, `-vNAME`).
fn option_values<'a>(args: &[&'a str], options: &[&str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        for o in options {
            if a == o {
                out.extend(args.get(i + 1).copied());
            } else if let Some(v) = a.strip_prefix(o).filter(|v| !v.is_empty()) {
                out.push(v);
            }
        }
    }
    out
}

/// The words that are not options or their values.
fn plain_operands<'a>(args: &[&'a str], with_value: &[&str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut skip = false;
    for a in args {
        if skip {
            skip = false;
        } else if with_value.contains(a) {
            skip = true;
        } else if !a.starts_with('-') {
            out.push(*a);
        }
    }
    out
}

/// The variable name of a `NAME=value` (or `NAME+=value`, `NAME[i]=value`) word.
#[must_use]
pub fn assigned_name(word: &str) -> &str {
    let name = word.split_once('=').map_or(word, |(n, _)| n);
    let name = name.strip_suffix('+').unwrap_or(name);
    name.split('[').next().unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for name in [
            "LD_PRELOAD",
            "GIT_SSH_COMMAND",
            "GIT_EXTERNAL_DIFF",
            "BASH_ENV",
            "PAGER",
            "LESSOPEN",
            "PYTHONSTARTUP",
            "BASH_FUNC_ls%%",
            "PATH",
            "NODE_OPTIONS",
        ] {
            assert!(names_code(name), "{name}");
        }
        for name in [
            "LANG",
            "TZ",
            "NO_COLOR",
            "RUST_LOG",
            "FOO",
            "IFS",
            "NODE_ENV",
            "CI",
            "PYTHONUNBUFFERED",
            "SRC",
        ] {
            assert!(!names_code(name), "{name}");
        }
        assert_eq!(assigned_name("PATH+=:/x"), "PATH");
        assert_eq!(assigned_name("A[1]=x"), "A");
    }
}
