//! The served HTTP surface under hostile clients: bodies over the cap on every route (the
//! webhook included), bodies declared and never sent, connections that send nothing, and
//! more connections than the cap. Run over real TCP against `serve_http`, with short limits.

use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use adze_extender::ledger::Ledger;
use adze_extender::server::{AppState, Binder, Config, Limits, MAX_BODY_BYTES, router, serve_http};
use adze_extender::types::ExtenderBindingArgs;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct NoBinder;

impl Binder for NoBinder {
    fn bind<'a>(
        &'a self,
        _: &'a ExtenderBindingArgs,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(async { Ok(()) })
    }
}

const SHORT: Limits = Limits {
    header_read: Duration::from_millis(600),
    body: Duration::from_millis(600),
    max_connections: 100,
};

/// The extender as `main` assembles it (verbs plus the webhook) behind `serve_http`.
async fn serve(limits: Limits) -> std::net::SocketAddr {
    let state = AppState::new(
        Arc::new(RwLock::new(Ledger::new())),
        Arc::new(NoBinder),
        Config::default(),
    );
    state.ready.store(true, Ordering::Relaxed);
    let app = router(state).merge(adze_extender::webhook::router("adze-scheduler".into()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_http(listener, app, limits, std::future::pending()));
    addr
}

/// Everything the server sends until it closes or `within` passes; `None` if it neither
/// answered nor closed in time.
async fn read_until_close(s: &mut TcpStream, within: Duration) -> Option<String> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(String::from_utf8_lossy(&out).into_owned()),
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// Sends `head` then `body` (write errors ignored: the server may close first) and returns
/// the status line of the answer.
async fn status_of(addr: std::net::SocketAddr, head: String, body: Vec<u8>) -> String {
    let s = TcpStream::connect(addr).await.unwrap();
    let (mut rd, mut wr) = s.into_split();
    let writer = tokio::spawn(async move {
        let _ = wr.write_all(head.as_bytes()).await;
        let _ = wr.write_all(&body).await;
        wr
    });
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while !out.windows(2).any(|w| w == b"\r\n") {
        match tokio::time::timeout(Duration::from_secs(10), rd.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => out.extend_from_slice(&buf[..n]),
            other => panic!(
                "no answer: {other:?} after {:?}",
                String::from_utf8_lossy(&out)
            ),
        }
    }
    writer.abort();
    let text = String::from_utf8_lossy(&out);
    text.lines().next().unwrap_or_default().to_string()
}

const ROUTES: [(&str, &str); 7] = [
    ("POST", "/filter"),
    ("POST", "/prioritize"),
    ("POST", "/bind"),
    ("POST", "/preempt"),
    ("POST", "/mutate"),
    ("GET", "/healthz"),
    ("GET", "/metrics"),
];

#[tokio::test]
async fn a_9_mib_body_is_refused_with_413_on_every_route() {
    let addr = serve(SHORT).await;
    let body = vec![b' '; 9 << 20];
    for (method, path) in ROUTES {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let status = status_of(addr, head, body.clone()).await;
        assert_eq!(status, "HTTP/1.1 413 Payload Too Large", "{method} {path}");
    }
}

/// Without a Content-Length the cap holds on what is actually read.
#[tokio::test]
async fn a_9_mib_chunked_body_is_refused_with_413_on_every_route() {
    let addr = serve(SHORT).await;
    let mut body = Vec::new();
    let chunk = vec![b' '; 1 << 20];
    for _ in 0..9 {
        body.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        body.extend_from_slice(&chunk);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"0\r\n\r\n");
    for (method, path) in ROUTES {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        );
        let status = status_of(addr, head, body.clone()).await;
        assert_eq!(status, "HTTP/1.1 413 Payload Too Large", "{method} {path}");
    }
}

