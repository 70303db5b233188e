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
    values(launcher(&["fnm", "exec"]), &["--using"]),
    values(
        launcher(&["opam", "exec"]),
        &["--switch", "--root", "--cli", "--color"],
    ),
    values(
        launcher(&["stack", "exec"]),
        &[
            "--package",
            "--rts-options",
            "--cwd",
            "--stack-yaml",
            "--resolver",
            "--snapshot",
        ],
    ),
    values(
        launcher(&["cabal", "exec"]),
        &["--project-file", "--builddir", "-w", "--with-compiler"],
    ),
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
    scripts(
        values(
            after_dashes(launcher(&["cargo", "watch"])),
            CARGO_WATCH_VALUES,
        ),
        &["-s", "--shell"],
    ),
    // The same program called by its own name (cargo passes it `watch` first).
    scripts(
        values(
            after_dashes(launcher(&["cargo-watch", "watch"])),
            CARGO_WATCH_VALUES,
        ),
        &["-s", "--shell"],
    ),
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
    values(launcher(&["hatch", "run"]), &["-e", "--env"]),
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
