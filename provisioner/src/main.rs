//! `adze-provisioner`: Adze's central controller binary. `simulate` runs placement on a
//! scenario file; `run` runs the controllers against a live cluster.

use std::path::PathBuf;
use std::process::ExitCode;

use adze_provisioner::simulate::{self, Report, Scenario, output};
use adze_provisioner::snapshot::PoolSource;
use anyhow::Context;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

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

// Parsed once at startup; the size of the `run` flags does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Plan capacity, or disruption, for a scenario file, without a cluster or an AWS account.
    ///
    /// SCENARIO is one multi-document YAML of NodePools, EC2NodeClasses, Nodes, NodeClaims,
    /// Pods, Deployments, ReplicaSets, DaemonSets, PodDisruptionBudgets and optionally an
    /// InstanceCatalog (adze.sh/v1alpha1) replacing the embedded EC2 catalog. Pending pods
    /// are placed as the provisioner would place them; the plan is printed. Exits 2 when pods
    /// are left unschedulable (unless --allow-unschedulable), 1 on a bad scenario, else 0.
    /// With --disruption, the existing nodes are planned instead, as one pass of the
    /// disruption controller would at --now; exits 3 when the plan has commands and
    /// --fail-on-commands is given, 1 on a bad scenario, else 0.
    Simulate(SimulateArgs),
    /// Run the controllers against the cluster in KUBECONFIG (or the in-cluster config).
    Run(Box<RunArgs>),
    /// Convert Karpenter NodePools and EC2NodeClasses (and v1alpha5 Provisioners and
    /// AWSNodeTemplates) into Adze's.
    ///
    /// Every Karpenter API generation is read: karpenter.sh/v1, v1beta1 and v1alpha5,
    /// karpenter.k8s.aws/v1, v1beta1 and v1alpha1. Reads what `kubectl get ... -o yaml` or `-o json` prints (a List, several documents or
    /// single objects). Prints the converted YAML on stdout and, on stderr, what was changed
    /// and what could not be carried over (lines marked ACTION need a person). Exits 1 on
    /// unreadable input; 2 when some item needs action, some object was not converted, or
    /// nothing was converted (unless --allow-actions); else 0, so
    /// `migrate ... > adze.yaml && kubectl apply -f adze.yaml` applies only a clean conversion.
    Migrate(MigrateArgs),
    /// Read the cluster in KUBECONFIG (or the in-cluster config) read-only and print it as a
    /// scenario file that `simulate` and `simulate --disruption` replay offline.
    ///
    /// Reads Nodes, Pods (terminal ones skipped), PodDisruptionBudgets, DaemonSets,
    /// PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes and the autoscaler
    /// objects: Adze's NodePools, EC2NodeClasses, NodeClaims and NodeOverlays; else
    /// Karpenter's (karpenter.sh v1 or v1beta1) converted by `migrate`'s rules, its report on
    /// stderr; else none, and one NodePool is inferred per instance family, capacity type and
    /// custom labels of the nodes (said so on stderr and in the file); with --vpa-predictions,
    /// VerticalPodAutoscalers. Lists are read 500 objects a page. Needs only get/list
    /// (manifests/rbac/snapshot-reader.yaml). Exits 1 when a list fails (a 403 names the
    /// resource), else 0.
    Snapshot(SnapshotArgs),
}

#[cfg(feature = "controller")]
#[derive(Debug, clap::Args)]
struct SnapshotArgs {
    /// Kubeconfig file; in-cluster config (or KUBECONFIG) when absent.
    #[arg(long, env = "ADZE_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// Write the scenario to FILE instead of stdout.
    #[arg(long, env = "ADZE_SAVE", value_name = "FILE")]
    save: Option<PathBuf>,
    /// Where the NodePools come from.
    #[arg(long, env = "ADZE_NODEPOOLS_FROM", value_enum, default_value_t = PoolSource::Auto)]
    nodepools_from: PoolSource,
    /// Also read the cluster's VerticalPodAutoscalers (autoscaling.k8s.io/v1) into the
    /// scenario, for `simulate --disruption --vpa-predictions FILE` (simulate refuses a file
    /// holding them without that flag). A cluster without the VPA API gives none, with a note.
    #[arg(long, env = "ADZE_VPA_PREDICTIONS")]
    vpa_predictions: bool,
}

/// Built without the `controller` feature: `snapshot` is refused by name, as `run` is.
#[cfg(not(feature = "controller"))]
#[derive(Debug, clap::Args)]
struct SnapshotArgs {
    #[arg(hide = true, trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

/// Why the lean build cannot read a cluster, naming the feature.
#[cfg(not(feature = "controller"))]
const NO_CLIENT: &str = "this adze-provisioner was built without the `controller` feature (cargo build --no-default-features), which holds the Kubernetes client; build it with default features to read a cluster";

/// The cluster read into a snapshot; the summary, notes and `migrate`'s report go to stderr.
#[cfg(feature = "controller")]
fn read_cluster(
    kubeconfig: Option<&std::path::Path>,
    from: PoolSource,
    vpas: bool,
) -> anyhow::Result<adze_provisioner::snapshot::Snapshot> {
    let collected = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(async {
            let config = adze_cli::kube_config(kubeconfig, "adze-provisioner-snapshot").await?;
            let client = kube::Client::try_from(config)?;
            anyhow::Ok(adze_provisioner::snapshot::live::read(&client, from, vpas).await?)
        })?;
    let snap = adze_provisioner::snapshot::assemble(collected);
    if let Some(report) = &snap.migration_report {
        eprint!("{report}");
    }
    eprint!("{}", snap.summary());
    for n in &snap.notes {
        eprintln!("  note: {n}");
    }
    Ok(snap)
}

#[cfg(feature = "controller")]
fn snapshot(args: &SnapshotArgs) -> anyhow::Result<String> {
    let snap = read_cluster(
        args.kubeconfig.as_deref(),
        args.nodepools_from,
        args.vpa_predictions,
    )?;
    let yaml = snap.yaml();
    match &args.save {
        Some(path) => {
            std::fs::write(path, &yaml).with_context(|| format!("writing {}", path.display()))?;
            eprintln!("snapshot written to {}", path.display());
            Ok(String::new())
        }
        None => Ok(yaml),
    }
}

#[cfg(not(feature = "controller"))]
fn snapshot(_: &SnapshotArgs) -> anyhow::Result<String> {
    anyhow::bail!("snapshot: {NO_CLIENT}")
}

#[derive(Debug, clap::Args)]
struct MigrateArgs {
    /// YAML or JSON files holding Karpenter NodePools and EC2NodeClasses of any API
    /// generation, or v1alpha5 Provisioners and AWSNodeTemplates (`-` reads stdin).
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,
    /// Exit 0 even when items need action or were not converted (the output and the report
    /// are printed either way).
    #[arg(long, env = "ADZE_ALLOW_ACTIONS")]
    allow_actions: bool,
    /// Give every converted EC2NodeClass that names a `role` this role instead, e.g. the
    /// stack's node role AdzeNode-<cluster> (each rewrite is reported with the old role).
    /// Without it Karpenter's role is kept, and the stack must list it in ExtraNodeRoleArns.
    #[arg(long, env = "ADZE_NODE_ROLE", value_name = "ROLE", value_parser = node_role_name)]
    node_role: Option<String>,
}

/// An IAM role name (what `role` holds): 1-64 of IAM's name characters.
fn node_role_name(s: &str) -> Result<String, String> {
    let ok = (1..=64).contains(&s.len())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "+=,.@_-".contains(c));
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!(
            "{s:?} is not an IAM role name (1-64 of A-Z a-z 0-9 +=,.@_-; the name, not the ARN)"
        ))
    }
}

