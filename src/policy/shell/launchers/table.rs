//! The launchers' table: each program and subcommand that runs a command on this host, with
//! the options whose values must be skipped to find it. Kept apart from the logic that reads it
//! because it is data that grows one program at a time.

use super::Launcher;
use crate::policy::shell::wrappers::wrapper;

const fn launcher(words: &'static [&'static str]) -> Launcher {
    Launcher {
        words,
        options: wrapper(words[0], &[]),
        after_dashes: false,
        plus_packages: false,
        shell_words: false,
        cargo_lines: false,
        env_prefixed: false,
    }
}

const fn values(mut l: Launcher, with_value: &'static [&'static str]) -> Launcher {
    l.options.with_value = with_value;
    l
}

const fn positional(mut l: Launcher, count: usize) -> Launcher {
    l.options.positional = count;
    l
}

/// Options whose value is a command line run by a shell (also listed among the values).
const fn scripts(mut l: Launcher, options: &'static [&'static str]) -> Launcher {
    l.options.script_options = options;
    l
}

const fn after_dashes(mut l: Launcher) -> Launcher {
    l.after_dashes = true;
    l
}

const fn plus_packages(mut l: Launcher) -> Launcher {
    l.plus_packages = true;
    l
}

const fn shell_words(mut l: Launcher) -> Launcher {
    l.shell_words = true;
    l
}

/// `-x`/`--exec` carry a cargo command line (`cargo watch -x 'run -- …'`).
const fn cargo_lines(mut l: Launcher) -> Launcher {
    l.cargo_lines = true;
    l
}

/// The command's first word may be `ENV:CMD` (`hatch run test:pytest`).
const fn env_prefixed(mut l: Launcher) -> Launcher {
    l.env_prefixed = true;
    l
}

/// `NAME=value` words may come before the command (`cmake -E env A=b CMD`).
const fn assignments(mut l: Launcher) -> Launcher {
    l.options.assignments = true;
    l
}

const UV_VALUES: &[&str] = &[
    "--with",
    "-w",
    "--with-editable",
    "--with-requirements",
    "--python",
    "-p",
    "--package",
    "--extra",
    "--group",
    "--only-group",
    "--no-group",
    "--env-file",
    "--directory",
    "--project",
    "--index",
    "--default-index",
    "--index-url",
    "-i",
    "--extra-index-url",
    "--find-links",
    "-f",
    "--config-file",
    "--cache-dir",
    "--python-preference",
    "--from",
    "--color",
    "--index-strategy",
    "--keyring-provider",
    "--resolution",
    "--prerelease",
    "--link-mode",
    "--exclude-newer",
    "-P",
    "--upgrade-package",
    "-C",
    "--config-setting",
    "--allow-insecure-host",
    "--fork-strategy",
    "--reinstall-package",
    "--refresh-package",
    "--no-binary-package",
    "--no-build-package",
    "--no-build-isolation-package",
    "--only-binary-package",
    "--no-sources-package",
    "--preview-features",
    "--no-extra",
    "--exclude-newer-package",
];

const CONDA_VALUES: &[&str] = &["-n", "--name", "-p", "--prefix", "--cwd", "-a", "--arch"];

const MISE_VALUES: &[&str] = &[
    "-c",
    "--command",
    "-C",
    "--cd",
    "-j",
    "--jobs",
    "-E",
    "--env",
];

/// npm's, pnpm's and yarn's ways to run a package's program; `-c` is a shell command line.
const NPX_VALUES: &[&str] = &["-p", "--package", "-c", "--call", "--workspace", "-w"];

const WATCHEXEC_VALUES: &[&str] = &[
    "-w",
    "--watch",
    "-W",
    "--watch-non-recursive",
    "-e",
    "--exts",
    "-f",
    "--filter",
    "--filter-file",
    "-i",
    "--ignore",
    "--ignore-file",
    "-d",
    "--debounce",
    "--delay-run",
    "--shell",
    "-s",
    "--signal",
    "--stop-signal",
    "--stop-timeout",
    "-E",
    "--env",
    "--workdir",
    "--on-busy-update",
    "--project-origin",
    "--emit-events-to",
    "--poll",
    "--color",
    "--timeout",
    "-j",
    "--filter-prog",
    "--log-file",
    "-o",
    "--wrap-process",
    "--socket",
    "--map-signal",
    "-F",
];

