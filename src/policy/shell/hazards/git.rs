//! git arguments that run programs: configuration given on the command line (`-c`,
//! `--config-env`: `core.pager`, `alias.x=!cmd`, `core.fsmonitor` … all run code), another
//! exec path, the programs a transfer runs on the other side (`--upload-pack`,
//! `--receive-pack`, `-u`, `--exec`), subcommands that run commands (`submodule foreach`,
//! `bisect run`, `rebase --exec`, `difftool --extcmd`, `filter-branch`), and `git config`
//! setting a key that names a program. A saved `git pull` key never covers these: the pre-check
//! marks them high-risk before any allowlist is read.

use super::args::{Args, cluster_has, names_a_path_outside, option_is};

/// Global options (before the subcommand) that take the next word.
const GLOBAL_WITH_VALUE: &[&str] = &[
    "-C",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--list-cmds",
    "--attr-source",
    "--shallow-file",
];

/// Global options that take no value. Any other word starting with `-` before the subcommand
/// is one tollgate does not know: it could take the next word and hide the real subcommand
/// (and a `-c` after it), so the command is high-risk.
const GLOBAL_FLAGS: &[&str] = &[
    "-p",
    "--paginate",
    "-P",
    "--no-pager",
    "--no-replace-objects",
    "--no-lazy-fetch",
    "--no-optional-locks",
    "--no-advice",
    "--bare",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--html-path",
    "--man-path",
    "--info-path",
    "--exec-path",
    "--version",
    "-v",
    "--help",
    "-h",
];

/// Config keys (lowercased) whose value is a program, a shell snippet or a hook location.
fn key_runs_code(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    const EXACT: &[&str] = &[
        "core.pager",
        "core.editor",
        "core.fsmonitor",
        "core.hookspath",
        "core.sshcommand",
        "core.askpass",
        "core.gitproxy",
        "core.alternaterefscommand",
        "diff.external",
        "sequence.editor",
        "credential.helper",
        "gpg.program",
        "uploadpack.packobjectshook",
        "receive.procreceiverefs",
        "merge.tool",
        "diff.tool",
        "instaweb.httpd",
        "web.browser",
        "sendemail.sendmailcmd",
        // `git imap-send` runs it to reach the server.
        "imap.tunnel",
        "sendemail.smtpserver",
        "protocol.allow",
        "init.templatedir",
        "interactive.difffilter",
        "core.packedgitwindowsize",
    ];
    // The key's last part whatever its section (`x.fsmonitor` is harmless only until the
    // section is renamed to `core`). Sections matched by their start (`alias.`, `filter.`)
    // are not repeated here: renaming a section is high-risk on its own.
    const LAST: &[&str] = &[
        "pager",
        "editor",
        "fsmonitor",
        "hookspath",
        "sshcommand",
        "askpass",
        "gitproxy",
        "alternaterefscommand",
        "external",
        "sendmailcmd",
        "tunnel",
        "templatedir",
        "difffilter",
        "packobjectshook",
        "procreceiverefs",
        "smtpserver",
        "browser",
        "httpd",
        "tool",
    ];
    EXACT.contains(&key.as_str())
        || key
            .rsplit_once('.')
            .is_some_and(|(_, last)| LAST.contains(&last))
        || [
            "alias.",
            "pager.",
            "filter.",
            "gpg.",
            "includeif.",
            "include.",
        ]
        .iter()
        .any(|p| key.starts_with(p))
        || [
            ".textconv",
            ".command",
            ".driver",
            ".cmd",
            ".helper",
            ".path",
            ".program",
            ".uploadpack",
            ".receivepack",
            ".proxy",
            // `protocol.ext.allow always` lets `ext::` URLs run commands.
            ".allow",
            // `submodule.<name>.update '!cmd'` runs cmd on `git submodule update`.
            ".update",
        ]
        .iter()
        .any(|s| key.ends_with(s))
}

