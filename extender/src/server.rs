//! The HTTP side: kube-scheduler's extender verbs over the [`Ledger`], plus health and
//! metrics.
//!
//! Every verb answers `200` with the protocol's own `Error` field when something is wrong
//! with the request (malformed JSON, no pod, a pod that does not convert), so a bad request
//! is one clear message in kube-scheduler's log rather than a retry storm of 4xx/5xx. Only
//! `bind` calls the API server, through a [`Binder`]; the other verbs read the ledger alone.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use adze_scheduling::Resources;
use adze_scheduling::preemption::{self, Decision, Policy, PoolView};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use k8s_openapi::api::core::v1::{Container, Node, Pod, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use serde::{Deserialize, Serialize};

use crate::ledger::{Assumed, Candidate, FilterOutcome, Ledger, PodInfo};
use crate::signal::{Signal, Unschedulable};
use crate::types::{
    ExtenderArgs, ExtenderBindingArgs, ExtenderBindingResult, ExtenderFilterResult,
    ExtenderPreemptionArgs, ExtenderPreemptionResult, MetaPod, MetaVictims, NodeList,
};

/// Largest request body read. With `nodeCacheCapable: true` (every shipped configuration) a
/// request carries the pod (etcd caps an object at 1.5 MiB) and node *names* (5,000 names of
/// at most 253 bytes: 1.3 MiB), so 8 MiB is generous; a bigger body is refused with 413
/// before it is buffered. Without `nodeCacheCapable` a full `NodeList` of more than ~1,000
/// nodes would not fit: keep it on.
pub const MAX_BODY_BYTES: usize = 8 << 20;

/// Creates the `pods/binding` for a pod. The real one lives in [`crate::cluster`]; tests use
/// a fake.
pub trait Binder: Send + Sync + 'static {
    fn bind<'a>(
        &'a self,
        args: &'a ExtenderBindingArgs,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;
}

/// Behaviour switches.
#[derive(Debug, Clone)]
pub struct Config {
    /// When `preempt` answers "no candidates" (see [`adze_scheduling::preemption`]).
    pub preemption: Policy,
    /// The verbs need a verified client certificate (`--client-ca`): without it anyone who
    /// reaches the port could bind any pending pod to any node.
    pub require_client_cert: bool,
}

/// How long a pod a NodePool could serve is kept from preempting by default: longer than a
/// node takes to boot and register, short enough that a pod Adze wrongly thought it could
/// serve (no instance type holds it) is not kept from preemption for long.
pub const DEFAULT_PREEMPTION_HOLD_LIMIT: Duration = Duration::from_secs(300);

impl Default for Config {
    fn default() -> Self {
        Config {
            preemption: Policy::Hold {
                limit: Some(DEFAULT_PREEMPTION_HOLD_LIMIT),
            },
            require_client_cert: false,
        }
    }
}

/// The NodePools by name, as the preemption hold reads them.
pub type Pools = Arc<RwLock<BTreeMap<String, PoolView>>>;

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    pub ledger: Arc<RwLock<Ledger>>,
    pub binder: Arc<dyn Binder>,
    pub metrics: Arc<Metrics>,
    /// Set once every watch has listed its objects.
    pub ready: Arc<AtomicBool>,
    /// Whether this replica holds the extender's leader Lease (always, without leader
    /// election). Only the leader reports ready, so kube-scheduler's Service sends every
    /// verb to one replica and one ledger: what a bind assumed is seen by the next filter.
    pub leading: Arc<AtomicBool>,
    pub config: Config,
    /// Kept current by the NodePool watch.
    pub pools: Pools,
    /// Where pods that fail on every candidate node are reported; `None` reports nothing.
    pub unschedulable: Option<Signal>,
}

impl AppState {
    pub fn new(ledger: Arc<RwLock<Ledger>>, binder: Arc<dyn Binder>, config: Config) -> Self {
        AppState {
            ledger,
            binder,
            metrics: Arc::new(Metrics::default()),
            ready: Arc::new(AtomicBool::new(false)),
            leading: Arc::new(AtomicBool::new(true)),
            config,
            pools: Arc::default(),
            unschedulable: None,
        }
    }

    /// Reports pods that fail on every candidate node to `signal`.
    pub fn with_signal(mut self, signal: Signal) -> Self {
        self.unschedulable = Some(signal);
        self
    }

    /// A filter answer that passed no node: tell the provisioner (off the request path).
    fn failed_everywhere(&self, pod: &PodInfo, candidates: usize, passed: usize) {
        // The namespace goes into the Event's API path, the name and UID into the Event's name
        // and the UID is what the provisioner matches: a pod from the request that Kubernetes
        // could not have is not reported.
        if candidates > 0
            && passed == 0
            && pod.node.is_none()
            && !pod.uid.is_empty()
            && crate::names::dns1123_label(&pod.namespace).is_ok()
            && crate::names::dns1123_subdomain(&pod.name).is_ok()
            && let Some(s) = &self.unschedulable
        {
            s.send(Unschedulable {
                namespace: pod.namespace.clone(),
                name: pod.name.clone(),
                uid: pod.uid.clone(),
            });
        }
    }
}

/// Whether the connection a request came on presented a client certificate that the
/// server's client CA verified (set by [`serve_https`]; absent on plain HTTP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientCert(pub bool);

