//! The bit of HTTP/1.1 the fake servers need: read one request (head and `content-length`
//! body), write one response and close.

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

/// Reads one request; `None` when the client went away first.
pub async fn read_request(socket: &mut TcpStream) -> Option<Request> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let (head_end, length) = loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..at]).to_lowercase();
            let length = head
                .lines()
                .find_map(|l| {
                    l.strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                })
                .unwrap_or(0);
            break (at + 4, length);
        }
    };
    while buffer.len() < head_end + length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    Some(Request {
        head: String::from_utf8_lossy(&buffer[..head_end]).into_owned(),
        body: buffer[head_end..].to_vec(),
    })
}

/// Writes a response (`extra_headers` end with `\r\n` each) and closes the connection.
pub async fn respond(
    socket: &mut TcpStream,
    status: u16,
    content_type: &str,
    extra_headers: &str,
    body: &str,
) {
    let head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{extra_headers}connection: close\r\n\r\n",
        body.len()
    );
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket.write_all(body.as_bytes()).await;
    let _ = socket.shutdown().await;
}
