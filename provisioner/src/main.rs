//! `adze-provisioner`: Adze's central controller binary. `simulate` runs placement on a
//! scenario file; `run` (the controller against a live cluster) is still to come.

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
