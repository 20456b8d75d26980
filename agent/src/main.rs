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
use clap::{CommandFactory, Parser};

#[derive(Parser)]
#[command(
    name = "adze-agent",
    version,
    about = "Adze node agent: spot interruptions, rebalance, maintenance, readiness"
)]
struct Args {
    /// This node's name (the chart sets ADZE_NODE_NAME from the downward API).
    #[arg(long, env = "ADZE_NODE_NAME")]
    node_name: String,
    /// Kubeconfig file; in-cluster config (or KUBECONFIG) when absent.
    #[arg(long, env = "ADZE_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// The EC2 instance metadata service (IMDSv2) to poll for interruption, rebalance and
    /// maintenance notices.
    #[arg(
        long,
        env = "ADZE_IMDS_ENDPOINT",
        default_value = "http://169.254.169.254"
    )]
    imds_endpoint: String,
    /// IMDSv2 session token TTL (1s–6h).
    #[arg(long, env = "ADZE_IMDS_TOKEN_TTL", value_parser = adze_cli::duration, default_value = "6h")]
    imds_token_ttl: Duration,
    /// Bound on each IMDS request.
    #[arg(long, env = "ADZE_IMDS_TIMEOUT", value_parser = adze_cli::duration, default_value = "2s")]
    imds_timeout: Duration,
    /// How often IMDS is polled.
    #[arg(long, env = "ADZE_POLL_INTERVAL", value_parser = adze_cli::duration, default_value = "1s")]
    poll_interval: Duration,
    /// Longest wait between polls while IMDS fails.
    #[arg(long, env = "ADZE_MAX_BACKOFF", value_parser = adze_cli::duration, default_value = "5s")]
    max_backoff: Duration,
    /// What to do on a rebalance recommendation (the instance is at elevated risk of a spot
    /// interruption).
    #[arg(long, env = "ADZE_REBALANCE", value_enum, default_value_t = RebalanceMode::Ignore)]
    rebalance: RebalanceMode,
    /// Maintenance drains start this long before the event's NotBefore.
    #[arg(long, env = "ADZE_MAINTENANCE_LEAD", value_parser = adze_cli::duration, default_value = "10m")]
    maintenance_lead: Duration,
    /// How often the AdzeAgentReady condition is posted.
    #[arg(long, env = "ADZE_HEARTBEAT", value_parser = adze_cli::duration, default_value = "10s")]
    heartbeat: Duration,
    /// Kubelet health URL checked for readiness (e.g. http://127.0.0.1:10248/healthz).
    #[arg(long, env = "ADZE_KUBELET_HEALTHZ")]
    kubelet_healthz: Option<String>,
    /// Container runtime socket checked for readiness (e.g. /run/containerd/containerd.sock).
    #[arg(long, env = "ADZE_RUNTIME_SOCKET")]
    runtime_socket: Option<PathBuf>,
    /// Readiness needs at least this much available memory (a quantity, e.g. 64Mi).
    #[arg(long, env = "ADZE_MIN_AVAILABLE_MEMORY", value_parser = adze_cli::bytes, default_value = "64Mi")]
    min_available_memory: u64,
    /// Readiness needs at least this much free disk on --disk-path (a quantity, e.g. 512Mi).
    #[arg(long, env = "ADZE_MIN_AVAILABLE_DISK", value_parser = adze_cli::bytes, default_value = "512Mi")]
    min_available_disk: u64,
    /// The filesystem whose free space --min-available-disk checks.
    #[arg(long, env = "ADZE_DISK_PATH", default_value = "/")]
    disk_path: PathBuf,
    /// Serve `/healthz` (liveness: fails once the loop has not turned for --stale-after) and
    /// `/metrics` here, e.g. 0.0.0.0:10291. Off when absent.
    #[arg(long, env = "ADZE_HEALTH_ADDR")]
    health_addr: Option<std::net::SocketAddr>,
    /// How long the loop may go without turning before `/healthz` fails.
    #[arg(long, env = "ADZE_STALE_AFTER", value_parser = adze_cli::duration, default_value = "1m")]
    stale_after: Duration,
    #[command(flatten)]
    log: adze_cli::LogArgs,
}

/// Flags renamed when the binaries agreed on one convention (Go durations, quantities).
const RENAMED: [(&str, &str); 8] = [
    (
        "--imds-timeout-ms",
        "--imds-timeout (a Go duration, e.g. 2s)",
    ),
    ("--poll-ms", "--poll-interval (a Go duration, e.g. 1s)"),
    ("--max-backoff-ms", "--max-backoff (a Go duration, e.g. 5s)"),
    (
        "--maintenance-lead-seconds",
        "--maintenance-lead (a Go duration, e.g. 10m)",
    ),
    (
        "--heartbeat-seconds",
        "--heartbeat (a Go duration, e.g. 10s)",
    ),
    (
        "--stale-after-seconds",
        "--stale-after (a Go duration, e.g. 1m)",
    ),
    (
        "--min-available-memory-mib",
        "--min-available-memory (a quantity, e.g. 64Mi)",
    ),
    (
        "--min-available-disk-mib",
        "--min-available-disk (a quantity, e.g. 512Mi)",
    ),
];

