//! Where tools do their blocking work (file tools, session state, reading media, turning a page
//! into text): the runtime's blocking threads, at most [`TOOL_THREADS`] of them at once.

use tokio::sync::Semaphore;

/// Blocking threads tools may hold at once. `serve` has eight, and its store calls step aside
/// onto them (`block_in_place` hands the async worker's core to one). Work a tool started on
/// one cannot be taken back: its timeout and `/stop` only stop waiting for it. A turn's ten
/// parallel calls, each a long `grep`, would otherwise hold all eight, and every chat's store
/// calls would wait behind them.
pub const TOOL_THREADS: usize = 4;

static PERMITS: Semaphore = Semaphore::const_new(TOOL_THREADS);

/// Runs `work` on a blocking thread once one of the tools' permits is free; the permit is held
/// until `work` ends, even if the caller stopped waiting. The error says why it did not finish.
pub async fn run_blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let permit = PERMITS
        .acquire()
        .await
        .map_err(|e| format!("the tool could not start: {e}"))?;
    tokio::task::spawn_blocking(move || {
        let _held = permit;
        work()
    })
    .await
    .map_err(|e| format!("the tool failed: {e}"))
}
