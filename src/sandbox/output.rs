//! Bounded output: the first [`OUTPUT_CAP`] bytes of a stream are kept, the rest is read and
//! counted (so the child never blocks on a full pipe) and replaced by a marker.

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

/// Bytes kept of stdout, and of stderr.
pub const OUTPUT_CAP: usize = 256 * 1024;

/// A stream's kept bytes and how much was dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CappedOutput {
    pub bytes: Vec<u8>,
    pub dropped: u64,
    /// Reading stopped before the stream's end: a process still held it open.
    pub left_open: bool,
}

impl CappedOutput {
    #[must_use]
    pub fn truncated(&self) -> bool {
        self.dropped > 0
    }

    /// The kept bytes as text (invalid UTF-8 replaced), with the truncation marker.
    #[must_use]
    pub fn text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.bytes).into_owned();
        if self.truncated() {
            text.push_str(&format!("\n[… {} more bytes truncated]", self.dropped));
        }
        text
    }
}

/// Reads a stream to its end, or until `stop` (then what was read so far, marked
/// `left_open`), keeping at most `cap` bytes.
pub async fn read_capped<R: AsyncRead + Unpin>(
    mut reader: R,
    cap: usize,
    stop: CancellationToken,
) -> CappedOutput {
    let mut out = CappedOutput::default();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = tokio::select! {
            biased;
            read = reader.read(&mut buffer) => read,
            () = stop.cancelled() => {
                out.left_open = true;
                return out;
            }
        };
        match read {
            Ok(0) | Err(_) => return out,
            Ok(n) => {
                let room = cap.saturating_sub(out.bytes.len());
                let keep = n.min(room);
                out.bytes.extend_from_slice(&buffer[..keep]);
                out.dropped += (n - keep) as u64;
            }
        }
    }
}