/// `migrate`'s exit status when the conversion is incomplete: some item needs a person.
const EXIT_NEEDS_ACTION: u8 = 2;

fn migrate(args: &MigrateArgs) -> anyhow::Result<(String, ExitCode)> {
    let mut all = adze_provisioner::migrate::Migration::default();
    let options = adze_provisioner::migrate::Options {
        node_role: args.node_role.clone(),
    };
    for file in &args.files {
        let text = if file.as_os_str() == "-" {
            std::io::read_to_string(std::io::stdin()).context("reading stdin")?
        } else {
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?
        };
        let m = adze_provisioner::migrate::migrate_with(&text, &options)
            .with_context(|| format!("{}", file.display()))?;
        all.objects.extend(m.objects);
        all.notes.extend(m.notes);
        all.not_converted.extend(m.not_converted);
    }
    eprint!("{}", all.report());
    let code = if all.incomplete() && !args.allow_actions {
        eprintln!(
            "exit status {EXIT_NEEDS_ACTION}: {} item(s) need action, {} object(s) not converted, {} converted (--allow-actions to exit 0)",
            all.actions(),
            all.not_converted.len(),
            all.objects.len()
        );
        ExitCode::from(EXIT_NEEDS_ACTION)
    } else {
        ExitCode::SUCCESS
    };
    Ok((all.yaml(), code))
}

#[cfg(feature = "controller")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CloudProviderKind {
    /// No cloud: NodeClaims become Node objects after --boot-delay, with a simulated kubelet.
    Simulated,
    /// EC2 (or an AWS-compatible endpoint such as moto with --aws-endpoint).
    Aws,
}

#[cfg(feature = "controller")]
fn duration(s: &str) -> Result<std::time::Duration, String> {
    adze_cli::duration(s)
}

