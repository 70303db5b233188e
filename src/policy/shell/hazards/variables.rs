//! Environment variables that name programs or code: setting one — as a prefix
//! (`PAGER=… git log`), through `env`, with `export`/`declare`, or alone before a later command
//! — changes what a harmless-looking command runs (`LD_PRELOAD`, `BASH_ENV`, `GIT_SSH_COMMAND`,
//! `LESSOPEN`, `PYTHONSTARTUP`, `PATH` …), or makes bash expand aliases (`POSIXLY_CORRECT`).

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
];

/// Whether setting `name` can change what a command runs.
#[must_use]
pub fn names_code(name: &str) -> bool {
    EXACT.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p))
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
            "LANG", "TZ", "NO_COLOR", "RUST_LOG", "FOO", "IFS", "HOME_DIR",
        ] {
            assert!(!names_code(name), "{name}");
        }
        assert_eq!(assigned_name("PATH+=:/x"), "PATH");
        assert_eq!(assigned_name("A[1]=x"), "A");
    }
}
