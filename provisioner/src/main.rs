//! `adze-provisioner`: Adze's central controller binary. `simulate` runs placement on a
//! scenario file; `run` runs the controllers against a live cluster.

use std::path::PathBuf;
use std::process::ExitCode;

use adze_provisioner::simulate::{self, Report, Scenario, output};
use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "adze-provisioner",
    version,
    about = "Adze: Kubernetes node autoscaling for AWS"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Plan capacity for a scenario file, without a cluster or an AWS account.
    ///
    /// SCENARIO is one multi-document YAML of NodePools, EC2NodeClasses, Nodes, Pods,
    /// Deployments, ReplicaSets, DaemonSets, PodDisruptionBudgets and optionally an
    /// InstanceCatalog (adze.sh/v1alpha1) replacing the embedded EC2 catalog. Pending pods
    /// are placed as the provisioner would place them; the plan is printed.
    Simulate(SimulateArgs),
    /// Run the controllers against the cluster in KUBECONFIG (or the in-cluster config).
    Run(RunArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CloudProviderKind {
    /// No cloud: NodeClaims become Node objects after --boot-delay, with a simulated kubelet.
    Simulated,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

fn duration(s: &str) -> Result<std::time::Duration, String> {
    adze_api::duration::parse_go_duration(s).map_err(|e| e.to_string())
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    #[arg(long, value_enum, default_value_t = CloudProviderKind::Simulated)]
    cloud_provider: CloudProviderKind,
    /// The batch window closes after this long without a new pending pod.
    #[arg(long, value_parser = duration, default_value = "1s")]
    batch_idle_duration: std::time::Duration,
    /// ... or this long after it opened, whichever is first.
    #[arg(long, value_parser = duration, default_value = "10s")]
    batch_max_duration: std::time::Duration,
    /// Simulated cloud: time from launch to the Node object appearing.
    #[arg(long, value_parser = duration, default_value = "2s")]
    boot_delay: std::time::Duration,
    /// A NodeClaim whose node has not registered by then is deleted with its instance.
    #[arg(long, value_parser = duration, default_value = "15m")]
    registration_timeout: std::time::Duration,
    /// Simulated kubelet: how often simulated nodes post their Ready heartbeat.
    #[arg(long, value_parser = duration, default_value = "20s")]
    heartbeat: std::time::Duration,
    #[arg(long, default_value_t = 60)]
    max_instance_types: usize,
    /// Disruption: how often the next drift, expiration, emptiness or consolidation is looked for.
    #[arg(long, value_parser = duration, default_value = "10s")]
    disruption_poll_period: std::time::Duration,
    /// Disruption: wait this long after deciding, then act only if the decision still holds.
    #[arg(long, value_parser = duration, default_value = "15s")]
    disruption_validation_period: std::time::Duration,
    /// Disruption: log and record decisions (events) without acting on them.
    #[arg(long)]
    disruption_dry_run: bool,
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

fn run(args: &RunArgs) -> anyhow::Result<String> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match args.log_format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
    let CloudProviderKind::Simulated = args.cloud_provider;
    let config = adze_provisioner::run::Config {
        batch_idle: args.batch_idle_duration,
        batch_max: args.batch_max_duration,
        boot_delay: args.boot_delay,
        registration_timeout: args.registration_timeout,
        max_instance_types: args.max_instance_types,
        heartbeat: args.heartbeat,
        disruption: adze_provisioner::disruption::Settings {
            poll: args.disruption_poll_period,
            validation: args.disruption_validation_period,
            dry_run: args.disruption_dry_run,
            replacement_timeout: args.registration_timeout,
            max_instance_types: args.max_instance_types,
        },
    };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(adze_provisioner::run::run(config))?;
    Ok(String::new())
}

#[derive(Debug, clap::Args)]
struct SimulateArgs {
    /// The scenario file.
    #[arg(value_name = "SCENARIO.yaml")]
    scenario: PathBuf,
    /// How to print the plan.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Format::Table)]
    output: Format,
    /// Instance types kept per NodeClaim, cheapest first (minValues may keep more).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 60,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    max_instance_types: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// Columns for a person.
    Table,
    /// The plan as JSON, for scripts.
    Json,
}

fn simulate(args: &SimulateArgs) -> anyhow::Result<String> {
    let yaml = std::fs::read_to_string(&args.scenario)
        .with_context(|| format!("reading {}", args.scenario.display()))?;
    let scenario =
        Scenario::parse(&yaml).with_context(|| format!("{}", args.scenario.display()))?;
    let outcome = simulate::run(&scenario, args.max_instance_types as usize);
    Ok(match args.output {
        Format::Table => output::table(&scenario, &outcome.plan, outcome.elapsed),
        Format::Json => {
            let report = Report::new(&outcome.plan, outcome.elapsed);
            serde_json::to_string_pretty(&report)? + "\n"
        }
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Simulate(args) => simulate(args),
        Command::Run(args) => run(args),
    };
    match result {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