/// Why a git command line runs a program it names, if it does.
#[must_use]
pub fn hazard(args: Args<'_>) -> Option<String> {
    let texts: Vec<&str> = args.texts().collect();
    let mut i = 0;
    while i < texts.len() {
        let t = texts[i];
        if t == "-c" || t.starts_with("-c") && t.len() > 2 {
            return Some("`git -c` sets configuration that can run programs".into());
        }
        if t.starts_with("--config-env") {
            return Some("`git --config-env` sets configuration that can run programs".into());
        }
        if t.starts_with("--exec-path") && t.contains('=') {
            return Some("`git --exec-path=…` runs git's commands from another directory".into());
        }
        if !t.starts_with('-') {
            break;
        }
        let name = t.split_once('=').map_or(t, |(name, _)| name);
        if !GLOBAL_WITH_VALUE.contains(&name) && !GLOBAL_FLAGS.contains(&name) {
            return Some(format!(
                "`git {name}` is an option before the subcommand that tollgate does not know: it could hide what runs"
            ));
        }
        i += if GLOBAL_WITH_VALUE.contains(&t) { 2 } else { 1 };
    }
    let subcommand = *texts.get(i)?;
    let rest = &texts[i + 1..];
    let has = |names: &[&str]| rest.iter().any(|a| names.iter().any(|n| option_is(a, n)));
    if has(&["--upload-pack", "--receive-pack", "--exec"]) {
        return Some(format!(
            "`git {subcommand}` is told which program to run for the transfer"
        ));
    }
    // A pager for every match, a file written anywhere, hooks from a template directory, or
    // configuration (with its code-running keys) planted in the new repository.
    if has(&[
        "--open-files-in-pager",
        "--output",
        "--template",
        "--config",
    ]) || (subcommand == "grep" && rest.iter().any(|a| cluster_has(a, 'O')))
        || (subcommand == "clone" && rest.iter().any(|a| cluster_has(a, 'c')))
    {
        return Some(format!(
            "`git {subcommand}` with these arguments runs a program or writes where it is told"
        ));
    }
    if let Some(hit) = writes_outside(subcommand, rest) {
        return Some(hit);
    }
    // `ext::CMD` is a remote whose transport is a command git runs.
    if rest.iter().any(|a| a.starts_with("ext::")) {
        return Some(format!(
            "`git {subcommand}` is given an `ext::` remote, which runs a command"
        ));
    }
    let runs = match subcommand {
        "clone" | "fetch" | "pull" | "ls-remote" | "archive" => {
            rest.iter().any(|a| cluster_has(a, 'u'))
        }
        "submodule" => rest.contains(&"foreach"),
        "bisect" => rest.first() == Some(&"run"),
        // Going on with a rebase runs the `exec` lines of its todo file, which the agent can
        // write (`.git/rebase-merge/git-rebase-todo`).
        "rebase" => {
            rest.iter().any(|a| cluster_has(a, 'x'))
                || has(&["--continue", "--skip", "--edit-todo"])
        }
        "difftool" | "mergetool" => {
            has(&["--extcmd", "--tool"])
                || rest
                    .iter()
                    .any(|a| cluster_has(a, 'x') || cluster_has(a, 't'))
        }
        "filter-branch" | "filter-repo" => true,
        // Renaming a section turns its harmless keys into code-running ones (`x.fsmonitor`
        // becomes `core.fsmonitor`); editing runs an editor on the whole file.
        "config" => {
            (!config_reads(rest) && rest.iter().any(|a| !a.starts_with('-') && key_runs_code(a)))
                || has(&["--rename-section", "--edit"])
                || rest
                    .iter()
                    .any(|a| matches!(*a, "rename-section" | "edit") || cluster_has(a, 'e'))
        }
        "daemon" | "instaweb" | "send-email" | "credential" | "upload-pack" | "receive-pack"
        | "shell" | "remote-ext" | "remote-fd" | "submodule--helper" => true,
        // `git hook run NAME` runs a hook the agent can write.
        "hook" => rest.contains(&"run"),
        _ => false,
    };
    runs.then(|| format!("`git {subcommand}` with these arguments runs programs"))
}

