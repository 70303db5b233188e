//! A cancellation signal shared by everything a run started (`/stop`).

use tokio::sync::watch;

/// The sending half: `cancel()` reaches every clone of its tokens.
#[derive(Debug)]
pub struct Canceller(watch::Sender<bool>);

/// The receiving half, cloned into each call.
#[derive(Clone, Debug)]
pub struct CancelToken(watch::Receiver<bool>);

/// A new signal.
#[must_use]
pub fn cancellation() -> (Canceller, CancelToken) {
    let (tx, rx) = watch::channel(false);
    (Canceller(tx), CancelToken(rx))
}

impl Canceller {
    pub fn cancel(&self) {
        let _ = self.0.send(true);
    }
}

impl CancelToken {
    /// A token that is never cancelled.
    #[must_use]
    pub fn never() -> Self {
        let (tx, rx) = watch::channel(false);
        // Keep the sender alive forever so `changed()` never resolves as closed.
        std::mem::forget(tx);
        CancelToken(rx)
    }

    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        *self.0.borrow()
    }

    /// Completes when cancelled.
    pub async fn cancelled(mut self) {
        loop {
            if *self.0.borrow_and_update() {
                return;
            }
            if self.0.changed().await.is_err() {
                // The canceller is gone without cancelling: never completes.
                std::future::pending::<()>().await;
            }
        }
    }
}