/// The router: `POST /filter`, `/prioritize`, `/bind`, `/preempt`; `GET /healthz`,
/// `/readyz`, `/metrics`. With [`Config::require_client_cert`] the four verbs answer 401
/// unless the connection presented a verified client certificate; the probes and metrics
/// stay open (the kubelet and Prometheus present none).
pub fn router(state: AppState) -> Router {
    let verbs = Router::new()
        .route("/filter", post(filter))
        .route("/prioritize", post(prioritize))
        .route("/bind", post(bind))
        .route("/preempt", post(preempt))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            require_client_cert,
        ));
    Router::new()
        .merge(verbs)
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// Serves `app` over HTTPS (rustls, ring) on `listener` until `shutdown` completes, with
/// `limits`. The certificate is read from `tls` for each new connection, so
/// [`reload_certificate`] takes effect without a restart.
pub async fn serve_https(
    listener: std::net::TcpListener,
    app: Router,
    tls: axum_server::tls_rustls::RustlsConfig,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    serve(listener, app, limits, shutdown, move |tcp| {
        let acceptor = tokio_rustls::TlsAcceptor::from(tls.get_inner());
        async move {
            let stream = tokio::time::timeout(limits.header_read, acceptor.accept(tcp))
                .await
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
            // The handshake already refused a certificate the client CA did not sign.
            let verified = stream
                .get_ref()
                .1
                .peer_certificates()
                .is_some_and(|c| !c.is_empty());
            Ok((stream, Some(ClientCert(verified))))
        }
    })
    .await
}

/// Re-reads the certificate, key and client CA every `every` when one of the files changed
/// (cert-manager renews the Secret in place; the kubelet updates the mounted files), so a
/// renewed certificate is served without a restart. A set that does not load (a
/// half-written update) is logged and the old one kept until the next look.
pub async fn reload_certificate(
    tls: axum_server::tls_rustls::RustlsConfig,
    cert: std::path::PathBuf,
    key: std::path::PathBuf,
    client_ca: Option<std::path::PathBuf>,
    every: Duration,
) {
    let stamp = |p: &std::path::Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let stamps = || {
        (
            stamp(&cert),
            stamp(&key),
            client_ca.as_deref().and_then(stamp),
        )
    };
    let mut seen = stamps();
    loop {
        tokio::time::sleep(every).await;
        let now = stamps();
        if now == seen {
            continue;
        }
        match tls_server_config(&cert, &key, client_ca.as_deref()) {
            Ok(config) => {
                tls.reload_from_config(config);
                tracing::info!(cert = %cert.display(), "TLS certificate reloaded");
                seen = now;
            }
            Err(e) => {
                tracing::warn!(error = %e, "TLS certificate not reloaded; serving the previous one")
            }
        }
    }
}

/// How long requests in progress may run after SIGTERM: above the bind timeout
/// ([`crate::cluster::DEFAULT_BIND_TIMEOUT`]), below the pod's termination grace period.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Completes on SIGTERM (what the kubelet sends at a rollout) or SIGINT.
pub async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await
            }
        }
    };
    tokio::select! {
        _ = term => tracing::info!("SIGTERM: finishing requests in progress"),
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT: finishing requests in progress"),
    }
}

async fn require_client_cert(
    State(s): State<AppState>,
    cert: Option<axum::Extension<ClientCert>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if s.config.require_client_cert && cert.map(|c| c.0) != Some(ClientCert(true)) {
        tracing::warn!(path = %req.uri().path(), "refused: no verified client certificate");
        return (
            StatusCode::UNAUTHORIZED,
            "a client certificate signed by the extender's client CA is required",
        )
            .into_response();
    }
    next.run(req).await
}

/// The server side of TLS: `cert` and `key`, and with `client_ca` a verifier that accepts
/// clients with a certificate signed by it (kube-scheduler's extender `tlsConfig.certFile`)
/// and, at the TLS layer, clients with none: the verbs then refuse those with 401
/// ([`Config::require_client_cert`]) while the kubelet's probes still get through.
pub fn tls_server_config(
    cert: &std::path::Path,
    key: &std::path::Path,
    client_ca: Option<&std::path::Path>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let read_certs = |path: &std::path::Path| -> Result<Vec<CertificateDer<'static>>, TlsError> {
        let certs = CertificateDer::pem_file_iter(path)
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(|e| TlsError::Pem(path.display().to_string(), e.to_string()))?;
        if certs.is_empty() {
            return Err(TlsError::Pem(
                path.display().to_string(),
                "no CERTIFICATE block".into(),
            ));
        }
        Ok(certs)
    };
    let chain = read_certs(cert)?;
    let key_der = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| TlsError::Pem(key.display().to_string(), e.to_string()))?;
    let builder = rustls::ServerConfig::builder();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in read_certs(ca)? {
                roots
                    .add(c)
                    .map_err(|e| TlsError::Pem(ca.display().to_string(), e.to_string()))?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder(Arc::new(roots))
                .allow_unauthenticated()
                .build()
                .map_err(|e| TlsError::Pem(ca.display().to_string(), e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(chain, key_der)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Why a TLS configuration did not load; names the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{0}: {1}")]
    Pem(String, String),
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
}

/// Serves `app` over plain HTTP on `listener` until `shutdown` completes, with `limits`.
pub async fn serve_http(
    listener: tokio::net::TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve(listener, app, limits, shutdown, |tcp| async move {
        Ok((tcp, None))
    })
    .await
}

/// How long a client may take to send a request's headers, counted from when the server
/// starts waiting for them. hyper starts the same timer while a kept-alive connection waits
/// for its next request, so this is also the idle timeout: a connection that sends nothing
/// (slowloris, or a client that went away) is closed after it. kube-scheduler sends a whole
/// request at once; Go's client notices the close of an idle connection and opens a new one.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a request body may take once the headers are in. The largest body
/// ([`MAX_BODY_BYTES`]) takes well under a second in-cluster; a body trickled or declared
/// and never sent gets 408 and the connection is closed instead of being held open.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections open at once; more are closed on accept. kube-scheduler keeps a few, the
/// kubelet's probes and Prometheus one each: the cap bounds the memory and tasks a
/// client that opens connections in a loop can take, well above any real use.
pub const MAX_CONNECTIONS: usize = 512;

/// Per-connection and per-request limits of [`serve_http`] and [`serve_https`]. Tests use
/// short ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// [`HEADER_READ_TIMEOUT`]; also bounds the TLS handshake.
    pub header_read: Duration,
    /// [`BODY_TIMEOUT`].
    pub body: Duration,
    /// [`MAX_CONNECTIONS`].
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_read: HEADER_READ_TIMEOUT,
            body: BODY_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
        }
    }
}

