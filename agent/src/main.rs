//! `adze-agent`: runs on every node (DaemonSet), see docs/agent.md.

use std::path::PathBuf;
use std::time::Duration;

use adze_agent::agent::{Agent, Timing};
use adze_agent::decide::{Policy, RebalanceMode};
use adze_agent::drain::Drainer;
use adze_agent::health::{Checker, HealthConfig};
use adze_agent::imds::{Imds, ImdsConfig};
use adze_agent::node::NodeOps;
use anyhow::Context;
use clap::Parser;

#[derive(Parser)]
#[command(about = "Adze node agent: spot interruptions, rebalance, maintenance, readiness")]
struct Args {
    /// This node's name.
    #[arg(long, env = "NODE_NAME")]
    node_name: String,
    /// Kubeconfig file; in-cluster config (or KUBECONFIG) when absent.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    #[arg(
        long,
        env = "ADZE_IMDS_ENDPOINT",
        default_value = "http://169.254.169.254"
    )]
    imds_endpoint: String,
    /// IMDSv2 session token TTL, seconds (1–21600).
    #[arg(long, default_value_t = 21600)]
    imds_token_ttl: u64,
    /// Bound on each IMDS request, milliseconds.
    #[arg(long, default_value_t = 2000)]
    imds_timeout_ms: u64,
    /// Poll interval, milliseconds.
    #[arg(long, default_value_t = 1000)]
    poll_ms: u64,
    /// Longest wait between polls while IMDS fails, milliseconds.
    #[arg(long, default_value_t = 5000)]
    max_backoff_ms: u64,
    #[arg(long, value_enum, default_value_t = RebalanceMode::Ignore)]
    rebalance: RebalanceMode,
    /// Maintenance drains start this many seconds before the event's NotBefore.
    #[arg(long, default_value_t = 600)]
    maintenance_lead_seconds: i64,
    /// Pods still on the node this many seconds (plus their grace period) before the deadline
    /// are deleted instead of evicted.
    #[arg(long, default_value_t = 5)]
    deadline_margin_seconds: i64,
    /// Readiness heartbeat, seconds.
    #[arg(long, default_value_t = 10)]
    heartbeat_seconds: u64,
    /// Kubelet health URL checked for readiness (e.g. http://127.0.0.1:10248/healthz).
    #[arg(long)]
    kubelet_healthz: Option<String>,
    /// Container runtime socket checked for readiness (e.g. /run/containerd/containerd.sock).
    #[arg(long)]
    runtime_socket: Option<PathBuf>,
    #[arg(long, default_value_t = 64)]
    min_available_memory_mib: u64,
    #[arg(long, default_value_t = 512)]
    min_available_disk_mib: u64,
    #[arg(long, default_value = "/")]
    disk_path: PathBuf,
    /// Serve `/healthz` (liveness: fails once the loop has not turned for
    /// --stale-after-seconds) and `/metrics` here, e.g. 0.0.0.0:10291. Off when absent.
    #[arg(long)]
    health_addr: Option<std::net::SocketAddr>,
    /// How long the loop may go without turning before `/healthz` fails.
    #[arg(long, default_value_t = 60)]
    stale_after_seconds: u64,
}

async fn client(kubeconfig: Option<&PathBuf>) -> anyhow::Result<kube::Client> {
    let config: kube::Config = match kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .context("kubeconfig")?
        }
        None => kube::Config::infer()
            .await
            .context("no kubeconfig or in-cluster config")?,
    };
    // kube's default retry repeats 429s honouring Retry-After (15 times): a PDB refusal would
    // hold one eviction for minutes. The drain asks again every round instead.
    let mut config = config;
    config.default_retry = false;
    kube::Client::try_from(config).context("kubernetes client")
}

fn main() -> anyhow::Result<()> {
    // One thread: the agent does little, and a small footprint is part of its job.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?
        .block_on(run())
}

async fn run() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = client(args.kubeconfig.as_ref()).await?;
    let imds = Imds::new(ImdsConfig {
        endpoint: args.imds_endpoint.clone(),
        token_ttl: Duration::from_secs(args.imds_token_ttl),
        timeout: Duration::from_millis(args.imds_timeout_ms),
    })
    .context("--imds-token-ttl")?;
    let stats = std::sync::Arc::new(adze_agent::status::Stats::default());
    if let Some(addr) = args.health_addr {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("--health-addr {addr}"))?;
        tracing::info!(%addr, "serving /healthz and /metrics");
        tokio::spawn(adze_agent::status::serve(
            listener,
            stats.clone(),
            Duration::from_secs(args.stale_after_seconds),
        ));
    }
    let agent = Agent {
        stats,
        imds,
        ops: NodeOps {
            client: client.clone(),
            node_name: args.node_name.clone(),
        },
        drainer: Drainer::new(
            client,
            args.node_name.clone(),
            chrono::Duration::seconds(args.deadline_margin_seconds),
        ),
        checker: Checker::new(HealthConfig {
            kubelet_healthz: args.kubelet_healthz,
            runtime_socket: args.runtime_socket,
            min_available_memory: args.min_available_memory_mib << 20,
            min_available_disk: args.min_available_disk_mib << 20,
            disk_path: args.disk_path,
            timeout: Duration::from_secs(1),
        }),
        policy: Policy {
            rebalance: args.rebalance,
            maintenance_lead: chrono::Duration::seconds(args.maintenance_lead_seconds),
            ..Policy::default()
        },
        timing: Timing {
            poll: Duration::from_millis(args.poll_ms),
            max_backoff: Duration::from_millis(args.max_backoff_ms),
            heartbeat: Duration::from_secs(args.heartbeat_seconds),
        },
    };
    tracing::info!(node = %args.node_name, imds = %args.imds_endpoint, "adze-agent starting");
    let (tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        let _ = tx.send(true);
    });
    agent.run(rx).await;
    Ok(())
}