/// Why a git command writes files outside the workspace, if it does: `apply --unsafe-paths`
/// (the patch's paths, wherever they lead), and a clone, a worktree, a bundle, patches or
/// checked-out files (`checkout-index --prefix=/`) made where any of its arguments points
/// outside — read whole, not option by option: git takes abbreviations (`--pre=/`, `--sep=`)
/// and attached values (`-o/srv/x`), and a value unknown here would shift the operands. A
/// key saved for `git clone URL` must not cover `git clone URL ~/.local/lib/python3/…`.
fn writes_outside(subcommand: &str, rest: &[&str]) -> Option<String> {
    let writes = match subcommand {
        "apply" => {
            return rest
                .iter()
                .any(|a| option_is(a, "--unsafe-paths"))
                .then(|| {
                    "`git apply --unsafe-paths` writes wherever the patch's paths lead".into()
                });
        }
        "worktree" => rest.iter().any(|a| matches!(*a, "add" | "move")),
        "bundle" => rest.contains(&"create"),
        "format-patch" | "checkout-index" | "init" => true,
        // A clone may read from outside (`git clone ../upstream copy`, `/srv/git/app.git`):
        // the first operand, the source, is passed over (or an option's value standing
        // before it, which shifts the source into the words checked: a prompt, not a miss).
        "clone" => {
            let mut operands = rest.iter().filter(|a| !a.starts_with('-')).skip(1);
            let outside = operands.any(|a| names_a_path_outside(a))
                || rest
                    .iter()
                    .any(|a| a.starts_with('-') && names_a_path_outside(a));
            return outside
                .then(|| "`git clone` writes outside the workspace, where it is told".into());
        }
        _ => false,
    };
    (writes && rest.iter().any(|a| names_a_path_outside(a)))
        .then(|| format!("`git {subcommand}` writes outside the workspace, where it is told"))
}

/// Whether `git config` only reads: its action — the first word once the options choosing
/// the file and the format are passed (`--global`, `--file F`, `--type=bool`) — is a read
/// (`get`, `list`, `--get…`, `--list`, `-l`), and no option spells a write, abbreviated or not.
/// A read found anywhere else may be another option's value: `git config set --comment --get
/// core.pager 'sh -c id'` writes `core.pager`.
fn config_reads(rest: &[&str]) -> bool {
    const FLAGS: &[&str] = &[
        "--global",
        "--system",
        "--local",
        "--worktree",
        "--includes",
        "--no-includes",
        "--show-origin",
        "--show-scope",
        "-z",
        "--null",
        "--name-only",
        "--bool",
        "--int",
        "--bool-or-int",
        "--path",
        "--expiry-date",
    ];
    const WITH_VALUE: &[&str] = &["--file", "-f", "--blob", "--type", "--default"];
    const WRITES: &[&str] = &[
        "--add",
        "--replace-all",
        "--unset",
        "--unset-all",
        "--rename-section",
        "--remove-section",
        "--edit",
        "--comment",
    ];
    let mut words = rest.iter();
    let action = loop {
        match words.next() {
            Some(a) if FLAGS.contains(a) => {}
            Some(a) if WITH_VALUE.contains(a) => {
                words.next();
            }
            Some(a)
                if ["--file=", "--blob=", "--type="]
                    .iter()
                    .any(|p| a.starts_with(p)) => {}
            other => break other,
        }
    };
    let reads = action.is_some_and(|a| {
        matches!(
            *a,
            "get"
                | "list"
                | "--get"
                | "--get-all"
                | "--get-regexp"
                | "--get-urlmatch"
                | "--list"
                | "-l"
        )
    }) || (words.next().is_none()
        // `git config core.editor`: a key alone, no value, is read (not a subcommand word).
        && action.is_some_and(|a| {
            !a.starts_with('-')
                && !matches!(*a, "set" | "unset" | "rename-section" | "remove-section" | "edit")
        }));
    // git takes any unambiguous prefix of a long option (`--ad` is `--add`).
    let writes = rest
        .iter()
        .any(|a| WRITES.iter().any(|write| option_is(a, write)));
    reads && !writes
}