#[cfg(feature = "controller")]
#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Where nodes come from. Required, with no default: `simulated` pointed at a real
    /// cluster would create Node objects no machine backs and report their pods Running.
    #[arg(long, env = "ADZE_CLOUD_PROVIDER", value_enum)]
    cloud_provider: CloudProviderKind,
    /// Kubeconfig file; in-cluster config (or KUBECONFIG) when absent.
    #[arg(long, env = "ADZE_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// The batch window closes after this long without a new pending pod.
    #[arg(long, env = "ADZE_BATCH_IDLE_DURATION", value_parser = duration, default_value = "1s")]
    batch_idle_duration: std::time::Duration,
    /// ... or this long after it opened, whichever is first.
    #[arg(long, env = "ADZE_BATCH_MAX_DURATION", value_parser = duration, default_value = "10s")]
    batch_max_duration: std::time::Duration,
    /// Simulated cloud: time from launch to the Node object appearing.
    #[arg(long, env = "ADZE_BOOT_DELAY", value_parser = duration, default_value = "2s")]
    boot_delay: std::time::Duration,
    /// A NodeClaim whose node has not registered by then is deleted with its instance.
    #[arg(long, env = "ADZE_REGISTRATION_TIMEOUT", value_parser = duration, default_value = "15m")]
    registration_timeout: std::time::Duration,
    /// A NodeClaim the cloud has not launched by then (every attempt refused: permissions,
    /// image, quota) is deleted and its pods planned again.
    #[arg(long, env = "ADZE_LAUNCH_TIMEOUT", value_parser = duration, default_value = "5m")]
    launch_timeout: std::time::Duration,
    /// Simulated kubelet: how often simulated nodes post their Ready heartbeat.
    #[arg(long, env = "ADZE_HEARTBEAT", value_parser = duration, default_value = "20s")]
    heartbeat: std::time::Duration,
    /// Instance types kept per NodeClaim, cheapest first (minValues may keep more).
    #[arg(long, env = "ADZE_MAX_INSTANCE_TYPES", default_value_t = 60)]
    max_instance_types: usize,
    /// Disruption: how often the next drift, expiration, emptiness or consolidation is looked
    /// for while there is nothing to do; after a disruption the next look comes within 1s, and
    /// while the cluster settles the looks back off from 1s to this.
    #[arg(long, env = "ADZE_DISRUPTION_POLL_PERIOD", value_parser = duration, default_value = "10s")]
    disruption_poll_period: std::time::Duration,
    /// Disruption: wait this long after deciding, then act only if the decision still holds.
    #[arg(long, env = "ADZE_DISRUPTION_VALIDATION_PERIOD", value_parser = duration, default_value = "15s")]
    disruption_validation_period: std::time::Duration,
    /// Disruption: log and record decisions (events) without acting on them.
    #[arg(long, env = "ADZE_DISRUPTION_DRY_RUN")]
    disruption_dry_run: bool,
    /// Node repair (Karpenter's NodeRepair feature gate, off by default as there): replace a
    /// node whose Ready (False/Unknown) or node-monitoring-agent condition stays unhealthy
    /// past its toleration, unless over 20 % of its NodePool is unhealthy. As in Karpenter
    /// v1.15, repair is a voluntary disruption: the first method (before drift and
    /// consolidation), held by the NodePool's disruption budgets for reason Unhealthy.
    #[arg(long, env = "ADZE_NODE_REPAIR")]
    node_repair: bool,
    /// With --node-repair: repair as before Karpenter v1.15, forceful, outside disruption
    /// budgets (Karpenter's --legacy-node-repair). Refused without --node-repair.
    #[arg(long, env = "ADZE_LEGACY_NODE_REPAIR")]
    legacy_node_repair: bool,
    /// With --node-repair: reboot an unhealthy node's instance first (ec2:RebootInstances)
    /// and replace it only if still unhealthy 20 minutes later or if the reboot is refused;
    /// once per episode, within the Unhealthy budget (Karpenter's RebootForRepair gate).
    /// Refused without --node-repair and with --legacy-node-repair.
    #[arg(long, env = "ADZE_REBOOT_FOR_REPAIR")]
    reboot_for_repair: bool,
    /// Drift, and budgeted repair (--node-repair), of a node in a capacity-constrained
    /// NodePool: a static one at its limits.nodes, a reserved node whose NodePool may only use
    /// its full capacity reservations, or a node whose pods fit only once it no longer counts
    /// against its NodePool's limits (Karpenter's TerminateFirstDrift feature gate, off by
    /// default here): delete the node first and let the freed room be refilled, instead of
    /// waiting for room to launch its replacement first.
    #[arg(long, env = "ADZE_TERMINATE_FIRST_DRIFT")]
    terminate_first_drift: bool,
    /// Pod deletion cost (Karpenter's PodDeletionCostManagement feature gate, off by default
    /// as there): at most once a minute, write controller.kubernetes.io/pod-deletion-cost on
    /// ReplicaSet pods of NodePools' nodes, lowest on the nodes disruption would take first,
    /// so a Deployment scaling in empties those. Overwrites or removes values already on
    /// those pods. Needs RBAC patch on pods (the chart's provisioner.podDeletionCost).
    #[arg(long, env = "ADZE_POD_DELETION_COST")]
    pod_deletion_cost: bool,
    /// VPA predictions (Karpenter's PredictionEnabled feature gate, off by default as there):
    /// list the cluster's VerticalPodAutoscalers (autoscaling.k8s.io/v1) every 30 s and plan
    /// the pods disruption moves (drift, repair, consolidation) with their recommendation's
    /// target, as the VPA's webhook will recreate them. A cluster that serves no VPA API is
    /// looked at again every minute, and meanwhile pods are planned as they are. Needs RBAC
    /// list on verticalpodautoscalers (the chart's provisioner.vpaPredictions).
    #[arg(long, env = "ADZE_VPA_PREDICTIONS")]
    vpa_predictions: bool,
    #[command(flatten)]
    policies: adze_provisioner::rules::Policies,
    #[command(flatten)]
    log: adze_cli::LogArgs,
    /// Where /metrics, /healthz and /readyz are served (port 0: any free port, logged).
    #[arg(long, env = "ADZE_METRICS_ADDR", default_value = "0.0.0.0:8080")]
    metrics_addr: std::net::SocketAddr,
    /// A cloud instance tagged as ours that no NodeClaim owns is terminated after this long.
    #[arg(long, env = "ADZE_GARBAGE_COLLECTION_GRACE", value_parser = duration, default_value = "5m")]
    garbage_collection_grace: std::time::Duration,
    /// New nodes also carry Karpenter's well-known labels (karpenter.sh/capacity-type,
    /// karpenter.sh/nodepool, karpenter.k8s.aws/instance-*), and pods selecting them are
    /// provisioned for, so workloads written for Karpenter keep working.
    #[arg(long, env = "ADZE_KARPENTER_LABELS")]
    karpenter_labels: bool,
    /// Plan for CapacityBuffers (autoscaling.x-k8s.io/v1alpha1): their placeholder pods
    /// take part in every provisioning pass and disruption keeps their room (alpha, off by
    /// default like Karpenter's CapacityBuffer feature gate; docs/capacitybuffers.md).
    #[arg(long, env = "ADZE_CAPACITY_BUFFERS")]
    capacity_buffers: bool,
    /// ARC zonal shift (Karpenter's ENABLE_ZONAL_SHIFT, off by default as there): read the
    /// EKS cluster's zonal shifts every 30 s; while one is active no capacity is launched in
    /// its zone and that zone's nodes are not voluntarily disrupted (docs/zonal-shift.md).
    /// AWS needs zonal shift enabled on the cluster and arc-zonal-shift:GetManagedResource.
    #[arg(long, env = "ADZE_ENABLE_ZONAL_SHIFT")]
    enable_zonal_shift: bool,
    /// Simulated cloud: launches of this offering fail with InsufficientCapacity
    /// (TYPE:ZONE:CAPACITYTYPE, each part a value or *; repeatable, or comma-separated).
    #[arg(
        long,
        env = "ADZE_SIMULATED_UNAVAILABLE",
        value_name = "TYPE:ZONE:CAPACITYTYPE",
        value_delimiter = ','
    )]
    simulated_unavailable: Vec<adze_provisioner::cloud::simulated::OfferingPattern>,
    /// Simulated cloud: launch an instance by writing its record (size, reservations, labels,
    /// taints for its kubelet) to DIR/NAME.json and terminate it by removing the file; no Node
    /// is created and the simulated kubelet does not run. Something else boots a kubelet per
    /// record (the e2e's kubemark hollow nodes); it registers the Node by providerID.
    #[arg(long, env = "ADZE_SIMULATED_INSTANCE_DIR", value_name = "DIR")]
    simulated_instance_dir: Option<PathBuf>,
    /// Simulated cloud: the cluster's ARC zonal shifts, a JSON list of {"awayFrom": ZONE,
    /// "expiryTime": RFC3339} read again at every reading (no file: no shift). Needs
    /// --enable-zonal-shift.
    #[arg(long, env = "ADZE_SIMULATED_ZONAL_SHIFTS", value_name = "FILE")]
    simulated_zonal_shifts: Option<PathBuf>,
    // The controllers run only on the replica holding the Lease.
    #[command(flatten)]
    leader: adze_lease::cli::LeaderArgs,
    #[command(flatten)]
    aws: AwsArgs,
}

