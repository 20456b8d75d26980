//! `adze-extender`: serves kube-scheduler's extender verbs over a ledger kept current by
//! watches on nodes, pods and NodeClaims.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use adze_extender::cluster::{KubeBinder, watch};
use adze_extender::ledger::Ledger;
use adze_extender::server::{AppState, Config, Limits, router};
use adze_scheduling::preemption::Policy;
use anyhow::Context;
use clap::{CommandFactory, FromArgMatches, Parser};

#[derive(Debug, Parser)]
#[command(
    name = "adze-extender",
    version,
    about = "kube-scheduler extender that keeps in-flight capacity for the pods it was launched for"
)]
struct Args {
    /// Address to listen on.
    #[arg(long, env = "ADZE_LISTEN", default_value = "0.0.0.0:8443")]
    listen: SocketAddr,
    /// Kubeconfig file; in-cluster config (or KUBECONFIG) when absent.
    #[arg(long, env = "ADZE_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// PEM certificate chain; with --tls-key, serve HTTPS (set `enableHTTPS: true` in the
    /// scheduler's extender config).
    #[arg(long, env = "ADZE_TLS_CERT", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key for --tls-cert.
    #[arg(long, env = "ADZE_TLS_KEY", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// PEM CA bundle: filter, prioritize, bind and preempt then need a client certificate
    /// signed by it (kube-scheduler's extender `tlsConfig.certFile` / `keyFile`); others get
    /// 401. Probes, metrics and the webhook need none. Without it anyone who reaches the
    /// port can bind pods.
    #[arg(long, env = "ADZE_CLIENT_CA", requires = "tls_cert")]
    client_ca: Option<PathBuf>,
    /// `hold`: answer kube-scheduler's `preempt` with no candidates for a pending pod whose
    /// capacity is in flight or that a NodePool can serve (from its first scheduling cycle),
    /// so running pods are not evicted for it. `allow`: never interfere.
    #[arg(long, env = "ADZE_PREEMPTION", value_enum, default_value_t = PreemptionArg::Hold)]
    preemption: PreemptionArg,
    /// With `--preemption hold`: how old a pod a NodePool could serve may get before
    /// preemption is let through for it anyway (Go duration, or "Never"; default 5m). Pods
    /// whose capacity is in flight are held regardless. Refused with `--preemption allow`,
    /// where nothing is held.
    #[arg(long, env = "ADZE_PREEMPTION_HOLD_LIMIT", value_parser = hold_limit)]
    preemption_hold_limit: Option<HoldLimit>,
    #[command(flatten)]
    log: adze_cli::LogArgs,
    /// Also serve the mutating webhook (`POST /mutate`) that sets this schedulerName on new
    /// pods that ask for the default scheduler. Needs TLS: the API server calls webhooks over
    /// HTTPS only.
    #[arg(
        long,
        env = "ADZE_WEBHOOK_SCHEDULER_NAME",
        value_name = "NAME",
        requires = "tls_cert"
    )]
    webhook_scheduler_name: Option<String>,
    // One serving replica: only the holder of the Lease reports ready, so a Service in
    // front of several replicas sends every verb to one ledger; the others keep their
    // watches warm and take over within a lease duration (at once on a clean shutdown,
    // which releases it). With `--leader-elect=false` every replica serves its own ledger.
    #[command(flatten)]
    leader: adze_lease::cli::LeaderArgs,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum PreemptionArg {
    Hold,
    Allow,
}

/// `None`: never ends.
#[derive(Debug, Clone, Copy)]
struct HoldLimit(Option<std::time::Duration>);

