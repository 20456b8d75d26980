//! The agent's HTTP clients other than kube's (IMDS, kubelet's healthz) name it and its
//! version in User-Agent, as its Kubernetes client does.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use adze_agent::health::{Checker, HealthConfig};
use adze_agent::imds::{Imds, ImdsConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A server answering every request 200 with a short body, keeping each request's head.
async fn recorder() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let kept = heads.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut conn, _)) = listener.accept().await else {
                return;
            };
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                loop {
                    let Ok(n) = conn.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..end]).to_string();
                        buf.drain(..end + 4);
                        kept.lock().unwrap().push(head);
                        let reply = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                        if conn.write_all(reply).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    (format!("http://{addr}"), heads)
}

fn user_agents(heads: &[String]) -> Vec<String> {
    heads
        .iter()
        .map(|h| {
            h.lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("user-agent")
                        .then(|| v.trim().to_string())
                })
                .unwrap_or_default()
        })
        .collect()
}

#[tokio::test]
async fn imds_and_kubelet_requests_name_the_agent_and_its_version() {
    let want = format!("adze-agent/{}", env!("CARGO_PKG_VERSION"));

    let (url, heads) = recorder().await;
    let imds = Imds::new(ImdsConfig {
        endpoint: url,
        token_ttl: Duration::from_secs(60),
        timeout: Duration::from_secs(2),
    })
    .unwrap();
    imds.get("/latest/meta-data/instance-id").await.unwrap();
    let seen = user_agents(&heads.lock().unwrap());
    assert_eq!(seen.len(), 2, "a token PUT and the GET: {seen:?}");
    assert!(seen.iter().all(|ua| *ua == want), "{seen:?}");

    let (url, heads) = recorder().await;
    let mut checker = Checker::new(HealthConfig {
        kubelet_healthz: Some(format!("{url}/healthz")),
        runtime_socket: None,
        min_available_memory: 0,
        min_available_disk: 0,
        disk_path: "/".into(),
        timeout: Duration::from_secs(2),
    });
    let facts = checker.gather(true).await;
    assert_eq!(facts.kubelet_ok, Some(true));
    assert_eq!(user_agents(&heads.lock().unwrap()), [want]);
}