#[cfg(feature = "controller")]
impl RunArgs {
    /// `--simulated-instance-dir` belongs to the simulated cloud, and with it the simulated
    /// node's boot delay and heartbeat mean nothing: refused by name rather than ignored.
    fn instance_dir_conflict(&self, matches: &clap::ArgMatches) -> Option<String> {
        if self.cloud_provider != CloudProviderKind::Aws
            && matches!(
                matches.value_source("security_group_refresh_interval"),
                Some(
                    clap::parser::ValueSource::CommandLine | clap::parser::ValueSource::EnvVariable
                )
            )
        {
            return Some(
                "--security-group-refresh-interval has no effect without --cloud-provider aws (only EC2's security groups are resolved)".into(),
            );
        }
        if self.simulated_zonal_shifts.is_some() {
            if self.cloud_provider != CloudProviderKind::Simulated {
                return Some(
                    "--simulated-zonal-shifts needs --cloud-provider simulated (AWS reads ARC itself)".into(),
                );
            }
            if !self.enable_zonal_shift {
                return Some(
                    "--simulated-zonal-shifts has no effect without --enable-zonal-shift".into(),
                );
            }
        }
        self.simulated_instance_dir.as_ref()?;
        if self.cloud_provider != CloudProviderKind::Simulated {
            return Some(
                "--simulated-instance-dir needs --cloud-provider simulated (it is where the simulated cloud keeps its instances)".into(),
            );
        }
        ["boot_delay", "heartbeat"].iter().find_map(|id| {
            let flag = format!("--{}", id.replace('_', "-"));
            matches!(
                matches.value_source(id),
                Some(clap::parser::ValueSource::CommandLine | clap::parser::ValueSource::EnvVariable)
            )
            .then(|| format!("{flag} has no effect with --simulated-instance-dir: the kubelet booted for each instance record registers and heartbeats the Node"))
        })
    }
}

/// `--cloud-provider aws` settings.
#[cfg(feature = "controller")]
#[derive(Debug, clap::Args)]
struct AwsArgs {
    /// Send every AWS call here instead of AWS (e.g. a local moto server).
    #[arg(long, env = "ADZE_AWS_ENDPOINT")]
    aws_endpoint: Option<String>,
    /// The AWS region. With `--cloud-provider simulated`, the region whose embedded catalog
    /// (zones, offered types, prices) the simulated cloud launches from.
    #[arg(long, env = "ADZE_REGION", default_value = "us-east-1")]
    region: String,
    /// Instances are tagged kubernetes.io/cluster/NAME=owned.
    #[arg(long, env = "ADZE_CLUSTER_NAME", default_value = "adze")]
    cluster_name: String,
    /// The apiserver URL nodes join, written into user data (default: EKS DescribeCluster).
    #[arg(long, env = "ADZE_CLUSTER_ENDPOINT")]
    cluster_endpoint: Option<String>,
    /// Base64 PEM of the cluster CA, written into user data (default: EKS DescribeCluster,
    /// else this pod's service-account CA).
    #[arg(long, env = "ADZE_CLUSTER_CA")]
    cluster_ca: Option<String>,
    /// The cluster's service CIDR; nodeadm requires it and the cluster DNS address is its
    /// tenth address (default: EKS DescribeCluster).
    #[arg(long, env = "ADZE_SERVICE_CIDR")]
    service_cidr: Option<String>,
    /// SSM prefix of the AL2023/Bottlerocket image parameters.
    #[arg(long, env = "ADZE_SSM_PREFIX", default_value = "/aws/service")]
    ssm_prefix: String,
    /// Kubernetes MAJOR.MINOR in the image parameter paths (default: the API server's own).
    #[arg(long, env = "ADZE_KUBERNETES_VERSION")]
    kubernetes_version: Option<String>,
    /// SQS queue (name or URL) receiving EventBridge interruption events; polled with any
    /// --cloud-provider (uses --aws-endpoint and --region).
    #[arg(long, env = "ADZE_INTERRUPTION_QUEUE")]
    interruption_queue: Option<String>,
    /// How long an EC2NodeClass's resolved security groups are reused before
    /// DescribeSecurityGroups is called again (Karpenter's `--security-group-refresh-interval`,
    /// default 1m there): longer means fewer EC2 calls and a newly tagged group seen later.
    /// 30s (the resolve loop's period, shorter could not take effect) to 24h.
    #[arg(long, env = "ADZE_SECURITY_GROUP_REFRESH_INTERVAL", value_parser = security_group_refresh_interval, default_value = "30s")]
    security_group_refresh_interval: std::time::Duration,
}

/// `--security-group-refresh-interval`: a duration between the class resolve loop's period
/// (a shorter one could not take effect) and a day (a longer one leaves groups stale for
/// longer than anyone would notice them missing).
#[cfg(feature = "controller")]
fn security_group_refresh_interval(s: &str) -> Result<std::time::Duration, String> {
    const MIN: std::time::Duration = std::time::Duration::from_secs(30);
    const MAX: std::time::Duration = std::time::Duration::from_secs(24 * 3600);
    let d = duration(s)?;
    if !(MIN..=MAX).contains(&d) {
        return Err(format!(
            "{s:?} is outside 30s..24h: EC2NodeClasses are resolved every 30s, so a shorter interval could not take effect"
        ));
    }
    Ok(d)
}

/// The EC2 provider's and the interruption queue's options from the flags.
#[cfg(feature = "aws")]
fn cloud_options(
    args: &RunArgs,
) -> anyhow::Result<(
    Option<adze_provisioner::run::AwsOptions>,
    Option<adze_provisioner::run::QueueOptions>,
)> {
    let aws = (args.cloud_provider == CloudProviderKind::Aws).then(|| adze_aws::runtime::Options {
        endpoint: args.aws.aws_endpoint.clone(),
        region: args.aws.region.clone(),
        cluster_name: args.aws.cluster_name.clone(),
        join: adze_aws::cluster::Overrides {
            endpoint: args.aws.cluster_endpoint.clone(),
            ca: args.aws.cluster_ca.clone(),
            service_cidr: args.aws.service_cidr.clone(),
            version: args.aws.kubernetes_version.clone(),
        },
        ssm_prefix: args.aws.ssm_prefix.clone(),
        security_group_refresh_interval: args.aws.security_group_refresh_interval,
    });
    let interruption =
        args.aws
            .interruption_queue
            .clone()
            .map(|queue| adze_aws::runtime::QueueOptions {
                queue,
                endpoint: args.aws.aws_endpoint.clone(),
                region: args.aws.region.clone(),
            });
    Ok((aws, interruption))
}

