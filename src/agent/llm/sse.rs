//! Server-sent events, as both providers stream them: the `data:` payloads, one at a time.
//! Lines are split on bytes, so a character cut between two network chunks stays whole.

use super::LlmError;

/// The longest line a stream may send (a payload is one JSON line): a server that never sends
/// a newline must not grow the buffer without end.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// The `data:` payloads of a streamed response.
pub struct SseData {
    response: reqwest::Response,
    pending: Vec<u8>,
    /// How much of `pending` is known to hold no newline (each chunk is scanned once).
    scanned: usize,
    ended: bool,
}

impl SseData {
    #[must_use]
    pub fn new(response: reqwest::Response) -> Self {
        SseData {
            response,
            pending: Vec::new(),
            scanned: 0,
            ended: false,
        }
    }

    /// The next payload, trimmed; `None` at the end of the stream.
    pub async fn next(&mut self) -> Result<Option<String>, LlmError> {
        loop {
            if let Some(at) = self.pending[self.scanned..]
                .iter()
                .position(|b| *b == b'\n')
            {
                let newline = self.scanned + at;
                self.scanned = 0;
                let line: Vec<u8> = self.pending.drain(..=newline).collect();
                let line = String::from_utf8_lossy(&line);
                if let Some(data) = line.trim().strip_prefix("data:") {
                    return Ok(Some(data.trim().to_string()));
                }
                continue;
            }
            self.scanned = self.pending.len();
            if self.pending.len() > MAX_LINE_BYTES {
                return Err(LlmError {
                    message: format!(
                        "the model's reply stream sent a line over {} MiB",
                        MAX_LINE_BYTES / (1024 * 1024)
                    ),
                });
            }
            if self.ended {
                if self.pending.is_empty() {
                    return Ok(None);
                }
                // A last line without its newline still counts.
                self.pending.push(b'\n');
                continue;
            }
            match self.response.chunk().await {
                Ok(Some(chunk)) => self.pending.extend_from_slice(&chunk),
                Ok(None) => self.ended = true,
                Err(e) => {
                    return Err(LlmError {
                        message: format!("the model's reply stream broke off: {e}"),
                    });
                }
            }
        }
    }
}