/// Applies the body limits to every route of `app`, whatever router it came from (the
/// webhook is merged after [`router`]) and however its handler reads the body: the body is
/// read here, at most [`MAX_BODY_BYTES`] and within `limits.body`, and handed on buffered.
pub fn harden(app: Router, limits: Limits) -> Router {
    app.layer(axum::middleware::from_fn_with_state(limits.body, read_body))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
}

async fn read_body(
    State(timeout): State<Duration>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let too_large = || format!("request body is larger than {MAX_BODY_BYTES} bytes");
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return refuse_body(StatusCode::PAYLOAD_TOO_LARGE, too_large());
    }
    let (parts, body) = req.into_parts();
    let read = http_body_util::BodyExt::collect(http_body_util::Limited::new(body, MAX_BODY_BYTES));
    let bytes = match tokio::time::timeout(timeout, read).await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            return refuse_body(StatusCode::PAYLOAD_TOO_LARGE, too_large());
        }
        Ok(Err(e)) => {
            return refuse_body(
                StatusCode::BAD_REQUEST,
                format!("reading the request body: {e}"),
            );
        }
        Err(_) => {
            return refuse_body(
                StatusCode::REQUEST_TIMEOUT,
                format!("request body not received within {timeout:?}"),
            );
        }
    };
    next.run(axum::extract::Request::from_parts(
        parts,
        axum::body::Body::from(bytes),
    ))
    .await
}

/// An answer to a body not read to its end; it closes the connection, since the rest of
/// the body would otherwise be read as the next request.
fn refuse_body(status: StatusCode, why: String) -> Response {
    tracing::debug!(%status, %why, "request body refused");
    (status, [(header::CONNECTION, "close")], why).into_response()
}

/// The accept loop behind [`serve_http`] and [`serve_https`]: HTTP/1.1 only (hyper's HTTP/2
/// has no header timeout, and kube-scheduler speaks HTTP/1.1 to extenders), `TCP_NODELAY`
/// (a response larger than one segment must not wait for the client's delayed ACK of the
/// one before; kube-scheduler waits on every answer), at most `limits.max_connections`
/// open, and `handshake` (TLS or nothing) under the header timeout. On `shutdown` it stops
/// accepting and gives requests in progress (a bind) [`SHUTDOWN_GRACE`] to finish.
async fn serve<F, Fut, S>(
    listener: tokio::net::TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
    handshake: F,
) -> std::io::Result<()>
where
    F: Fn(tokio::net::TcpStream) -> Fut,
    Fut: Future<Output = std::io::Result<(S, Option<ClientCert>)>> + Send + 'static,
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let app = harden(app, limits);
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let tcp = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    // Out of file descriptors, usually: wait rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::debug!(
                max = limits.max_connections,
                "connection refused: too many open"
            );
            continue;
        };
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "TCP_NODELAY not set");
        }
        let handshake = handshake(tcp);
        let app = app.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let _slot = slot;
            let (stream, cert) = match handshake.await {
                Ok(v) => v,
                Err(e) => {
                    tracing::debug!(error = %e, "handshake failed");
                    return;
                }
            };
            let service = hyper::service::service_fn(
                move |mut req: axum::extract::Request<hyper::body::Incoming>| {
                    if let Some(c) = cert {
                        req.extensions_mut().insert(c);
                    }
                    let mut app = app.clone();
                    async move { tower_service::Service::call(&mut app, req).await }
                },
            );
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(limits.header_read)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            if let Err(e) = watcher.watch(conn).await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(grace = ?SHUTDOWN_GRACE, "requests still in progress at shutdown were cut off");
    }
    Ok(())
}

/// Installs ring as rustls's process-wide crypto provider (once; later calls are no-ops).
/// Must run before a `RustlsConfig` is built.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

// ---- verbs ------------------------------------------------------------------------------

async fn filter(State(s): State<AppState>, body: Bytes) -> Response {
    let start = Instant::now();
    let (out, error) = filter_body(&s, &body);
    s.metrics.record(Verb::Filter, start, error);
    ([(header::CONTENT_TYPE, "application/json")], out).into_response()
}