/// Built without the `aws` feature: the flags that need it are refused by name.
#[cfg(all(feature = "controller", not(feature = "aws")))]
fn cloud_options(
    args: &RunArgs,
) -> anyhow::Result<(
    Option<adze_provisioner::run::AwsOptions>,
    Option<adze_provisioner::run::QueueOptions>,
)> {
    if args.cloud_provider == CloudProviderKind::Aws {
        anyhow::bail!(
            "--cloud-provider aws: this adze-provisioner was built without the `aws` feature (cargo build --no-default-features); build it with default features"
        );
    }
    if args.aws.interruption_queue.is_some() {
        anyhow::bail!(
            "--interruption-queue: this adze-provisioner was built without the `aws` feature; build it with default features"
        );
    }
    Ok((None, None))
}

#[cfg(feature = "controller")]
fn run(args: &RunArgs) -> anyhow::Result<String> {
    args.log.init();
    let (aws, interruption) = cloud_options(args)?;
    // The simulated cloud's catalog is the region's embedded one: an unknown region is
    // refused before anything starts.
    let simulated_catalog = if args.cloud_provider == CloudProviderKind::Simulated {
        adze_scheduling::catalog::regions::embedded_in(&args.aws.region).context("--region")?
    } else {
        Vec::new()
    };
    let config = adze_provisioner::run::Config {
        batch_idle: args.batch_idle_duration,
        batch_max: args.batch_max_duration,
        boot_delay: args.boot_delay,
        registration_timeout: args.registration_timeout,
        launch_timeout: args.launch_timeout,
        max_instance_types: args.max_instance_types,
        heartbeat: args.heartbeat,
        leader_election: args
            .leader
            .settings("adze-provisioner")
            .map_err(anyhow::Error::msg)?,
        metrics_addr: args.metrics_addr,
        kubeconfig: args.kubeconfig.clone(),
        aws,
        interruption,
        garbage_grace: args.garbage_collection_grace,
        karpenter_labels: args.karpenter_labels,
        capacity_buffers: args.capacity_buffers,
        zonal_shift: args.enable_zonal_shift,
        simulated_unavailable: args.simulated_unavailable.clone(),
        simulated_instance_dir: args.simulated_instance_dir.clone(),
        simulated_zonal_shifts: args.simulated_zonal_shifts.clone(),
        simulated_catalog,
        disruption: adze_provisioner::disruption::Settings {
            poll: args.disruption_poll_period,
            validation: args.disruption_validation_period,
            dry_run: args.disruption_dry_run,
            repair: adze_provisioner::disruption::repair::mode(
                args.node_repair,
                args.legacy_node_repair,
            )
            .map_err(anyhow::Error::msg)?,
            reboot_for_repair: adze_provisioner::disruption::repair::reboot_first(
                args.reboot_for_repair,
                args.node_repair,
                args.legacy_node_repair,
            )
            .map_err(anyhow::Error::msg)?,
            terminate_first_drift: args.terminate_first_drift,
            pod_deletion_cost: args.pod_deletion_cost,
            vpa_predictions: args.vpa_predictions,
            replacement_timeout: args.registration_timeout,
            max_instance_types: args.max_instance_types,
            policies: args.policies.clone(),
        },
        policies: args.policies.clone(),
    };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(adze_provisioner::run::run(config))?;
    Ok(String::new())
}

