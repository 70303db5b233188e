//! The `tollgate` binary: logging to stderr, then the command line.

use std::process::ExitCode;

fn main() -> ExitCode {
    // The sandbox helper runs first, before any thread or runtime exists (it forks).
    let mut args = std::env::args_os();
    if args.nth(1).as_deref() == Some(std::ffi::OsStr::new(tollgate::sandbox::HELPER_ARG)) {
        let rest: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
        tollgate::sandbox::helper::main(&rest);
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TOLLGATE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    tollgate::cli::main_with_args(std::env::args_os())
}
