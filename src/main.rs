//! The `tollgate` binary: the sandbox helper when asked, else the command line.

use std::process::ExitCode;

/// jemalloc serves Rust's allocations (C code, SQLite's included, keeps glibc's malloc): with
/// glibc's, threads waited on its arena locks in every profile of `serve`, and a repeat message
/// cost about 1.6 times the CPU (docs/benchmarks.md, session 23).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read at the process's first allocation (`_RJEM_MALLOC_CONF` in the
/// environment overrides them one by one): two arenas, not four a core, each keeping pages of
/// its own, and freed pages given back after a second (`dirty_decay_ms`), not ten. With
/// jemalloc's defaults and no purging thread, `serve` held 76.4 MiB with 10,000 idle sessions,
/// against 47–49 with these and the thread. No background thread here: the sandbox helper,
/// this same binary, must be single-threaded to enter its namespaces, so
/// [`start_page_purger`] starts it afterwards (and the variable never reaches a child).
#[unsafe(export_name = "_rjem_malloc_conf")]
static ALLOCATOR_OPTIONS: Option<&std::ffi::c_char> =
    // SAFETY: the pointer is a C string literal's, valid for the program's whole run.
    Some(unsafe { &*c"narenas:2,dirty_decay_ms:1000".as_ptr() });

fn main() -> ExitCode {
    // The sandbox helper runs first, before any thread or runtime exists (it forks).
    let mut args = std::env::args_os();
    if args.nth(1).as_deref() == Some(std::ffi::OsStr::new(tollgate::sandbox::HELPER_ARG)) {
        let rest: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
        tollgate::sandbox::helper::main(&rest);
    }
    start_page_purger();
    // Logging starts once the command line is read (`--log-format`).
    tollgate::cli::main_with_args(std::env::args_os())
}

/// Starts jemalloc's background thread, which gives freed pages back while the process is
/// idle: without it they are given back only as later allocations pass by, and a service
/// gone quiet after a burst would keep what the burst freed. Left to the environment when
/// `_RJEM_MALLOC_CONF` says `background_thread` itself.
fn start_page_purger() {
    if std::env::var(tollgate::sandbox::ALLOCATOR_OPTIONS_ENV)
        .is_ok_and(|options| options.contains("background_thread"))
    {
        return;
    }
    let mut on = true;
    // SAFETY: `background_thread` takes a bool, read from `on`, which outlives the call; no
    // old value is asked for. A failure only leaves pages to be purged as allocations pass.
    let _ = unsafe {
        tikv_jemalloc_sys::mallctl(
            c"background_thread".as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            (&raw mut on).cast(),
            std::mem::size_of::<bool>(),
        )
    };
}