/// Built without the `controller` feature (README's first command): `run` and whatever follows
/// it is refused by name rather than parsed and ignored.
#[cfg(not(feature = "controller"))]
#[derive(Debug, clap::Args)]
struct RunArgs {
    #[arg(hide = true, trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

#[cfg(not(feature = "controller"))]
fn run(_: &RunArgs) -> anyhow::Result<String> {
    anyhow::bail!(
        "run: this adze-provisioner was built without the `controller` feature (cargo build --no-default-features), so it has only `simulate` and `migrate`; build it with default features to run the controllers"
    )
}

#[derive(Debug, clap::Args)]
struct SimulateArgs {
    /// The scenario file.
    #[arg(value_name = "SCENARIO.yaml", required_unless_present = "from_cluster")]
    scenario: Option<PathBuf>,
    /// Plan the cluster in KUBECONFIG (or the in-cluster config) instead of a file: read it
    /// read-only as `snapshot` does (its report on stderr), then plan that snapshot exactly
    /// as `simulate` plans the file `--save` writes. Needs the `controller` feature.
    #[arg(long, env = "ADZE_FROM_CLUSTER", conflicts_with = "scenario")]
    from_cluster: bool,
    /// With --from-cluster: the kubeconfig file (default: KUBECONFIG, ~/.kube/config, or
    /// in-cluster).
    #[arg(long, env = "ADZE_KUBECONFIG", requires = "from_cluster")]
    kubeconfig: Option<PathBuf>,
    /// With --from-cluster: also write the snapshot to FILE, to replay it later with
    /// `simulate FILE`.
    #[arg(
        long,
        env = "ADZE_SAVE",
        value_name = "FILE",
        requires = "from_cluster"
    )]
    save: Option<PathBuf>,
    /// With --from-cluster: where the NodePools come from (as `snapshot --nodepools-from`).
    #[arg(
        long,
        env = "ADZE_NODEPOOLS_FROM",
        value_enum,
        requires = "from_cluster"
    )]
    nodepools_from: Option<PoolSource>,
    /// How to print the plan.
    #[arg(long, env = "ADZE_OUTPUT", value_enum, value_name = "FORMAT", default_value_t = Format::Table)]
    output: Format,
    /// Instance types kept per NodeClaim, cheapest first (minValues may keep more).
    #[arg(
        long,
        env = "ADZE_MAX_INSTANCE_TYPES",
        value_name = "N",
        default_value_t = 60,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    max_instance_types: u32,
    /// Exit 0 even when some pods are left unschedulable (the plan is printed either way).
    #[arg(long, env = "ADZE_ALLOW_UNSCHEDULABLE", conflicts_with = "disruption")]
    allow_unschedulable: bool,
    /// Plan disruption of the scenario's existing nodes instead of placing its pending
    /// pods: what one pass of `run`'s disruption controller would delete or replace, by
    /// which method, where the pods go, what it saves, and why every other node is left
    /// alone.
    #[arg(long, env = "ADZE_DISRUPTION")]
    disruption: bool,
    /// With --disruption: the clock the plan is made at (RFC 3339, e.g.
    /// 2026-06-01T12:00:00Z); budgets' schedules, consolidateAfter and expireAfter are read
    /// at it. Default: now.
    #[arg(
        long,
        env = "ADZE_NOW",
        value_name = "RFC3339",
        requires = "disruption"
    )]
    now: Option<String>,
    /// With --disruption: at most this many commands, as the controller's limit per pass.
    #[arg(
        long,
        env = "ADZE_MAX_COMMANDS",
        value_name = "N",
        default_value_t = 100,
        requires = "disruption",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    max_commands: u32,
    /// With --disruption: exit 3 when the plan has commands (some node would be disrupted),
    /// so a CI job can gate on "Adze would leave this cluster alone".
    #[arg(long, env = "ADZE_FAIL_ON_COMMANDS", requires = "disruption")]
    fail_on_commands: bool,
    /// With --disruption: print why this node is or is not disrupted (its blockers, budget
    /// left, consolidateAfter to go, what consolidation of it alone would do) instead of
    /// the plan.
    #[arg(
        long,
        env = "ADZE_EXPLAIN_NODE",
        value_name = "NODE",
        requires = "disruption"
    )]
    explain_node: Option<String>,
    /// With --disruption: plan as `run --node-repair` does: nodes whose Node conditions stay
    /// unhealthy past their toleration are repaired, first, within their NodePool's budgets
    /// for reason Unhealthy; those held are listed as repair-blocked. Status checks are not
    /// read offline.
    #[arg(long, env = "ADZE_NODE_REPAIR", requires = "disruption")]
    node_repair: bool,
    /// With --disruption --node-repair: as `run --legacy-node-repair`, forceful repair
    /// outside budgets, before any decision.
    #[arg(long, env = "ADZE_LEGACY_NODE_REPAIR", requires = "disruption")]
    legacy_node_repair: bool,
    /// With --disruption: plan as `run --terminate-first-drift` does: a drifted or repaired
    /// node of a capacity-constrained NodePool (static at limits.nodes, confined to full
    /// capacity reservations, or whose limits leave its pods room only once it is gone) is
    /// deleted first instead of waiting for room to launch its replacement.
    #[arg(long, env = "ADZE_TERMINATE_FIRST_DRIFT", requires = "disruption")]
    terminate_first_drift: bool,
    /// With --disruption --node-repair: as `run --reboot-for-repair`, a node due for repair
    /// is shown with the action `reboot` (or waiting after one, from its NodeClaim's
    /// adze.sh/repair-rebooted-at annotation) instead of being replaced.
    #[arg(long, env = "ADZE_REBOOT_FOR_REPAIR", requires = "disruption")]
    reboot_for_repair: bool,
    /// With --disruption: a pod disruption moves is planned with the requests its
    /// VerticalPodAutoscaler (in the scenario) will give it when recreated (Karpenter's
    /// PredictionEnabled; as `run --vpa-predictions`, which lists them live). A scenario holding
    /// VerticalPodAutoscalers is refused without it; with --from-cluster the cluster's are read.
    #[arg(long, env = "ADZE_VPA_PREDICTIONS", requires = "disruption")]
    vpa_predictions: bool,
    /// Print why this pending pod (NAMESPACE/NAME; NAME alone is in `default`) is placed
    /// where the plan puts it, or stays pending: every existing node, planned NodeClaim and
    /// NodePool checked, and each pool's instance types grouped by why they were refused,
    /// instead of the plan. Not with --disruption.
    #[arg(
        long,
        env = "ADZE_EXPLAIN_POD",
        value_name = "NAMESPACE/NAME",
        conflicts_with = "disruption"
    )]
    explain_pod: Option<String>,
    /// Plan as `run --karpenter-labels` does: new nodes carry Karpenter's well-known labels
    /// (karpenter.sh/capacity-type, karpenter.k8s.aws/instance-family, ...) beside Adze's.
    #[arg(long, env = "ADZE_KARPENTER_LABELS")]
    karpenter_labels: bool,
    /// The AWS region to plan in: its zones, the types it offers and their prices, from the
    /// embedded catalog (an InstanceCatalog in the scenario replaces it).
    #[arg(
        long,
        env = "ADZE_REGION",
        value_name = "REGION",
        default_value = adze_scheduling::catalog::regions::DEFAULT_REGION
    )]
    region: String,
    #[command(flatten)]
    policies: adze_provisioner::rules::Policies,
}

/// `simulate`'s exit status when pods are left unschedulable, so a CI job can gate on it.
const EXIT_UNSCHEDULABLE: u8 = 2;
/// `simulate --disruption --fail-on-commands`' exit status when the plan has commands.
const EXIT_COMMANDS: u8 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// Columns for a person.
    Table,
    /// The plan as JSON, for scripts.
    Json,
    /// The same fields as JSON, in YAML.
    Yaml,
}