const NODEMON_VALUES: &[&str] = &[
    "-x", "--exec", "-w", "--watch", "-e", "--ext", "-i", "--ignore", "-d", "--delay", "--signal",
    "--config", "-C", "--cwd",
];

const SOPS_VALUES: &[&str] = &[
    "--user",
    "--filename",
    "--input-type",
    "--output-type",
    "--config",
];

const PROCFILE_VALUES: &[&str] = &["-e", "--env", "-d", "--root", "-f", "--procfile"];

const FNM_VALUES: &[&str] = &[
    "--using",
    "--log-level",
    "--arch",
    "--node-dist-mirror",
    "--fnm-dir",
    "--version-file-strategy",
];

const OPAM_VALUES: &[&str] = &[
    "--switch",
    "--root",
    "--cli",
    "--color",
    "--json",
    "--debug-level",
];

const STACK_VALUES: &[&str] = &[
    "--package",
    "--rts-options",
    "--cwd",
    "--stack-yaml",
    "--resolver",
    "--snapshot",
    "-j",
    "--jobs",
    "--work-dir",
    "--stack-root",
    "--compiler",
    "--arch",
    "--docker-image",
];

const CABAL_VALUES: &[&str] = &[
    "--project-file",
    "--project-dir",
    "--builddir",
    "-w",
    "--with-compiler",
    "-j",
    "--jobs",
    "--store-dir",
    "--config-file",
    "-v",
    "--verbose",
];

const CARGO_WATCH_VALUES: &[&str] = &[
    "-x",
    "--exec",
    "-s",
    "--shell",
    "-w",
    "--watch",
    "-i",
    "--ignore",
    "-d",
    "--delay",
    "-C",
    "--workdir",
    "--features",
    "-B",
    "--env-file",
    "-E",
    "--env",
    "--use-shell",
    "-L",
    "--rust-log",
];

const AWS_VAULT_VALUES: &[&str] = &[
    "-d",
    "--duration",
    "-t",
    "--mfa-token",
    "--region",
    "--prompt",
    "--backend",
    "--keychain",
    "--pass-dir",
    "--pass-cmd",
    "--pass-prefix",
    "--file-dir",
    "--secret-service-collection",
];

