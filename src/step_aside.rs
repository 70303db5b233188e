//! Blocking work called from async code that cannot await it (a synchronous trait: the store's
//! reads and flush, a tool's propose half that reads a file and diffs it). On a multi-thread
//! runtime's worker, tokio is told (`block_in_place`): the worker's other tasks move to another
//! thread meanwhile, instead of stalling behind the disk. Elsewhere (a current-thread runtime,
//! no runtime) the work simply runs.

/// Runs `work`, stepping aside from the async worker while it blocks.
pub fn step_aside<T>(work: impl FnOnce() -> T) -> T {
    let on_worker = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if on_worker {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}
