//! HTTPS: the extender serves its verbs over rustls with a configured certificate, and a
//! client that trusts only that certificate completes the handshake and gets an answer; with
//! a client CA the verbs need a client certificate it signed.

use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};

use adze_extender::ledger::Ledger;
use adze_extender::server::{
    AppState, Binder, Config, Limits, install_crypto_provider, router, serve_https,
};
use adze_extender::types::ExtenderBindingArgs;
use axum_server::tls_rustls::RustlsConfig;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;

struct NoBinder;

impl Binder for NoBinder {
    fn bind<'a>(
        &'a self,
        _: &'a ExtenderBindingArgs,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(async { Ok(()) })
    }
}

/// A ready extender state with an empty ledger.
fn state(config: Config) -> AppState {
    let state = AppState::new(
        Arc::new(RwLock::new(Ledger::new())),
        Arc::new(NoBinder),
        config,
    );
    state.ready.store(true, Ordering::Relaxed);
    state
}

/// Serves a ready extender with `config` over `tls` on a free port until the test ends.
fn serve(config: Config, tls: RustlsConfig) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_https(
        listener,
        router(state(config)),
        tls,
        Limits::default(),
        std::future::pending(),
    ));
    addr
}

/// A self-signed certificate for "localhost" and a server configuration serving it.
async fn self_signed() -> (rcgen::CertifiedKey<rcgen::KeyPair>, RustlsConfig) {
    install_crypto_provider();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let tls = RustlsConfig::from_pem(
        cert.cert.pem().into_bytes(),
        cert.signing_key.serialize_pem().into_bytes(),
    )
    .await
    .unwrap();
    (cert, tls)
}

async fn https_server() -> (
    std::net::SocketAddr,
    rustls::pki_types::CertificateDer<'static>,
) {
    let (cert, tls) = self_signed().await;
    (serve(Config::default(), tls), cert.cert.der().clone())
}

fn client_config(
    trusted: Option<rustls::pki_types::CertificateDer<'static>>,
) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(c) = trusted {
        roots.add(c).unwrap();
    }
    rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth()
}

async fn tls_connect(
    addr: std::net::SocketAddr,
    config: rustls::ClientConfig,
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
}

#[tokio::test]
async fn filter_over_https_with_a_verified_self_signed_certificate() {
    let (addr, cert) = https_server().await;
    let tls = tls_connect(addr, client_config(Some(cert)))
        .await
        .expect("handshake");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let body = serde_json::json!({
        "Pod": {"metadata": {"name": "p", "namespace": "default", "uid": "u"},
                "spec": {"containers": [{"name": "c"}]}},
        "NodeNames": ["n1", "n2"]
    })
    .to_string();
    let req = Request::post("/filter")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Full::new(bytes::Bytes::from(body)))
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["NodeNames"], serde_json::json!(["n1", "n2"]));
    assert_eq!(v["Error"], "");
}

#[tokio::test]
async fn client_that_does_not_trust_the_certificate_is_refused() {
    let (addr, _) = https_server().await;
    let err = tls_connect(addr, client_config(None))
        .await
        .expect_err("an unknown issuer must fail verification");
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "{err}"
    );
}

/// The shutdown future (SIGTERM in the binary) ends the HTTPS server: it stops accepting and
/// returns once requests in progress are done, instead of waiting for SIGKILL.
#[tokio::test]
async fn https_server_returns_once_shutdown_completes() {
    let (cert, tls) = self_signed().await;
    let state = state(Config::default());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_https(
        listener,
        router(state),
        tls,
        Limits::default(),
        async move {
            let _ = stopped.await;
        },
    ));
    assert!(
        tls_connect(addr, client_config(Some(cert.cert.der().clone())))
            .await
            .is_ok()
    );
    stop.send(()).unwrap();
    let done = tokio::time::timeout(std::time::Duration::from_secs(15), server).await;
    assert!(matches!(done, Ok(Ok(Ok(())))), "{done:?}");
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "still accepting after shutdown"
    );
}

