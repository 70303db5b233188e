//! Writing a downloaded file into the runtime's sink with a cap: every bridge's `fetch` ends
//! the same way, whatever its client streams.

use crate::bridge::FetchSink;
use crate::error::{BridgeError, BridgeErrorKind};
use futures_util::{Stream, StreamExt};
use tokio::io::AsyncWriteExt;

/// Writes `chunks` into `out`, refusing more than `cap` bytes as they arrive (a size the
/// platform reported is checked before, by the caller); the bytes written. A failed chunk is
/// transient (`what` names the download in the message), a failed write or the cap rejected.
pub async fn write_capped<B, E>(
    mut chunks: impl Stream<Item = Result<B, E>> + Unpin,
    out: &mut FetchSink,
    cap: u64,
    what: &str,
) -> Result<u64, BridgeError>
where
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    let fail = BridgeError::rejected;
    let mut received: u64 = 0;
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk
            .map_err(|e| BridgeError::new(BridgeErrorKind::Transient, format!("{what}: {e}")))?;
        let chunk = chunk.as_ref();
        received += chunk.len() as u64;
        if received > cap {
            return Err(fail(format!("the file is over the limit of {cap} bytes")));
        }
        out.write_all(chunk)
            .await
            .map_err(|e| fail(format!("writing the file: {e}")))?;
    }
    out.flush()
        .await
        .map_err(|e| fail(format!("writing the file: {e}")))?;
    Ok(received)
}
