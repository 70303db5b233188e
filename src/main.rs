//! The `tollgate` binary: the sandbox helper when asked, else the command line.

use std::process::ExitCode;

fn main() -> ExitCode {
    // The sandbox helper runs first, before any thread or runtime exists (it forks).
    let mut args = std::env::args_os();
    if args.nth(1).as_deref() == Some(std::ffi::OsStr::new(tollgate::sandbox::HELPER_ARG)) {
        let rest: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
        tollgate::sandbox::helper::main(&rest);
    }
    // Logging starts once the command line is read (`--log-format`).
    tollgate::cli::main_with_args(std::env::args_os())
}