/// `ExtenderArgs` with the node names borrowed from the request body (a 5,000-node
/// request then parses without 5,000 allocations) and only the fields of the pod the
/// ledger reads.
#[derive(Deserialize)]
struct ArgsIn<'a> {
    #[serde(rename = "Pod", alias = "pod", default)]
    pod: Option<PodIn>,
    #[serde(rename = "Nodes", alias = "nodes", default)]
    nodes: Option<NodeList>,
    #[serde(
        rename = "NodeNames",
        alias = "nodeNames",
        alias = "nodenames",
        default,
        borrow
    )]
    node_names: Option<Vec<Name<'a>>>,
}

/// The parts of the request's Pod the ledger reads: identity, node, and what feeds its
/// requests. kube-scheduler sends the whole object (managed fields, env, volumes, status,
/// ...); decoding all of it into k8s-openapi's `Pod` was the largest cost of a call with
/// few candidate nodes. Everything else is skipped unparsed. [`PodIn::to_pod`] rebuilds a
/// `Pod` holding just these fields, so requests are computed by the same conversion as
/// everywhere else.
#[derive(Deserialize, Default)]
struct PodIn {
    #[serde(default)]
    metadata: Option<MetaIn>,
    #[serde(default)]
    spec: Option<SpecIn>,
}

#[derive(Deserialize, Default)]
struct MetaIn {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    uid: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct SpecIn {
    #[serde(default)]
    containers: Option<Vec<ContainerIn>>,
    #[serde(default)]
    init_containers: Option<Vec<ContainerIn>>,
    #[serde(default)]
    overhead: Option<BTreeMap<String, Quantity>>,
    #[serde(default)]
    resources: Option<ResourceRequirements>,
    #[serde(default)]
    node_name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ContainerIn {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    resources: Option<ResourceRequirements>,
    #[serde(default)]
    restart_policy: Option<String>,
}

impl ContainerIn {
    fn to_container(&self) -> Container {
        Container {
            name: self.name.clone().unwrap_or_default(),
            resources: self.resources.clone(),
            restart_policy: self.restart_policy.clone(),
            ..Default::default()
        }
    }
}

impl PodIn {
    fn to_pod(&self) -> Pod {
        let meta = self.metadata.as_ref();
        Pod {
            metadata: ObjectMeta {
                name: meta.and_then(|m| m.name.clone()),
                namespace: meta.and_then(|m| m.namespace.clone()),
                uid: meta.and_then(|m| m.uid.clone()),
                ..Default::default()
            },
            spec: self.spec.as_ref().map(|s| PodSpec {
                containers: s
                    .containers
                    .iter()
                    .flatten()
                    .map(ContainerIn::to_container)
                    .collect(),
                init_containers: s
                    .init_containers
                    .as_ref()
                    .map(|cs| cs.iter().map(ContainerIn::to_container).collect()),
                overhead: s.overhead.clone(),
                resources: s.resources.clone(),
                node_name: s.node_name.clone(),
                ..Default::default()
            }),
            status: None,
        }
    }
}

/// A node name from the request: borrowed from the body when it has no escapes (always, for
/// DNS names), owned otherwise. serde's own `Cow<str>` inside a `Vec` always copies.
struct Name<'a>(Cow<'a, str>);

impl Name<'_> {
    fn as_str(&self) -> &str {
        &self.0
    }