fn simulate(args: &SimulateArgs) -> anyhow::Result<(String, ExitCode)> {
    // clap drops `requires = "from_cluster"` once a SCENARIO (which conflicts with it) is
    // given, so the cluster's flags are refused here rather than ignored.
    if !args.from_cluster {
        let given = [
            ("--kubeconfig", args.kubeconfig.is_some()),
            ("--save", args.save.is_some()),
            ("--nodepools-from", args.nodepools_from.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, set)| *set) {
            anyhow::bail!(
                "{flag} reads the cluster: it needs --from-cluster (a SCENARIO file is planned as it is)"
            );
        }
    }
    // Refused before the scenario is read, naming the flag.
    adze_scheduling::catalog::regions::table()
        .map_err(anyhow::Error::from)
        .and_then(|t| t.region(&args.region).map(|_| ()).map_err(Into::into))
        .context("--region")?;
    let (yaml, source) = match &args.scenario {
        Some(path) => (
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
            path.display().to_string(),
        ),
        None => (
            scenario_from_cluster(args)?,
            "the cluster's snapshot".to_string(),
        ),
    };
    let mut scenario = Scenario::parse_in(&yaml, &args.region).context(source.clone())?;
    if let Some(defaults) = &args.policies.kube_scheduler_config {
        simulate::with_default_spread(&mut scenario, defaults);
    }
    // VerticalPodAutoscalers only size pods disruption moves, and only with the flag: one
    // the plan would not read is refused rather than ignored.
    if let Some(v) = scenario.objects.vpas.first()
        && !args.vpa_predictions
    {
        anyhow::bail!(
            "{source}: VerticalPodAutoscaler {}/{} is read only by `simulate --disruption --vpa-predictions` (it sizes the pods disruption moves); pass both flags or remove it",
            v.namespace,
            v.name
        );
    }
    if args.disruption {
        return simulate_disruption(args, &scenario);
    }
    if args.karpenter_labels {
        simulate::with_karpenter_labels(&mut scenario);
    }
    if let Some(pod) = &args.explain_pod {
        let key = simulate::explain::pod_key(pod);
        let e = simulate::explain::explain_pod(
            &scenario,
            &simulate::options(args.max_instance_types as usize, &args.policies),
            &key,
        )
        .with_context(|| format!("--explain-pod {pod}"))?;
        let text = match args.output {
            Format::Table => simulate::explain::text(&e),
            Format::Json => serde_json::to_string_pretty(&e)? + "\n",
            Format::Yaml => serde_yaml::to_string(&e)?,
        };
        return Ok((text, ExitCode::SUCCESS));
    }
    let mut outcome =
        simulate::run_with(&scenario, args.max_instance_types as usize, &args.policies);
    if args.karpenter_labels {
        simulate::add_karpenter_labels(&mut outcome.plan);
    }
    let cost = output::cost(&scenario, &outcome.plan);
    let report = || {
        Report::new(&outcome.plan, outcome.elapsed)
            .mark_buffer(&scenario.buffer_pods)
            .with_cost(cost.clone())
    };
    let text = match args.output {
        Format::Table => {
            output::table(&scenario, &outcome.plan, outcome.elapsed) + &output::cost_table(&cost)
        }
        Format::Json => serde_json::to_string_pretty(&report())? + "\n",
        Format::Yaml => serde_yaml::to_string(&report())?,
    };
    let unschedulable = outcome.plan.unschedulable.len();
    let code = if unschedulable > 0 && !args.allow_unschedulable {
        eprintln!(
            "exit status {EXIT_UNSCHEDULABLE}: {unschedulable} pod(s) unschedulable (--allow-unschedulable to exit 0)"
        );
        ExitCode::from(EXIT_UNSCHEDULABLE)
    } else {
        ExitCode::SUCCESS
    };
    Ok((text, code))
}

/// `simulate --from-cluster`: the snapshot's scenario text (saved with `--save`).
#[cfg(feature = "controller")]
fn scenario_from_cluster(args: &SimulateArgs) -> anyhow::Result<String> {
    let yaml = read_cluster(
        args.kubeconfig.as_deref(),
        args.nodepools_from.unwrap_or_default(),
        args.vpa_predictions,
    )?
    .yaml();
    if let Some(path) = &args.save {
        std::fs::write(path, &yaml).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("snapshot written to {}", path.display());
    }
    Ok(yaml)
}

#[cfg(not(feature = "controller"))]
fn scenario_from_cluster(_: &SimulateArgs) -> anyhow::Result<String> {
    anyhow::bail!("simulate --from-cluster: {NO_CLIENT}")
}

/// `simulate --disruption`: the plan, or one node's explanation.
fn simulate_disruption(
    args: &SimulateArgs,
    scenario: &Scenario,
) -> anyhow::Result<(String, ExitCode)> {
    use adze_provisioner::simulate::disruption as d;
    let now = match &args.now {
        Some(t) => t.parse::<k8s_openapi::jiff::Timestamp>().with_context(|| {
            format!("--now {t:?}: not an RFC 3339 time (e.g. 2026-06-01T12:00:00Z)")
        })?,
        None => k8s_openapi::jiff::Timestamp::now(),
    };
    let mut options = d::DisruptionOptions::at(now);
    options.max_commands = args.max_commands as usize;
    options.max_instance_types = args.max_instance_types as usize;
    options.policies = args.policies.clone();
    options.karpenter_labels = args.karpenter_labels;
    options.node_repair =
        adze_provisioner::disruption::repair::mode(args.node_repair, args.legacy_node_repair)
            .map_err(anyhow::Error::msg)?;
    options.terminate_first_drift = args.terminate_first_drift;
    options.reboot_for_repair = adze_provisioner::disruption::repair::reboot_first(
        args.reboot_for_repair,
        args.node_repair,
        args.legacy_node_repair,
    )
    .map_err(anyhow::Error::msg)?;
    options.vpa_predictions = args.vpa_predictions;
    let prepared = d::prepare(scenario, &options);
    let plan = d::plan_prepared(&prepared, &options);
    if let Some(node) = &args.explain_node {
        let e = d::explain_prepared(&prepared, &plan, node).with_context(|| {
            format!("--explain-node {node}: the scenario has no Node of that name")
        })?;
        let text = match args.output {
            Format::Table => d::explain_text(&e),
            Format::Json => serde_json::to_string_pretty(&e)? + "\n",
            Format::Yaml => serde_yaml::to_string(&e)?,
        };
        return Ok((text, ExitCode::SUCCESS));
    }
    let text = match args.output {
        Format::Table => d::table(&plan),
        Format::Json => serde_json::to_string_pretty(&plan)? + "\n",
        Format::Yaml => serde_yaml::to_string(&plan)?,
    };
    let code = if args.fail_on_commands && !plan.commands.is_empty() {
        eprintln!(
            "exit status {EXIT_COMMANDS}: the plan has {} command(s) (--fail-on-commands)",
            plan.commands.len()
        );
        ExitCode::from(EXIT_COMMANDS)
    } else {
        ExitCode::SUCCESS
    };
    Ok((text, code))
}

/// clap's "required argument" error names `--cloud-provider <CLOUD_PROVIDER>` but not what it
/// may be; the choices are added as a tip so the fix is in the message.
#[cfg(feature = "controller")]
fn with_cloud_provider_choices(mut e: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let missing = matches!(
        e.get(ContextKind::InvalidArg),
        Some(ContextValue::Strings(args)) if args.iter().any(|a| a.starts_with("--cloud-provider"))
    );
    if e.kind() == ErrorKind::MissingRequiredArgument && missing {
        let choices = CloudProviderKind::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value())
            .map(|v| format!("--cloud-provider {}", v.get_name()))
            .collect::<Vec<_>>()
            .join(" or ");
        e.insert(
            ContextKind::Suggested,
            ContextValue::StyledStrs(vec![
                format!("--cloud-provider has no default: pass {choices} (or ADZE_CLOUD_PROVIDER)")
                    .into(),
            ]),
        );
    }
    e
}

