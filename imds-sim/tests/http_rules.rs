//! The simulator's IMDSv2 rules over real HTTP (raw HTTP/1.1 on a socket, no client library).

use adze_imds_sim::{FaultKind, FaultRequest, Sim};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn request(addr: std::net::SocketAddr, head: &str) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(
        format!("{head}\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    let code = out[9..12].parse().unwrap();
    let body = out.split("\r\n\r\n").nth(1).unwrap_or_default().to_string();
    (code, body)
}

#[tokio::test]
async fn token_ttl_bounds_and_token_requirement_are_enforced() {
    let sim = Sim::new("i-abc");
    let (addr, _t) = sim.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    for bad in ["0", "21601", "x"] {
        let (code, _) = request(
            addr,
            &format!(
                "PUT /latest/api/token HTTP/1.1\r\nX-aws-ec2-metadata-token-ttl-seconds: {bad}"
            ),
        )
        .await;
        assert_eq!(code, 400, "ttl {bad}");
    }
    let (code, _) = request(addr, "PUT /latest/api/token HTTP/1.1").await;
    assert_eq!(code, 400, "ttl header missing");
    let (code, token) = request(
        addr,
        "PUT /latest/api/token HTTP/1.1\r\nX-aws-ec2-metadata-token-ttl-seconds: 21600",
    )
    .await;
    assert_eq!(code, 200);
    let (code, _) = request(addr, "GET /latest/meta-data/instance-id HTTP/1.1").await;
    assert_eq!(code, 401, "no token");
    let get = |path: &str| format!("GET {path} HTTP/1.1\r\nX-aws-ec2-metadata-token: {token}");
    assert_eq!(
        request(addr, &get("/latest/meta-data/instance-id")).await,
        (200, "i-abc".into())
    );
    assert_eq!(
        request(addr, &get("/latest/meta-data/spot/instance-action"))
            .await
            .0,
        404
    );
    assert_eq!(
        request(addr, &get("/latest/meta-data/events/maintenance/scheduled")).await,
        (200, "[]".into())
    );
    sim.fault(&FaultRequest {
        kind: FaultKind::Unavailable,
        seconds: 5.0,
        delay_ms: 0,
    });
    assert_eq!(
        request(addr, &get("/latest/meta-data/instance-id")).await.0,
        503
    );
    let (code, _) = request(addr, "POST /_sim/clear HTTP/1.1").await;
    assert_eq!(
        code, 200,
        "admin API needs no token and works during faults"
    );
    assert_eq!(
        request(addr, &get("/latest/meta-data/instance-id")).await.0,
        200
    );
}