/// A body just under the cap still reaches the handler (whose answer is its own error about
/// the JSON, not a limit).
#[tokio::test]
async fn a_body_under_the_cap_reaches_every_handler() {
    let addr = serve(SHORT).await;
    let body = vec![b' '; MAX_BODY_BYTES - 1];
    for (method, path) in ROUTES {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let status = status_of(addr, head, body.clone()).await;
        assert!(
            status == "HTTP/1.1 200 OK" || status == "HTTP/1.1 400 Bad Request",
            "{method} {path}: {status}"
        );
    }
}

/// A declared 1 GiB body is refused at once, unread; a declared body under the cap of which
/// only 7 bytes come gets 408 within the body timeout and the connection is closed.
#[tokio::test]
async fn bodies_declared_and_never_sent_are_not_waited_for() {
    let addr = serve(SHORT).await;
    for (declared, want) in [
        (1u64 << 30, "HTTP/1.1 413 Payload Too Large"),
        (1000, "HTTP/1.1 408 Request Timeout"),
    ] {
        for path in ["/bind", "/mutate"] {
            let mut s = TcpStream::connect(addr).await.unwrap();
            let start = Instant::now();
            s.write_all(
                format!("POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {declared}\r\n\r\n{{\"Pod\":")
                    .as_bytes(),
            )
            .await
            .unwrap();
            let answer = read_until_close(&mut s, SHORT.body + Duration::from_secs(2))
                .await
                .unwrap_or_else(|| panic!("{path} {declared}: still open after the body timeout"));
            assert!(answer.starts_with(want), "{path} {declared}: {answer}");
            assert!(start.elapsed() < SHORT.body + Duration::from_secs(2));
        }
    }
}

/// 50 connections that send nothing are closed after the header timeout, while a new
/// connection's /healthz is answered at once; a half-sent header and an idle kept-alive
/// connection are closed the same way.
#[tokio::test]
async fn silent_connections_are_closed_after_the_header_timeout() {
    // Long enough that /healthz is surely answered before any of the 50 time out.
    let limits = Limits {
        header_read: Duration::from_secs(2),
        ..SHORT
    };
    let addr = serve(limits).await;
    let start = Instant::now();
    let mut silent = Vec::new();
    for _ in 0..50 {
        silent.push(TcpStream::connect(addr).await.unwrap());
    }
    let mut partial = TcpStream::connect(addr).await.unwrap();
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let mut idle = TcpStream::connect(addr).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();

    let t = Instant::now();
    let status = status_of(
        addr,
        "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".into(),
        Vec::new(),
    )
    .await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    assert!(
        start.elapsed() < limits.header_read,
        "answered while the 50 were still open"
    );

    let limit = limits.header_read + Duration::from_secs(2);
    for (i, s) in silent.iter_mut().enumerate() {
        let left = limit.saturating_sub(start.elapsed());
        let got = read_until_close(s, left).await;
        assert_eq!(got.as_deref(), Some(""), "silent connection {i} still open");
    }
    let got = read_until_close(&mut partial, limit).await;
    assert!(got.is_some(), "a half-sent header is not waited for");
    let got = read_until_close(&mut idle, limit)
        .await
        .expect("idle connection closed");
    assert!(got.starts_with("HTTP/1.1 200 OK"), "{got}");
    assert!(
        start.elapsed() >= limits.header_read,
        "not closed before the timeout"
    );
}

/// Beyond the cap a new connection is closed at once; once others close, new ones are served.
#[tokio::test]
async fn connections_beyond_the_cap_are_closed() {
    let addr = serve(Limits {
        header_read: Duration::from_secs(30),
        max_connections: 3,
        ..SHORT
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut extra = TcpStream::connect(addr).await.unwrap();
    let got = read_until_close(&mut extra, Duration::from_secs(2)).await;
    assert_eq!(got.as_deref(), Some(""), "closed without an answer");
    drop(held);
    // The server frees the slots once it sees the three close; allow it a moment.
    let mut answered = false;
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let got = read_until_close(&mut s, Duration::from_secs(2)).await;
        if got.is_some_and(|g| g.starts_with("HTTP/1.1 200 OK")) {
            answered = true;
            break;
        }
    }
    assert!(answered, "served again once the held connections closed");
}