fn hold_limit(s: &str) -> Result<HoldLimit, String> {
    adze_api::duration::DurationOrNever::parse(s)
        .map(|d| HoldLimit(d.as_std()))
        .map_err(|e| e.to_string())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    adze_cli::refuse_renamed(Args::command(), &[("--log-json", "--log-format json")]);
    let matches = Args::command().get_matches();
    let args = Args::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let refuse = |msg: String| -> ! {
        Args::command()
            .error(clap::error::ErrorKind::ArgumentConflict, msg)
            .exit()
    };
    if matches!(args.preemption, PreemptionArg::Allow) && args.preemption_hold_limit.is_some() {
        refuse(
            "--preemption-hold-limit has no effect with --preemption allow (nothing is held)"
                .into(),
        );
    }
    if let Some(msg) = args.leader.unused_flag(&matches) {
        refuse(msg);
    }
    let leader = args
        .leader
        .settings("adze-extender")
        .map_err(anyhow::Error::msg)?;
    args.log.init();

    let mut kube_config = adze_cli::kube_config(args.kubeconfig.as_deref(), "adze-extender")
        .await
        .context("reading the Kubernetes client configuration")?;
    // kube's client retries 429/503/504 up to 15 times by default; a bind held that long
    // outlives kube-scheduler's wait for it. The binder bounds its call instead.
    kube_config.default_retry = false;
    let client = kube::Client::try_from(kube_config).context("connecting to the Kubernetes API")?;
    let ledger = Arc::new(RwLock::new(Ledger::new()));
    let state = AppState::new(
        ledger.clone(),
        Arc::new(KubeBinder::new(client.clone())),
        Config {
            require_client_cert: args.client_ca.is_some(),
            preemption: match args.preemption {
                PreemptionArg::Allow => Policy::Allow,
                PreemptionArg::Hold => Policy::Hold {
                    limit: args.preemption_hold_limit.map_or(
                        Some(adze_extender::server::DEFAULT_PREEMPTION_HOLD_LIMIT),
                        |l| l.0,
                    ),
                },
            },
        },
    );
    let (signal, unschedulable) = adze_extender::signal::Signal::new();
    let state = state.with_signal(signal);
    tokio::spawn(adze_extender::signal::record(client.clone(), unschedulable));
    tokio::spawn(watch(
        client.clone(),
        ledger,
        state.pools.clone(),
        state.ready.clone(),
    ));
    let elector = leader.as_ref().map(|settings| {
        state.leading.store(false, Ordering::Relaxed);
        tokio::spawn(follow_leadership(
            client.clone(),
            settings.clone(),
            state.ready.clone(),
            state.leading.clone(),
        ))
    });
    // On SIGTERM stop contending and give the lease up first, so a follower serves while
    // this replica finishes the requests it has.
    let shutdown = {
        let (client, leader, leading) = (client.clone(), leader.clone(), state.leading.clone());
        async move {
            adze_extender::server::shutdown_signal().await;
            if let (Some(settings), Some(elector)) = (leader, elector) {
                elector.abort();
                leading.store(false, Ordering::Relaxed);
                adze_lease::release(client, &settings).await;
            }
        }
    };
    let mut app = router(state);
    if let Some(name) = args.webhook_scheduler_name.clone() {
        tracing::info!(scheduler = %name, "serving the schedulerName webhook at /mutate");
        app = app.merge(adze_extender::webhook::router(name));
    }

    match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            adze_extender::server::install_crypto_provider();
            let config =
                adze_extender::server::tls_server_config(cert, key, args.client_ca.as_deref())
                    .context("loading the TLS certificate")?;
            let tls = axum_server::tls_rustls::RustlsConfig::from_config(config);
            tokio::spawn(adze_extender::server::reload_certificate(
                tls.clone(),
                cert.clone(),
                key.clone(),
                args.client_ca.clone(),
                std::time::Duration::from_secs(30),
            ));
            let listener = std::net::TcpListener::bind(args.listen)
                .with_context(|| format!("listening on {}", args.listen))?;
            tracing::info!(listen = %args.listen, client_auth = args.client_ca.is_some(), "serving HTTPS");
            adze_extender::server::serve_https(listener, app, tls, Limits::default(), shutdown)
                .await
                .context("serving")?;
        }
        _ => {
            tracing::warn!(listen = %args.listen, "serving plain HTTP without client authentication: anyone who reaches this port can bind pods; use --tls-cert, --tls-key and --client-ca");
            let listener = tokio::net::TcpListener::bind(args.listen)
                .await
                .with_context(|| format!("listening on {}", args.listen))?;
            adze_extender::server::serve_http(listener, app, Limits::default(), shutdown)
                .await
                .context("serving")?;
        }
    }
    tracing::info!("stopped");
    Ok(())
}

/// Contends for the Lease once the watches have listed (a leader with an empty ledger would
/// keep no reservation), and mirrors leadership into `leading`.
async fn follow_leadership(
    client: kube::Client,
    settings: adze_lease::Settings,
    ready: Arc<AtomicBool>,
    leading: Arc<AtomicBool>,
) {
    while !ready.load(Ordering::Relaxed) {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    tracing::info!(identity = %settings.identity, lease = %format!("{}/{}", settings.namespace, settings.name), "caches synced; contending for the leader lease");
    let mut rx = adze_lease::start(client, settings);
    loop {
        let now = *rx.borrow_and_update();
        leading.store(now.leading, Ordering::Relaxed);
        tracing::info!(leading = now.leading, terms = now.terms, "leadership");
        if rx.changed().await.is_err() {
            leading.store(false, Ordering::Relaxed);
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/reference/cli.md's section for this binary is what clap says.
    #[test]
    fn cli_reference_is_current() {
        adze_cli::reference::check_cli_section(
            env!("CARGO_MANIFEST_DIR"),
            "adze-extender",
            &Args::command(),
        );
    }

    #[test]
    fn every_flag_follows_the_convention() {
        adze_cli::assert_follows_convention(Args::command());
    }
}