    fn is_borrowed(&self) -> bool {
        matches!(self.0, Cow::Borrowed(_))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Name<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = Name<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a node name")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Name(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Name(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Name(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

/// `ExtenderFilterResult` for the `NodeNames` case, written by hand: the passed names were
/// borrowed unescaped from the request body (so they need no escaping and are copied
/// straight through); only the failure reasons go through the JSON encoder.
fn write_filter_names(names: &[Name<'_>], out: &FilterOutcome) -> Result<Vec<u8>, String> {
    let mut buf = Vec::with_capacity(32 + out.passed.len() * 40 + out.failed.len() * 160);
    buf.extend_from_slice(br#"{"Nodes":null,"NodeNames":["#);
    for (k, &i) in out.passed.iter().enumerate() {
        if k > 0 {
            buf.push(b',');
        }
        let n = &names[i];
        if n.is_borrowed() {
            buf.push(b'"');
            buf.extend_from_slice(n.as_str().as_bytes());
            buf.push(b'"');
        } else {
            serde_json::to_writer(&mut buf, n.as_str()).map_err(|e| e.to_string())?;
        }
    }
    buf.extend_from_slice(br#"],"FailedNodes":"#);
    serde_json::to_writer(&mut buf, &out.failed).map_err(|e| e.to_string())?;
    buf.extend_from_slice(br#","FailedAndUnresolvableNodes":null,"Error":""}"#);
    Ok(buf)
}

/// The `filter` verb on a raw request body: the response body (an
/// [`ExtenderFilterResult`]) and whether it carries an error. Public for benchmarks.
pub fn filter_body(s: &AppState, body: &[u8]) -> (Vec<u8>, bool) {
    let args: ArgsIn = match serde_json::from_slice(body) {
        Ok(a) => a,
        Err(e) => return encode_filter_error(format!("malformed ExtenderArgs: {e}")),
    };
    if let Some(names) = &args.node_names {
        let pod = match pod_info(args.pod.as_ref().map(PodIn::to_pod).as_ref()) {
            Ok(p) => p,
            Err(e) => return encode_filter_error(e),
        };
        let ledger = s.ledger.read().unwrap_or_else(|e| e.into_inner());
        let c: Vec<Candidate> = names.iter().map(|n| Candidate::named(n.as_str())).collect();
        let out = ledger.filter(&pod, &c);
        drop(ledger);
        s.failed_everywhere(&pod, c.len(), out.passed.len());
        return match write_filter_names(names, &out) {
            Ok(v) => (v, false),
            Err(e) => encode_filter_error(e),
        };
    }
    let result = filter_nodes(
        s,
        ExtenderArgs {
            pod: args.pod.as_ref().map(PodIn::to_pod),
            nodes: args.nodes,
            node_names: None,
        },
    );
    let error = !result.error.is_empty();
    match serde_json::to_vec(&result) {
        Ok(v) => (v, error),
        Err(e) => encode_filter_error(e.to_string()),
    }
}

fn encode_filter_error(error: String) -> (Vec<u8>, bool) {
    let r = ExtenderFilterResult {
        error,
        ..Default::default()
    };
    (serde_json::to_vec(&r).unwrap_or_default(), true)
}

fn filter_nodes(s: &AppState, args: ExtenderArgs) -> ExtenderFilterResult {
    let fail = |error: String| ExtenderFilterResult {
        error,
        ..Default::default()
    };
    let args: ExtenderArgs = match Ok::<_, String>(args) {
        Ok(a) => a,
        Err(e) => return fail(e),
    };
    let pod = match pod_info(args.pod.as_ref()) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let ledger = s.ledger.read().unwrap_or_else(|e| e.into_inner());
    match (&args.node_names, &args.nodes) {
        (Some(names), _) => {
            let c: Vec<Candidate> = names.iter().map(|n| Candidate::named(n)).collect();
            let out = ledger.filter(&pod, &c);
            ExtenderFilterResult {
                node_names: Some(out.passed.iter().map(|&i| names[i].clone()).collect()),
                failed_nodes: Some(out.failed),
                ..Default::default()
            }
        }
        (None, Some(list)) => {
            let allocs: Vec<Option<Resources>> = list.items.iter().map(allocatable).collect();
            let c: Vec<Candidate> = list
                .items
                .iter()
                .zip(&allocs)
                .map(|(n, a)| Candidate {
                    name: n.metadata.name.as_deref().unwrap_or_default(),
                    allocatable: a.as_ref(),
                })
                .collect();
            let out = ledger.filter(&pod, &c);
            s.failed_everywhere(&pod, c.len(), out.passed.len());
            ExtenderFilterResult {
                nodes: Some(NodeList {
                    items: out.passed.iter().map(|&i| list.items[i].clone()).collect(),
                    ..list.clone_empty()
                }),
                failed_nodes: Some(out.failed),
                ..Default::default()
            }
        }
        (None, None) => fail("ExtenderArgs has neither NodeNames nor Nodes".into()),
    }
}

async fn prioritize(State(s): State<AppState>, body: Bytes) -> Response {
    let start = Instant::now();
    match prioritize_body(&s, &body) {
        Ok(out) => {
            s.metrics.record(Verb::Prioritize, start, false);
            ([(header::CONTENT_TYPE, "application/json")], out).into_response()
        }
        Err(e) => {
            // HostPriorityList has no error field: kube-scheduler reads a non-200 as the
            // extender's error (and skips it when the extender is ignorable).
            s.metrics.record(Verb::Prioritize, start, true);
            (StatusCode::BAD_REQUEST, e).into_response()
        }
    }
}

/// The `prioritize` verb on a raw request body: the serialised `HostPriorityList`. Public
/// for benchmarks.
pub fn prioritize_body(s: &AppState, body: &[u8]) -> Result<Vec<u8>, String> {
    let args: ArgsIn = parse(body, "ExtenderArgs")?;
    let pod = pod_info(args.pod.as_ref().map(PodIn::to_pod).as_ref())?;
    let ledger = s.ledger.read().unwrap_or_else(|e| e.into_inner());
    match (&args.node_names, &args.nodes) {
        (Some(names), _) => {
            let c: Vec<Candidate> = names.iter().map(|n| Candidate::named(n.as_str())).collect();
            let scores = ledger.scores(&pod, &c);
            drop(ledger);
            write_priorities(names.iter().map(|n| (n.as_str(), n.is_borrowed())), &scores)
        }
        (None, Some(list)) => {
            let allocs: Vec<Option<Resources>> = list.items.iter().map(allocatable).collect();
            let c: Vec<Candidate> = list
                .items
                .iter()
                .zip(&allocs)
                .map(|(n, a)| Candidate {
                    name: n.metadata.name.as_deref().unwrap_or_default(),
                    allocatable: a.as_ref(),
                })
                .collect();
            let scores = ledger.scores(&pod, &c);
            drop(ledger);
            write_priorities(c.iter().map(|c| (c.name, false)), &scores)
        }
        (None, None) => Err("ExtenderArgs has neither NodeNames nor Nodes".into()),
    }
}

/// `HostPriorityList` written by hand: `[{"Host":"n1","Score":7},...]`. Names borrowed
/// unescaped from the request are copied straight through; others go through the encoder.
fn write_priorities<'a>(
    names: impl Iterator<Item = (&'a str, bool)>,
    scores: &[i64],
) -> Result<Vec<u8>, String> {
    let mut buf = Vec::with_capacity(2 + scores.len() * 56);
    buf.push(b'[');
    for (k, ((name, verbatim), score)) in names.zip(scores).enumerate() {
        if k > 0 {
            buf.push(b',');
        }
        buf.extend_from_slice(br#"{"Host":"#);
        if verbatim {
            buf.push(b'"');
            buf.extend_from_slice(name.as_bytes());
            buf.push(b'"');
        } else {
            serde_json::to_writer(&mut buf, name).map_err(|e| e.to_string())?;
        }
        buf.extend_from_slice(br#","Score":"#);
        match u8::try_from(*score) {
            // Scores are 0..=10: digits by hand, core::fmt took a quarter of the call.
            Ok(d @ 0..=9) => buf.push(b'0' + d),
            _ => std::io::Write::write_fmt(&mut buf, format_args!("{score}"))
                .map_err(|e| e.to_string())?,
        }
        buf.push(b'}');
    }
    buf.push(b']');
    Ok(buf)
}

async fn bind(State(s): State<AppState>, body: Bytes) -> Response {
    let start = Instant::now();
    let result = bind_body(&s, &body).await;
    s.metrics
        .record(Verb::Bind, start, !result.error.is_empty());
    json(&result)
}

async fn bind_body(s: &AppState, body: &[u8]) -> ExtenderBindingResult {
    let fail = |error: String| ExtenderBindingResult { error };
    let args: ExtenderBindingArgs = match parse(body, "ExtenderBindingArgs") {
        Ok(a) => a,
        Err(e) => return fail(e),
    };
    // Before the ledger or the API server sees anything.
    if let Err(e) = args.validate() {
        tracing::warn!(error = %e, "bind refused");
        return fail(e.to_string());
    }
    let (ns, name, node) = (&args.pod_namespace, &args.pod_name, &args.node);
    // Record the binding before calling the API so a filter call for the next pod, which
    // kube-scheduler makes while this bind is in flight, already sees it.
    let assumed = {
        let mut l = s.ledger.write().unwrap_or_else(|e| e.into_inner());
        l.assume(ns, name, &args.pod_uid, node)
    };
    if let Assumed::BoundElsewhere(other) = &assumed {
        return fail(format!(
            "pod {ns}/{name} is already bound to node {other}, not {node}"
        ));
    }
    match s.binder.bind(&args).await {
        Ok(()) => {
            tracing::info!(pod = %format!("{ns}/{name}"), node = %node, retry = (assumed == Assumed::AlreadyBound), "bound");
            ExtenderBindingResult::default()
        }
        Err(e) if assumed == Assumed::AlreadyBound && e.contains("already") => {
            // A retried bind whose first attempt went through.
            ExtenderBindingResult::default()
        }
        Err(e) => {
            if matches!(assumed, Assumed::Bound | Assumed::BoundUnknown) {
                let mut l = s.ledger.write().unwrap_or_else(|e| e.into_inner());
                l.forget(ns, name, node, &assumed);
            }
            tracing::warn!(pod = %format!("{ns}/{name}"), node = %node, error = %e, "binding failed");
            fail(format!("binding pod {ns}/{name} to node {node}: {e}"))
        }
    }
}

async fn preempt(State(s): State<AppState>, body: Bytes) -> Response {
    let start = Instant::now();
    match preempt_body(&s, &body) {
        Ok(r) => {
            s.metrics.record(Verb::Preempt, start, false);
            json(&r)
        }
        Err(e) => {
            s.metrics.record(Verb::Preempt, start, true);
            (StatusCode::BAD_REQUEST, e).into_response()
        }
    }
}

fn preempt_body(s: &AppState, body: &[u8]) -> Result<ExtenderPreemptionResult, String> {
    let args: ExtenderPreemptionArgs = parse(body, "ExtenderPreemptionArgs")?;
    let p = args.pod.as_ref().ok_or("the request has no Pod")?;
    // One conversion serves the ledger's view and the NodePool check.
    let model = adze_api::convert::pod(p).map_err(|e| e.to_string())?;
    if s.config.preemption != Policy::Allow {
        let pod = ledger_view(p, &model);
        let claim = {
            let l = s.ledger.read().unwrap_or_else(|e| e.into_inner());
            l.capacity_in_flight(&pod)
                .then(|| l.nominated_claim(&pod).map(str::to_string))
                .flatten()
        };
        let pools: Vec<PoolView> = s
            .pools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        let decision = preemption::decide(
            s.config.preemption,
            &model,
            claim.as_deref(),
            &pools,
            pod_age(p),
        );
        let key = format!("{}/{}", pod.namespace, pod.name);
        match decision {
            Decision::Hold(reason) => {
                tracing::info!(pod = %key, %reason, "no preemption");
                s.metrics.preemptions_held.inc();
                return Ok(ExtenderPreemptionResult {
                    node_name_to_meta_victims: Some(BTreeMap::new()),
                });
            }
            Decision::Allow(reason) => tracing::info!(pod = %key, %reason, "preemption allowed"),
        }
    }
    let meta = match (args.node_name_to_meta_victims, args.node_name_to_victims) {
        (Some(m), _) => m,
        (None, Some(v)) => v
            .into_iter()
            .map(|(node, victims)| {
                let pods = victims.pods.map(|ps| {
                    ps.iter()
                        .map(|p| MetaPod {
                            uid: p.metadata.uid.clone().unwrap_or_default(),
                        })
                        .collect()
                });
                (
                    node,
                    MetaVictims {
                        pods,
                        num_pdb_violations: victims.num_pdb_violations,
                    },
                )
            })
            .collect(),
        (None, None) => BTreeMap::new(),
    };
    Ok(ExtenderPreemptionResult {
        node_name_to_meta_victims: Some(meta),
    })
}

async fn readyz(State(s): State<AppState>) -> Response {
    if !s.ready.load(Ordering::Relaxed) {
        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced").into_response()
    } else if !s.leading.load(Ordering::Relaxed) {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "following: another replica holds the leader lease and serves kube-scheduler",
        )
            .into_response()
    } else {
        "ok".into_response()
    }
}

async fn metrics(State(s): State<AppState>) -> Response {
    let counts = s.ledger.read().unwrap_or_else(|e| e.into_inner()).counts();
    (
        [(header::CONTENT_TYPE, adze_metrics::CONTENT_TYPE)],
        s.metrics.render(counts, s.leading.load(Ordering::Relaxed)),
    )
        .into_response()
}

// ---- helpers ----------------------------------------------------------------------------

fn parse<'a, T: Deserialize<'a>>(body: &'a [u8], what: &str) -> Result<T, String> {
    serde_json::from_slice(body).map_err(|e| format!("malformed {what}: {e}"))
}

/// How long the pod has existed (zero when it has no creation time or the clock is behind).
fn pod_age(p: &Pod) -> Duration {
    let created = p
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.as_second());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default();
    created.map_or(Duration::ZERO, |c| {
        Duration::from_secs(now.saturating_sub(c).max(0) as u64)
    })
}

/// The pod being scheduled as the ledger sees it.
pub fn pod_info(pod: Option<&Pod>) -> Result<PodInfo, String> {
    let p = pod.ok_or("the request has no Pod")?;
    let model = adze_api::convert::pod(p).map_err(|e| e.to_string())?;
    Ok(ledger_view(p, &model))
}

/// The ledger's view of `p`, from its already converted `model`.
fn ledger_view(p: &Pod, model: &adze_scheduling::Pod) -> PodInfo {
    PodInfo {
        namespace: model.namespace.clone(),
        name: model.name.clone(),
        uid: p.metadata.uid.clone().unwrap_or_default(),
        requests: model.requests.clone(),
        node: p
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .filter(|n| !n.is_empty()),
    }
}

fn allocatable(n: &Node) -> Option<Resources> {
    let status = n.status.as_ref()?;
    let list = status.allocatable.as_ref().or(status.capacity.as_ref())?;
    Resources::from_quantities(list.iter().map(|(k, v)| (k.as_str(), v.0.as_str()))).ok()
}

fn json<T: Serialize>(value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

// ---- metrics ----------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
pub enum Verb {
    Filter,
    Prioritize,
    Bind,
    Preempt,
}

const VERBS: [(Verb, &str); 4] = [
    (Verb::Filter, "filter"),
    (Verb::Prioritize, "prioritize"),
    (Verb::Bind, "bind"),
    (Verb::Preempt, "preempt"),
];

/// Upper bounds of the latency histogram, in seconds.
const BUCKETS: [f64; 10] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1.0,
];

/// What the ledger counts, as the `kind` label of `adze_extender_cached_objects`.
const KINDS: [&str; 3] = ["node", "pod", "nodeclaim"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerbLabel {
    verb: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: String,
}

/// Request counts, errors and latency per verb, in the extender's registry (one per
/// [`AppState`], so one per process; tests each get their own). Every verb's series exist
/// from the start, at 0.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: [Counter; 4],
    errors: [Counter; 4],
    durations: [Histogram; 4],
    /// `preempt` requests answered with no candidates (the hold engaged).
    pub preemptions_held: Counter,
    leader: Gauge,
    cached: [Gauge; 3],
}

impl Default for Metrics {
    fn default() -> Self {
        let mut r = Registry::default();
        let leader = adze_metrics::add(
            &mut r,
            "adze_extender_leader",
            "1 while this replica holds the leader lease and reports ready.",
            Gauge::default(),
        );
        let requests: Family<VerbLabel, Counter> = adze_metrics::add(
            &mut r,
            "adze_extender_requests_total",
            "Extender requests by verb.",
            Family::default(),
        );
        let preemptions_held = adze_metrics::add(
            &mut r,
            "adze_extender_preemptions_held_total",
            "preempt requests answered with no candidates: the pod's capacity is in flight or a NodePool can serve it.",
            Counter::default(),
        );
        let errors: Family<VerbLabel, Counter> = adze_metrics::add(
            &mut r,
            "adze_extender_errors_total",
            "Extender requests answered with an error, by verb.",
            Family::default(),
        );
        let durations: Family<VerbLabel, Histogram> = adze_metrics::add(
            &mut r,
            "adze_extender_request_duration_seconds",
            "Time to answer, by verb.",
            Family::new_with_constructor(|| Histogram::new(BUCKETS)),
        );
        let cached: Family<KindLabel, Gauge> = adze_metrics::add(
            &mut r,
            "adze_extender_cached_objects",
            "Objects in the extender's ledger.",
            Family::default(),
        );
        adze_metrics::build_info(&mut r);
        let verb = |(_, name): (Verb, &str)| VerbLabel { verb: name.into() };
        Metrics {
            requests: VERBS.map(|v| requests.get_or_create_owned(&verb(v))),
            errors: VERBS.map(|v| errors.get_or_create_owned(&verb(v))),
            durations: VERBS.map(|v| durations.get_or_create_owned(&verb(v))),
            cached: KINDS.map(|k| cached.get_or_create_owned(&KindLabel { kind: k.into() })),
            preemptions_held,
            leader,
            registry: r,
        }
    }
}

impl Metrics {
    pub fn record(&self, verb: Verb, start: Instant, error: bool) {
        let i = verb as usize;
        self.requests[i].inc();
        if error {
            self.errors[i].inc();
        }
        self.durations[i].observe(start.elapsed().as_secs_f64());
    }

    /// The OpenMetrics text, with the ledger's `(nodes, pods, nodeclaims)` and leadership as
    /// of now.
    pub fn render(&self, (nodes, pods, claims): (usize, usize, usize), leading: bool) -> String {
        self.leader.set(i64::from(leading));
        for (gauge, n) in self.cached.iter().zip([nodes, pods, claims]) {
            gauge.set(n as i64);
        }
        adze_metrics::render(&self.registry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::HostPriority;

    /// A pod with every field that feeds requests, plus fields the lean parse skips.
    const POD: &str = r#"{
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "labels": {"a": "b"},
            "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]},
        "spec": {
            "nodeName": "",
            "initContainers": [
                {"name": "init", "image": "x", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}},
                {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "250m"}}}
            ],
            "containers": [
                {"name": "a", "image": "x", "env": [{"name": "E", "value": "v"}],
                 "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
            ],
            "overhead": {"cpu": "50m", "memory": "10Mi"},
            "affinity": {"nodeAffinity": {}},
            "tolerations": [{"operator": "Exists"}]
        },
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]}
    }"#;

    #[test]
    fn lean_request_pod_gives_the_same_pod_info_as_the_full_object() {
        let full: Pod = serde_json::from_str(POD).unwrap();
        let lean: PodIn = serde_json::from_str(POD).unwrap();
        let from_full = pod_info(Some(&full)).unwrap();
        let from_lean = pod_info(Some(&lean.to_pod())).unwrap();
        assert_eq!(from_lean, from_full);
        assert_eq!(from_lean.uid, "u1");
        assert_eq!(from_lean.node, None);
        // init 2 CPU beats sidecar 250m + containers 600m; plus 50m overhead.
        assert_eq!(from_lean.requests.cpu, 2050);
    }

    #[test]
    fn every_verb_is_counted_from_zero_and_recorded_with_its_label() {
        let m = Metrics::default();
        let text = m.render((0, 0, 0), false);
        for verb in ["filter", "prioritize", "bind", "preempt"] {
            assert!(
                text.contains(&format!(
                    "\nadze_extender_requests_total{{verb=\"{verb}\"}} 0\n"
                )),
                "{text}"
            );
            assert!(
                text.contains(&format!(
                    "\nadze_extender_request_duration_seconds_count{{verb=\"{verb}\"}} 0\n"
                )),
                "{text}"
            );
        }
        m.record(Verb::Bind, Instant::now(), true);
        m.preemptions_held.inc();
        let text = m.render((3, 20, 1), true);
        for line in [
            "adze_extender_leader 1",
            "adze_extender_requests_total{verb=\"bind\"} 1",
            "adze_extender_errors_total{verb=\"bind\"} 1",
            "adze_extender_errors_total{verb=\"filter\"} 0",
            "adze_extender_preemptions_held_total 1",
            "adze_extender_request_duration_seconds_bucket{le=\"1.0\",verb=\"bind\"} 1",
            "adze_extender_request_duration_seconds_count{verb=\"bind\"} 1",
            "adze_extender_cached_objects{kind=\"node\"} 3",
            "adze_extender_cached_objects{kind=\"pod\"} 20",
            "adze_extender_cached_objects{kind=\"nodeclaim\"} 1",
        ] {
            assert!(text.contains(&format!("\n{line}\n")), "{line} in {text}");
        }
    }

    #[test]
    fn serves_exactly_the_families_of_the_inventory() {
        let served = adze_metrics::families(&Metrics::default().render((0, 0, 0), true));
        let inventory = include_str!("../../charts/ci/metrics/extender.prom");
        assert_eq!(served, adze_metrics::families(inventory));
        assert_eq!(
            served.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "adze_build_info",
                "adze_extender_cached_objects",
                "adze_extender_errors_total",
                "adze_extender_leader",
                "adze_extender_preemptions_held_total",
                "adze_extender_request_duration_seconds",
                "adze_extender_requests_total",
            ]
        );
    }

    #[test]
    fn prioritize_response_is_a_host_priority_list_with_names_escaped_when_needed() {
        let names = [("n1", true), ("we\"ird", false)];
        let body = write_priorities(names.into_iter(), &[10, 3]).unwrap();
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            r#"[{"Host":"n1","Score":10},{"Host":"we\"ird","Score":3}]"#
        );
        let parsed: Vec<HostPriority> = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            parsed,
            vec![
                HostPriority {
                    host: "n1".into(),
                    score: 10
                },
                HostPriority {
                    host: "we\"ird".into(),
                    score: 3
                }
            ]
        );
        assert_eq!(write_priorities(std::iter::empty(), &[]).unwrap(), b"[]");
    }
}
