//! The bit of HTTP/1.1 the fake servers need: requests with a `content-length` body (or none),
//! answered one at a time on a persistent connection, as real APIs (OpenAI, Telegram, Discord)
//! answer them. A fake that closed every connection would hide a client that never reuses one,
//! and would make every client, floors included, pay a TCP handshake a real deployment does not.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One request: its head (request line and headers, as sent) and its body.
pub struct Request {
    pub head: String,
    pub body: Vec<u8>,
}

impl Request {
    /// The request target (`/v1/chat/completions`).
    pub fn path(&self) -> String {
        self.head
            .split_whitespace()
            .nth(1)
            .unwrap_or("")
            .to_string()
    }
}

/// A listener on a free loopback port with a deep accept queue. tokio's `bind` asks for 128: a
/// client in the same process that fires hundreds of requests at once (a benchmark's floor
/// bot) while its own tasks keep the runtime busy overflows that, and each dropped SYN costs a
/// 1 s retransmit that would be measured as the client's.
pub fn listener() -> tokio::net::TcpListener {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    socket.listen(4096).unwrap()
}

/// Accepts connections until aborted, each served by `serve` on a task of its own; aborting the
/// returned task closes every connection still open, so a client's pooled connection to a
/// fake that was dropped fails as a stopped server's would. `accepted` counts connections.
pub fn accept_all<F, Fut>(
    listener: tokio::net::TcpListener,
    accepted: Arc<AtomicUsize>,
    serve: F,
) -> tokio::task::JoinHandle<()>
where
    F: Fn(Connection) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        let mut open = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                accepted_one = listener.accept() => {
                    let Ok((socket, _)) = accepted_one else {
                        return;
                    };
                    accepted.fetch_add(1, Ordering::SeqCst);
                    open.spawn(serve(Connection::new(socket)));
                }
                Some(_) = open.join_next(), if !open.is_empty() => {}
            }
        }
    })
}

/// One client connection: requests are read from it one after another.
pub struct Connection {
    socket: TcpStream,
    /// Bytes read past the end of the last request.
    unread: Vec<u8>,
    /// Set once an answer closed the connection.
    closed: bool,
}

impl Connection {
    pub fn new(socket: TcpStream) -> Connection {
        Connection {
            socket,
            unread: Vec::new(),
            closed: false,
        }
    }

    /// The next request; `None` when the client went away or an answer closed the connection.
    pub async fn next_request(&mut self) -> Option<Request> {
        if self.closed {
            return None;
        }
        let mut buffer = std::mem::take(&mut self.unread);
        let mut chunk = [0u8; 8192];
        let (head_end, length, closes) = loop {
            if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buffer[..at]).to_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| {
                        l.strip_prefix("content-length:")
                            .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                    })
                    .unwrap_or(0);
                // The client asked for the connection to end after this answer.
                let closes = head
                    .lines()
                    .any(|l| l.replace(' ', "") == "connection:close");
                break (at + 4, length, closes);
            }
            let n = self.socket.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            buffer.extend_from_slice(&chunk[..n]);
        };
        while buffer.len() < head_end + length {
            let n = self.socket.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            buffer.extend_from_slice(&chunk[..n]);
        }
        self.unread = buffer.split_off(head_end + length);
        self.closed = closes;
        Some(Request {
            head: String::from_utf8_lossy(&buffer[..head_end]).into_owned(),
            body: buffer[head_end..].to_vec(),
        })
    }

    /// Writes a response (`extra_headers` end with `\r\n` each); the connection stays open for
    /// the next request unless the client asked to close it.
    pub async fn respond(
        &mut self,
        status: u16,
        content_type: &str,
        extra_headers: &str,
        body: &[u8],
    ) {
        let closing = if self.closed {
            "connection: close\r\n"
        } else {
            ""
        };
        let head = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{extra_headers}{closing}\r\n",
            body.len()
        );
        let mut whole = head.into_bytes();
        whole.extend_from_slice(body);
        if self.socket.write_all(&whole).await.is_err() {
            self.closed = true;
        }
        if self.closed {
            let _ = self.socket.shutdown().await;
        }
    }

    /// The socket itself, for an answer written by hand (one held half-way, say) that ends
    /// the connection.
    pub fn into_socket(self) -> TcpStream {
        self.socket
    }
}