#[cfg(test)]
mod tests {
    use super::hazard;
    use crate::policy::shell::lexer::lex;

    fn check(cmd: &str) -> Option<String> {
        hazard(super::Args::of(&lex(cmd).script.segments[0].words))
    }

    #[test]
    fn finds_programs() {
        for cmd in [
            "git -c core.pager='sh -c id' log",
            "git -c alias.x='!id' x",
            "git -ccore.fsmonitor=x status",
            "git -C repo -c x=y status",
            "git --config-env=core.pager=PAGER log",
            "git --exec-path=/tmp status",
            "git pull --upload-pack='touch x' origin",
            "git fetch --upload-pack=x",
            "git push --receive-pack=x",
            "git clone -u 'sh -c id' url",
            "git archive --remote=x --exec=y",
            "git submodule foreach 'rm -rf x'",
            "git bisect run ./x.sh",
            "git rebase --exec 'id' main",
            "git rebase -x id main",
            "git rebase --continue",
            "git rebase --cont",
            "git rebase --skip",
            "git rebase --edit-todo",
            "git config imap.tunnel 'sh -c id'",
            "git config --add IMAP.Tunnel x",
            "git remote-ext x 'touch pwned'",
            "git remote-fd 3",
            "git difftool --extcmd=id",
            "git filter-branch --tree-filter x",
            "git config core.pager 'sh -c id'",
            "git config --global alias.st '!id'",
            "git config core.hooksPath .h",
            "git config diff.x.textconv id",
            "git config x.fsmonitor 'sh -c id'",
            "git config --rename-section x core",
            "git config rename-section x alias",
            "git config --edit",
            "git config -e",
            "git submodule--helper foreach id",
            "git grep -O'sh -c id' TODO",
            "git grep --open-files-in-pager=id TODO",
            "git diff --output=/tmp/x",
            "git log --outp=/tmp/x",
            "git clone --template=./t ./src dst",
            "git clone -c core.fsmonitor=x ./src dst",
            "git fetch --upload-p=x",
            // Short options stacked: git reads `-qx cmd` as `-q -x cmd`.
            "git grep -iO'bash p' TODO",
            "git rebase -qx 'bash p' HEAD~1",
            "git difftool -yx 'bash p' HEAD~1",
            "git mergetool -yt x",
            "git clone -qc filter.x.smudge=p url",
            "git fetch -qu 'sh -c id' origin",
            // A global option that takes a value, or one tollgate does not know, before `-c`.
            "git --shallow-file X -c alias.q='!bash p' q",
            "git --frobnicate X -c alias.q='!bash p' q",
            "git -Crepo status",
            // Reads beside a write are not reads.
            "git config --get core.editor --add core.pager id",
            "git config set core.editor id",
            "git config --global core.editor id",
            "git config set --comment --get core.pager 'sh -c id'",
            "git config set --comm --get core.sshCommand 'sh -c id'",
            "git config set --value -l core.editor 'sh -c id'",
            "git config --comment --get core.pager 'sh -c id'",
            "git config --comment get core.pager 'sh -c id'",
            "git config --get core.pager --ad core.fsmonitor id",
        ] {
            assert!(check(cmd).is_some(), "{cmd}");
        }
    }

    #[test]
    fn ordinary_git_passes() {
        for cmd in [
            "git status",
            "git grep -c TODO",
            "git commit -c HEAD",
            "git log --oneline",
            "git pull origin main",
            "git -C repo status",
            "git config user.name x",
            "git config --get remote.origin.url",
            "git clone https://x/y",
            "git --no-pager log",
            "git -P --git-dir=.git --work-tree . status",
            "git rebase -i main",
            "git fetch --quiet origin",
            "git grep -in TODO",
            "git config get core.editor",
            "git config --get-all alias.co",
            "git config --get diff.tool",
            "git config list --show-origin",
            "git config --global --get core.editor",
            "git config --file x.cfg --get-all alias.co",
            "git config core.editor",
            "git config --global core.editor",
            "git config --default x --get core.pager",
        ] {
            assert_eq!(check(cmd), None, "{cmd}");
        }
    }
}