/// A renewed certificate written over the files is served without a restart.
#[tokio::test]
async fn a_renewed_certificate_is_served_without_a_restart() {
    install_crypto_provider();
    let dir = std::env::temp_dir().join(format!("adze-tls-reload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert_path, key_path) = (dir.join("tls.crt"), dir.join("tls.key"));
    let write = |c: &rcgen::CertifiedKey<rcgen::KeyPair>| {
        std::fs::write(&cert_path, c.cert.pem()).unwrap();
        std::fs::write(&key_path, c.signing_key.serialize_pem()).unwrap();
    };
    let old = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    write(&old);
    let tls = RustlsConfig::from_pem_file(&cert_path, &key_path)
        .await
        .unwrap();
    let addr = serve(Config::default(), tls.clone());
    tokio::spawn(adze_extender::server::reload_certificate(
        tls,
        cert_path.clone(),
        key_path.clone(),
        None,
        std::time::Duration::from_millis(50),
    ));
    assert!(
        tls_connect(addr, client_config(Some(old.cert.der().clone())))
            .await
            .is_ok()
    );
    // A different mtime even on a coarse-grained file system.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let new = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    write(&new);
    let mut served_new = false;
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        if tls_connect(addr, client_config(Some(new.cert.der().clone())))
            .await
            .is_ok()
        {
            served_new = true;
            break;
        }
    }
    assert!(served_new, "the renewed certificate was never served");
    assert!(
        tls_connect(addr, client_config(Some(old.cert.der().clone())))
            .await
            .is_err(),
        "the old certificate is still served"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- client certificates -----------------------------------------------------------------

fn new_ca(name: &str) -> rcgen::CertifiedIssuer<'static, rcgen::KeyPair> {
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    p.distinguished_name.push(rcgen::DnType::CommonName, name);
    rcgen::CertifiedIssuer::self_signed(p, rcgen::KeyPair::generate().unwrap()).unwrap()
}

fn leaf(
    names: &[&str],
    issuer: &rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
) -> (rcgen::Certificate, rcgen::KeyPair) {
    let key = rcgen::KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let cert = rcgen::CertificateParams::new(names)
        .unwrap()
        .signed_by(&key, &**issuer)
        .unwrap();
    (cert, key)
}

fn with_client_cert(
    server_ca: &rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
    client: Option<&(rcgen::Certificate, rcgen::KeyPair)>,
) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(server_ca.der().clone()).unwrap();
    let b = rustls::ClientConfig::builder().with_root_certificates(roots);
    match client {
        None => b.with_no_client_auth(),
        Some((cert, key)) => b
            .with_client_auth_cert(
                vec![cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .unwrap(),
    }
}

/// One request on a fresh connection: the status, or the error (handshake or transport).
async fn status_of(
    addr: std::net::SocketAddr,
    config: rustls::ClientConfig,
    method: &str,
    path: &str,
    body: &str,
) -> Result<u16, String> {
    let tls = tls_connect(addr, config).await.map_err(|e| e.to_string())?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Full::new(bytes::Bytes::from(body.to_string())))
        .unwrap();
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    Ok(resp.status().as_u16())
}

/// kube-scheduler with `tlsConfig.certFile`/`keyFile` from the client CA gets answers; a
/// client with no certificate gets 401 on every verb (so no one else can `/bind`) but still
/// reaches the probes; a certificate from another CA fails the handshake.
#[tokio::test]
async fn with_a_client_ca_the_verbs_need_a_client_certificate_it_signed() {
    install_crypto_provider();
    let dir = std::env::temp_dir().join(format!("adze-tls-mtls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = new_ca("adze-extender-ca");
    let (server_cert, server_key) = leaf(&["localhost"], &ca);
    std::fs::write(dir.join("tls.crt"), server_cert.pem()).unwrap();
    std::fs::write(dir.join("tls.key"), server_key.serialize_pem()).unwrap();
    std::fs::write(dir.join("ca.crt"), ca.pem()).unwrap();
    let config = adze_extender::server::tls_server_config(
        &dir.join("tls.crt"),
        &dir.join("tls.key"),
        Some(&dir.join("ca.crt")),
    )
    .unwrap();
    let addr = serve(
        Config {
            require_client_cert: true,
            ..Config::default()
        },
        RustlsConfig::from_config(config),
    );
    let bind = r#"{"PodName": "p", "PodNamespace": "default", "PodUID": "u", "Node": "n1"}"#;
    let filter = r#"{"Pod": {"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": [{"name": "c"}]}}, "NodeNames": ["n1"]}"#;

    let scheduler = leaf(&["adze-scheduler"], &ca);
    let ok = with_client_cert(&ca, Some(&scheduler));
    assert_eq!(
        status_of(addr, ok.clone(), "POST", "/filter", filter).await,
        Ok(200)
    );
    assert_eq!(status_of(addr, ok, "POST", "/bind", bind).await, Ok(200));

    let anonymous = with_client_cert(&ca, None);
    for path in ["/bind", "/filter", "/prioritize", "/preempt"] {
        assert_eq!(
            status_of(addr, anonymous.clone(), "POST", path, bind).await,
            Ok(401),
            "{path} without a client certificate"
        );
    }
    assert_eq!(
        status_of(addr, anonymous.clone(), "GET", "/healthz", "").await,
        Ok(200)
    );
    assert_eq!(
        status_of(addr, anonymous, "GET", "/readyz", "").await,
        Ok(200)
    );

    let other = new_ca("someone-else");
    let stranger = with_client_cert(&ca, Some(&leaf(&["adze-scheduler"], &other)));
    let r = status_of(addr, stranger, "POST", "/bind", bind).await;
    assert!(r.is_err(), "a certificate from another CA got {r:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The limits hold over TLS too: a connection that completes the handshake and sends
/// nothing is closed after the header timeout, and one that never starts the handshake
/// likewise.
#[tokio::test]
async fn silent_tls_connections_are_closed_after_the_header_timeout() {
    use tokio::io::AsyncReadExt;
    let (cert, tls) = self_signed().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let limits = Limits {
        header_read: std::time::Duration::from_millis(500),
        ..Limits::default()
    };
    tokio::spawn(serve_https(
        listener,
        router(state(Config::default())),
        tls,
        limits,
        std::future::pending(),
    ));
    let start = std::time::Instant::now();
    let mut after_handshake = tls_connect(addr, client_config(Some(cert.cert.der().clone())))
        .await
        .unwrap();
    let mut no_handshake = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut buf = [0u8; 64];
    let closed = tokio::time::timeout(
        std::time::Duration::from_secs(3),
        after_handshake.read(&mut buf),
    )
    .await
    .expect("closed within the header timeout");
    assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
    let closed = tokio::time::timeout(
        std::time::Duration::from_secs(3),
        no_handshake.read(&mut buf),
    )
    .await
    .expect("closed within the header timeout");
    assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
    assert!(start.elapsed() >= limits.header_read);
}