/// The agent no longer deletes pods at the deadline (its role has no pod `delete`), so the
/// margin that timed those deletes is gone; given anyway, it is refused rather than ignored.
const REMOVED_FLAGS: [&str; 2] = ["--deadline-margin", "--deadline-margin-seconds"];
const REMOVED_ENV: &str = "ADZE_DEADLINE_MARGIN";

/// The refusal for a removed flag among `args` or the removed variable in the environment.
fn removed_in(args: impl IntoIterator<Item = String>, env_set: bool) -> Option<String> {
    let why = "the agent no longer deletes pods at the deadline, it only evicts (docs/agent.md)";
    for arg in args {
        if arg == "--" {
            break;
        }
        if let Some(flag) = REMOVED_FLAGS
            .iter()
            .find(|f| arg == **f || arg.starts_with(&format!("{f}=")))
        {
            return Some(format!("{flag} was removed: {why}"));
        }
    }
    env_set.then(|| format!("{REMOVED_ENV} was removed: {why}"))
}

async fn client(kubeconfig: Option<&PathBuf>) -> anyhow::Result<kube::Client> {
    let mut config = adze_cli::kube_config(kubeconfig.map(|p| p.as_path()), "adze-agent").await?;
    // kube's default retry repeats 429s honouring Retry-After (15 times): a PDB refusal would
    // hold one eviction for minutes. The drain asks again every round instead.
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
    adze_cli::refuse_renamed(Args::command(), &RENAMED);
    if let Some(msg) = removed_in(
        std::env::args().skip(1),
        std::env::var_os(REMOVED_ENV).is_some(),
    ) {
        Args::command()
            .error(clap::error::ErrorKind::UnknownArgument, msg)
            .exit();
    }
    let args = Args::parse();
    args.log.init();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = client(args.kubeconfig.as_ref()).await?;
    let imds = Imds::new(ImdsConfig {
        endpoint: args.imds_endpoint.clone(),
        token_ttl: args.imds_token_ttl,
        timeout: args.imds_timeout,
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
            args.stale_after,
        ));
    }
    let agent = Agent {
        stats,
        imds,
        ops: NodeOps {
            client: client.clone(),
            node_name: args.node_name.clone(),
        },
        drainer: Drainer::new(client, args.node_name.clone()),
        checker: Checker::new(HealthConfig {
            kubelet_healthz: args.kubelet_healthz,
            runtime_socket: args.runtime_socket,
            min_available_memory: args.min_available_memory,
            min_available_disk: args.min_available_disk,
            disk_path: args.disk_path,
            timeout: Duration::from_secs(1),
        }),
        policy: Policy {
            rebalance: args.rebalance,
            maintenance_lead: chrono::Duration::from_std(args.maintenance_lead)
                .context("--maintenance-lead")?,
            ..Policy::default()
        },
        timing: Timing {
            poll: args.poll_interval,
            max_backoff: args.max_backoff,
            heartbeat: args.heartbeat,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/reference/cli.md's section for this binary is what clap says.
    #[test]
    fn cli_reference_is_current() {
        adze_cli::reference::check_cli_section(
            env!("CARGO_MANIFEST_DIR"),
            "adze-agent",
            &Args::command(),
        );
    }

    #[test]
    fn every_flag_follows_the_convention() {
        adze_cli::assert_follows_convention(Args::command());
    }

    #[test]
    fn the_removed_deadline_margin_is_refused_naming_it() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for (given, named) in [
            (
                &["--deadline-margin", "5s"][..],
                "--deadline-margin was removed",
            ),
            (
                &["--deadline-margin=5s"][..],
                "--deadline-margin was removed",
            ),
            (
                &["--deadline-margin-seconds=5"][..],
                "--deadline-margin-seconds was removed",
            ),
        ] {
            let msg = removed_in(args(given), false).expect("refused");
            assert!(msg.starts_with(named), "{msg}");
        }
        let msg = removed_in(args(&["--node-name", "n"]), true).expect("refused");
        assert!(msg.starts_with("ADZE_DEADLINE_MARGIN was removed"), "{msg}");
        assert_eq!(removed_in(args(&["--node-name", "n"]), false), None);
        assert_eq!(removed_in(args(&["--", "--deadline-margin"]), false), None);
        // clap itself knows no such flag any more.
        assert!(
            Args::try_parse_from(["adze-agent", "--node-name", "n", "--deadline-margin", "5s"])
                .is_err()
        );
    }
}