fn main() -> ExitCode {
    let matches = Cli::command().try_get_matches().unwrap_or_else(|e| {
        #[cfg(feature = "controller")]
        let e = with_cloud_provider_choices(e);
        e.exit()
    });
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // The --leader-election-* tunings mean nothing without leader election: refused, not ignored.
    #[cfg(feature = "controller")]
    if let (Command::Run(args), Some(run)) = (&cli.command, matches.subcommand_matches("run"))
        && let Some(msg) = args
            .leader
            .unused_flag(run)
            .or_else(|| args.instance_dir_conflict(run))
    {
        Cli::command()
            .error(clap::error::ErrorKind::ArgumentConflict, msg)
            .exit();
    }
    let result = match &cli.command {
        Command::Simulate(args) => simulate(args),
        Command::Run(args) => run(args).map(|t| (t, ExitCode::SUCCESS)),
        Command::Migrate(args) => migrate(args),
        Command::Snapshot(args) => snapshot(args).map(|t| (t, ExitCode::SUCCESS)),
    };
    match result {
        Ok((text, code)) => {
            print!("{text}");
            code
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

// Every test here is about `run`'s flags.
#[cfg(all(test, feature = "controller"))]
mod tests {
    use super::*;

    /// docs/reference/cli.md's section for this binary is what clap says.
    #[test]
    // Generated from the default build, which has every subcommand and flag.
    #[cfg(feature = "aws")]
    fn cli_reference_is_current() {
        adze_cli::reference::check_cli_section(
            env!("CARGO_MANIFEST_DIR"),
            "adze-provisioner",
            &Cli::command(),
        );
    }

    /// `argv` parsed as `run`, with `--cloud-provider simulated` added unless it names one.
    fn run_conflict(argv: &[&str]) -> Option<String> {
        let mut argv = argv.to_vec();
        if !argv.contains(&"--cloud-provider") {
            argv.extend(["--cloud-provider", "simulated"]);
        }
        let matches = Cli::command().get_matches_from(argv);
        let cli = Cli::from_arg_matches(&matches).unwrap();
        let Command::Run(args) = &cli.command else {
            panic!("not run")
        };
        args.instance_dir_conflict(matches.subcommand_matches("run").unwrap())
    }

    #[test]
    fn security_group_refresh_interval_is_bounded_and_refused_off_aws() {
        let parse = |v: &str| {
            Cli::command().try_get_matches_from([
                "adze-provisioner",
                "run",
                "--cloud-provider",
                "aws",
                "--security-group-refresh-interval",
                v,
            ])
        };
        let value = |v: &str| {
            let m = parse(v).unwrap();
            let Command::Run(args) = Cli::from_arg_matches(&m).unwrap().command else {
                panic!("not run")
            };
            args.aws.security_group_refresh_interval
        };
        assert_eq!(value("5m"), std::time::Duration::from_secs(300));
        assert_eq!(value("30s"), std::time::Duration::from_secs(30));
        assert_eq!(value("24h"), std::time::Duration::from_secs(86400));
        for bad in ["29s", "0s", "25h", "60"] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(
                e.contains("--security-group-refresh-interval"),
                "{bad}: {e}"
            );
        }
        let Command::Run(args) = Cli::from_arg_matches(&Cli::command().get_matches_from([
            "adze-provisioner",
            "run",
            "--cloud-provider",
            "aws",
        ]))
        .unwrap()
        .command
        else {
            panic!("not run")
        };
        assert_eq!(
            args.aws.security_group_refresh_interval,
            std::time::Duration::from_secs(30),
            "default: every resolve, as before the flag"
        );
        let msg = run_conflict(&[
            "adze-provisioner",
            "run",
            "--security-group-refresh-interval",
            "5m",
        ])
        .unwrap();
        assert!(msg.contains("--security-group-refresh-interval"), "{msg}");
        assert_eq!(
            run_conflict(&[
                "adze-provisioner",
                "run",
                "--cloud-provider",
                "aws",
                "--security-group-refresh-interval",
                "5m",
            ]),
            None
        );
    }

    #[test]
    fn instance_dir_refuses_the_flags_it_makes_meaningless() {
        let base = [
            "adze-provisioner",
            "run",
            "--simulated-instance-dir",
            "/tmp/x",
        ];
        assert_eq!(run_conflict(&base), None);
        let with = |extra: &[&'static str]| -> Vec<&str> {
            base.iter().copied().chain(extra.iter().copied()).collect()
        };
        let msg = run_conflict(&with(&["--boot-delay", "5s"])).unwrap();
        assert!(
            msg.contains("--boot-delay") && msg.contains("--simulated-instance-dir"),
            "{msg}"
        );
        let msg = run_conflict(&with(&["--heartbeat", "5s"])).unwrap();
        assert!(msg.contains("--heartbeat"), "{msg}");
        let msg = run_conflict(&with(&["--cloud-provider", "aws"])).unwrap();
        assert!(msg.contains("--cloud-provider simulated"), "{msg}");
        assert_eq!(
            run_conflict(&["adze-provisioner", "run", "--boot-delay", "5s"]),
            None
        );
    }

    #[test]
    fn simulated_zonal_shifts_need_the_simulated_cloud_and_the_feature() {
        let msg = run_conflict(&[
            "adze-provisioner",
            "run",
            "--simulated-zonal-shifts",
            "/tmp/s",
        ])
        .unwrap();
        assert!(msg.contains("--enable-zonal-shift"), "{msg}");
        let msg = run_conflict(&[
            "adze-provisioner",
            "run",
            "--enable-zonal-shift",
            "--cloud-provider",
            "aws",
            "--simulated-zonal-shifts",
            "/tmp/s",
        ])
        .unwrap();
        assert!(msg.contains("--cloud-provider simulated"), "{msg}");
        assert_eq!(
            run_conflict(&[
                "adze-provisioner",
                "run",
                "--enable-zonal-shift",
                "--simulated-zonal-shifts",
                "/tmp/s"
            ]),
            None
        );
    }

    #[test]
    fn every_flag_follows_the_convention() {
        adze_cli::assert_follows_convention(Cli::command());
    }
}