pub(super) const LAUNCHERS: &[Launcher] = &[
    launcher(&["pyenv", "exec"]),
    launcher(&["rbenv", "exec"]),
    launcher(&["nodenv", "exec"]),
    launcher(&["goenv", "exec"]),
    launcher(&["plenv", "exec"]),
    launcher(&["jenv", "exec"]),
    launcher(&["phpenv", "exec"]),
    launcher(&["asdf", "exec"]),
    // `asdf env TOOL [UTIL…]` runs UTIL (`env` when none is given) in TOOL's environment.
    positional(launcher(&["asdf", "env"]), 1),
    // nvm's and n's version is a word of its own (`nvm exec 20 npm test`).
    positional(launcher(&["nvm", "exec"]), 1),
    positional(launcher(&["n", "exec"]), 1),
    values(
        launcher(&["volta", "run"]),
        &["--node", "--npm", "--pnpm", "--yarn", "--env"],
    ),
    values(launcher(&["fnm", "exec"]), FNM_VALUES),
    values(launcher(&["opam", "exec"]), OPAM_VALUES),
    // opam's older spelling.
    values(launcher(&["opam", "config", "exec"]), OPAM_VALUES),
    values(launcher(&["stack", "exec"]), STACK_VALUES),
    values(launcher(&["cabal", "exec"]), CABAL_VALUES),
    values(launcher(&["cabal", "v2-exec"]), CABAL_VALUES),
    values(launcher(&["cabal", "new-exec"]), CABAL_VALUES),
    values(launcher(&["cabal", "v1-exec"]), CABAL_VALUES),
    // `uv tool uvx` is `uvx`.
    values(launcher(&["uv", "tool", "uvx"]), UV_VALUES),
    values(
        launcher(&["devbox", "run"]),
        &[
            "-c",
            "--config",
            "-e",
            "--env",
            "--env-file",
            "--environment",
        ],
    ),
    plus_packages(launcher(&["pkgx"])),
    // `cargo watch -s 'CMD'` and `cargo watch -- CMD` run a command at each change of a file.
    cargo_lines(scripts(
        values(
            after_dashes(launcher(&["cargo", "watch"])),
            CARGO_WATCH_VALUES,
        ),
        &["-s", "--shell"],
    )),
    // The same program called by its own name, with or without the `watch` cargo passes it
    // (before `--`, that word is skipped like any other).
    cargo_lines(scripts(
        values(after_dashes(launcher(&["cargo-watch"])), CARGO_WATCH_VALUES),
        &["-s", "--shell"],
    )),
    // File watchers: watchexec hands its words to a shell; nodemon's `--exec` is a command
    // line.
    shell_words(values(launcher(&["watchexec"]), WATCHEXEC_VALUES)),
    scripts(
        values(launcher(&["nodemon"]), NODEMON_VALUES),
        &["-x", "--exec"],
    ),
    // Environments and secrets handed to a command.
    after_dashes(launcher(&["chruby-exec"])),
    values(
        after_dashes(launcher(&["tox", "exec"])),
        &["-e", "--env", "-c"],
    ),
    values(
        launcher(&["meson", "devenv"]),
        &["-C", "-w", "--workdir", "--dump", "--dump-format"],
    ),
    assignments(values(launcher(&["cmake", "-E", "env"]), &["--unset"])),
    positional(launcher(&["cmake", "-E", "chdir"]), 1),
    launcher(&["cmake", "-E", "time"]),
    values(launcher(&["dotenv"]), &["-e", "-v", "-c", "-p"]),
    values(
        launcher(&["env-cmd"]),
        &["-f", "--file", "-e", "--environments", "-r", "--rc-file"],
    ),
    values(
        launcher(&["summon"]),
        &["-p", "--provider", "-f", "-D", "--yaml", "--up"],
    ),
    after_dashes(launcher(&["teller", "run"])),
    after_dashes(launcher(&["berglas", "exec"])),
    shell_words(values(
        launcher(&["bws", "run"]),
        &[
            "--shell",
            "--project-id",
            "-t",
            "--access-token",
            "--server-url",
            "--profile",
            "-o",
            "--output",
            "-c",
            "--color",
            "-f",
            "--config-file",
            "-p",
            "-u",
        ],
    )),
    values(
        launcher(&["saml2aws", "exec"]),
        &["--exec-profile", "-a", "--idp-account", "-p", "--profile"],
    ),
    values(
        launcher(&["aws-sso", "exec"]),
        &[
            "-p",
            "--profile",
            "-A",
            "--arn",
            "-a",
            "--account",
            "-R",
            "--role",
            "-S",
            "--sso",
        ],
    ),
    // `sops exec-env FILE 'CMD'`: the command is a shell string.
    shell_words(positional(
        values(launcher(&["sops", "exec-env"]), SOPS_VALUES),
        1,
    )),
    shell_words(positional(
        values(launcher(&["sops", "exec-file"]), SOPS_VALUES),
        1,
    )),
    values(launcher(&["foreman", "run"]), PROCFILE_VALUES),
    values(launcher(&["honcho", "run"]), PROCFILE_VALUES),
    // `bun exec 'SCRIPT'` runs it in Bun's shell.
    shell_words(values(launcher(&["bun", "exec"]), &["--cwd"])),
    // `go tool test2json [-p PKG] [-t] CMD…` runs the test command it is given.
    values(launcher(&["go", "tool", "test2json"]), &["-p"]),
    scripts(
        values(after_dashes(launcher(&["mise", "exec"])), MISE_VALUES),
        &["-c", "--command"],
    ),
    scripts(
        values(after_dashes(launcher(&["mise", "x"])), MISE_VALUES),
        &["-c", "--command"],
    ),
    positional(launcher(&["rustup", "run"]), 1),
    values(launcher(&["uv", "run"]), UV_VALUES),
    values(launcher(&["uv", "tool", "run"]), UV_VALUES),
    values(launcher(&["uvx"]), UV_VALUES),
    values(
        launcher(&["pipx", "run"]),
        &["--spec", "--python", "--index-url", "--pip-args"],
    ),
    launcher(&["poetry", "run"]),
    launcher(&["pipenv", "run"]),
    launcher(&["pdm", "run"]),
    launcher(&["rye", "run"]),
    env_prefixed(values(launcher(&["hatch", "run"]), &["-e", "--env"])),
    values(
        launcher(&["hatch", "env", "run"]),
        &[
            "-e",
            "--env",
            "-i",
            "--include",
            "-x",
            "--exclude",
            "-f",
            "--filter",
        ],
    ),
    values(
        launcher(&["pixi", "run"]),
        &["-e", "--environment", "--manifest-path"],
    ),
    values(
        launcher(&["pixi", "exec"]),
        &["-s", "--spec", "-c", "--channel", "-w", "--with"],
    ),
    values(launcher(&["conda", "run"]), CONDA_VALUES),
    values(launcher(&["mamba", "run"]), CONDA_VALUES),
    values(launcher(&["micromamba", "run"]), CONDA_VALUES),
    launcher(&["bundle", "exec"]),
    positional(launcher(&["direnv", "exec"]), 1),
    values(launcher(&["op", "run"]), &["--env-file", "--environment"]),
    scripts(
        values(
            launcher(&["doppler", "run"]),
            &[
                "-p",
                "--project",
                "-c",
                "--config",
                "--fallback",
                "--mount",
                "--token",
                "--command",
            ],
        ),
        &["--command"],
    ),
    positional(
        values(launcher(&["aws-vault", "exec"]), AWS_VAULT_VALUES),
        1,
    ),
    after_dashes(launcher(&["chamber", "exec"])),
    values(
        launcher(&["dotenvx", "run"]),
        &[
            "-f",
            "--env-file",
            "-e",
            "--env",
            "--convention",
            "-fk",
            "--env-keys-file",
        ],
    ),
    scripts(
        values(
            launcher(&["infisical", "run"]),
            &[
                "--command",
                "--env",
                "--path",
                "--projectId",
                "--token",
                "--domain",
                "-t",
            ],
        ),
        &["--command"],
    ),
    positional(launcher(&["envchain"]), 1),
    after_dashes(launcher(&["guix", "shell"])),
    after_dashes(launcher(&["guix", "environment"])),
    scripts(values(launcher(&["npx"]), NPX_VALUES), &["-c", "--call"]),
    scripts(values(launcher(&["pnpx"]), NPX_VALUES), &["-c", "--call"]),
    values(launcher(&["bunx"]), &["-p", "--package"]),
    scripts(
        values(launcher(&["npm", "exec"]), NPX_VALUES),
        &["-c", "--call"],
    ),
    scripts(
        values(launcher(&["npm", "x"]), NPX_VALUES),
        &["-c", "--call"],
    ),
    scripts(
        values(launcher(&["pnpm", "exec"]), NPX_VALUES),
        &["-c", "--call"],
    ),
    scripts(
        values(launcher(&["pnpm", "dlx"]), NPX_VALUES),
        &["-c", "--call"],
    ),
    values(launcher(&["yarn", "exec"]), NPX_VALUES),
    values(launcher(&["yarn", "dlx"]), NPX_VALUES),
    values(launcher(&["bun", "x"]), &["-p", "--package"]),
];
