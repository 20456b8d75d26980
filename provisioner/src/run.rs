//! `adze-provisioner run`: the controllers against a live cluster. Connects with KUBECONFIG
//! or the in-cluster config, starts the watches ([`crate::state`]), then runs provisioning,
//! the NodeClaim lifecycle and, with the simulated cloud, the simulated kubelet. With leader
//! election on, only the replica holding the Lease runs controllers; all serve `/metrics`,
//! `/healthz` and `/readyz` and keep their watches.

use std::sync::Arc;
use std::time::Duration;

use kube::Client;

use crate::cloud::metered::Metered;
use crate::cloud::simulated::Simulated;
use crate::cloud::{CloudProvider, UnavailableOfferings};
use crate::disruption::Disruption;
use crate::kubelet::Kubelet;
use crate::nodeclaim::Lifecycle;
use crate::provisioning::{Provisioner, Settings};
use crate::state::ClusterState;
use crate::termination::Termination;

/// The EC2 provider's options; without the `aws` feature no value exists, so `run` can only
/// use the simulated cloud (main refuses `--cloud-provider aws` naming the feature).
#[cfg(feature = "aws")]
pub type AwsOptions = adze_aws::runtime::Options;
#[cfg(not(feature = "aws"))]
pub type AwsOptions = std::convert::Infallible;
/// The SQS interruption queue's options (see [`AwsOptions`]).
#[cfg(feature = "aws")]
pub type QueueOptions = adze_aws::runtime::QueueOptions;
#[cfg(not(feature = "aws"))]
pub type QueueOptions = std::convert::Infallible;

#[derive(Debug, Clone)]
pub struct Config {
    pub batch_idle: Duration,
    pub batch_max: Duration,
    pub boot_delay: Duration,
    pub registration_timeout: Duration,
    pub launch_timeout: Duration,
    pub max_instance_types: usize,
    pub heartbeat: Duration,
    /// `None`: run the controllers without leader election (a single replica).
    pub leader_election: Option<adze_lease::Settings>,
    pub metrics_addr: std::net::SocketAddr,
    /// `--kubeconfig`; None infers (KUBECONFIG, ~/.kube/config, in-cluster).
    pub kubeconfig: Option<std::path::PathBuf>,
    /// `--cloud-provider aws`; None runs the simulated cloud.
    pub aws: Option<AwsOptions>,
    /// `--interruption-queue`: polled with any cloud provider.
    pub interruption: Option<QueueOptions>,
    /// An instance no NodeClaim owns is terminated after this long.
    pub garbage_grace: Duration,
    /// `--karpenter-labels` (see [`crate::state::ClusterState::karpenter_labels`]).
    pub karpenter_labels: bool,
    /// Simulated cloud: offerings whose launch fails with InsufficientCapacity.
    pub simulated_unavailable: Vec<crate::cloud::simulated::OfferingPattern>,
    /// Simulated cloud: launch by writing instance records here; a kubelet outside this
    /// process registers each Node, so the simulated kubelet does not run.
    pub simulated_instance_dir: Option<std::path::PathBuf>,
    /// Simulated cloud: the file listing the cluster's zonal shifts (`--simulated-zonal-shifts`).
    pub simulated_zonal_shifts: Option<std::path::PathBuf>,
    /// The simulated cloud's instance types: the embedded catalog of `--region`.
    pub simulated_catalog: Vec<std::sync::Arc<adze_scheduling::InstanceType>>,
    pub disruption: crate::disruption::Settings,
    /// `--preference-policy`, `--min-values-policy`.
    pub policies: crate::rules::Policies,
    /// `--capacity-buffers`: plan for CapacityBuffers' placeholder pods (alpha, as
    /// Karpenter's `CapacityBuffer` feature gate).
    pub capacity_buffers: bool,
    /// `--enable-zonal-shift` (Karpenter's `ENABLE_ZONAL_SHIFT`, off by default as there):
    /// read the cluster's ARC zonal shifts and stay out of the zones they move away from.
    pub zonal_shift: bool,
}

/// SIGINT or SIGTERM.
async fn shutdown_signal() -> anyhow::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r?,
        _ = term.recv() => {}
    }
    Ok(())
}

pub async fn run(mut config: Config) -> anyhow::Result<()> {
    let readiness = crate::metrics::server::Readiness::default();
    let addr = crate::metrics::server::serve(config.metrics_addr, readiness.clone()).await?;
    tracing::info!("serving /metrics, /healthz and /readyz on http://{addr}");
    let kube_config =
        adze_cli::kube_config(config.kubeconfig.as_deref(), "adze-provisioner").await?;
    let client = Client::try_from(kube_config.clone())?;
    let version = client.apiserver_version().await?;
    tracing::info!(server = %version.git_version, "connected to the apiserver");
    let mut state = ClusterState::start(
        client.clone(),
        config.aws.is_some(),
        config.capacity_buffers,
        config.policies.kube_scheduler_config.as_ref(),
    )
    .await?;
    state.karpenter_labels = config.karpenter_labels;
    tracing::info!(
        nodes = state.nodes.state().len(),
        pods = state.pods.state().len(),
        nodeclaims = state.claims.state().len(),
        nodepools = state.nodepools.state().len(),
        "cluster state synced"
    );
    readiness.set_ready();
    let mut leader = match &config.leader_election {
        Some(settings) => {
            tracing::info!(identity = %settings.identity, lease = %format!("{}/{}", settings.namespace, settings.name), "waiting for the leader lease");
            crate::metrics::provisioner().leader.set(0);
            let mut rx = adze_lease::start(client.clone(), settings.clone());
            tokio::select! {
                r = rx.wait_for(|l| l.leading) => { r?; }
                r = shutdown_signal() => { r?; tracing::info!("interrupted; exiting"); return Ok(()); }
            }
            crate::metrics::provisioner().leader.set(1);
            let term = rx.borrow().terms;
            Some((rx, term))
        }
        None => None,
    };
    let lost = async {
        match leader.as_mut() {
            Some((rx, term)) => {
                let term = *term;
                let _ = rx.wait_for(|l| !l.leading || l.terms != term).await;
                crate::metrics::provisioner().leader.set(0);
            }
            None => std::future::pending().await,
        }
    };
    let unavailable = UnavailableOfferings::new(Duration::from_secs(180));
    let instance_dir = config.simulated_instance_dir.clone();
    let cloud: Arc<dyn CloudProvider> = Metered::wrap(match config.aws.take() {
        #[cfg(feature = "aws")]
        Some(options) => adze_aws::runtime::start(client.clone(), options, unavailable.clone())
            .await
            .map_err(anyhow::Error::msg)?,
        #[cfg(not(feature = "aws"))]
        Some(never) => match never {},
        None => {
            let sim = Simulated::new(
                client.clone(),
                std::mem::take(&mut config.simulated_catalog),
                config.boot_delay,
            )
            .with_unavailable(config.simulated_unavailable.clone());
            let sim = match config.simulated_zonal_shifts.clone() {
                Some(path) => sim.with_zonal_shifts_file(path),
                None => sim,
            };
            Arc::new(match instance_dir.clone() {
                Some(dir) => sim.with_instance_dir(dir),
                None => sim,
            })
        }
    });
    if let Some(queue) = config.interruption.take() {
        #[cfg(feature = "aws")]
        {
            let stats = adze_aws::runtime::start_interruption_queue(client.clone(), queue)
                .await
                .map_err(anyhow::Error::msg)?;
            tokio::spawn(publish_queue_stats(stats));
        }
        #[cfg(not(feature = "aws"))]
        match queue {}
    }
    // One recorder for every controller, so repeats aggregate wherever they come from.
    let recorder = crate::events::Recorder::new(client.clone());
    let provisioner = Provisioner {
        client: client.clone(),
        state: state.clone(),
        cloud: cloud.clone(),
        unavailable: unavailable.clone(),
        settings: Settings {
            batch_idle: config.batch_idle,
            batch_max: config.batch_max,
            max_instance_types: config.max_instance_types,
            policies: config.policies,
            retry: Duration::from_secs(30),
        },
        recorder: recorder.clone(),
    };
    let disruption = Disruption::new(
        client.clone(),
        state.clone(),
        cloud.clone(),
        unavailable.clone(),
        config.disruption.clone(),
        recorder.clone(),
    )
    .await;
    let lifecycle = Lifecycle {
        client: client.clone(),
        state: state.clone(),
        cloud: cloud.clone(),
        unavailable: unavailable.clone(),
        registration_timeout: config.registration_timeout,
        launch_timeout: config.launch_timeout,
        remove_startup_taints: cloud.name() == "simulated",
        recorder: recorder.clone(),
    };
    let garbage = crate::garbage::Garbage {
        client: client.clone(),
        state: state.clone(),
        cloud: cloud.clone(),
        grace: config.garbage_grace,
        interval: Duration::from_secs(5),
    };
    let startup = crate::metrics::startup::run(state.clone(), Duration::from_secs(2));
    let static_pools = crate::nodepool::replicas::Replicas {
        client: client.clone(),
        state: state.clone(),
        cloud: cloud.clone(),
        unavailable: unavailable.clone(),
        max_instance_types: config.max_instance_types,
        interval: Duration::from_secs(2),
    };
    let nodepool_status = crate::nodepool::Status {
        client: client.clone(),
        state: state.clone(),
        recorder: recorder.clone(),
        cloud: cloud.clone(),
        interval: Duration::from_secs(2),
    };
    let nodeoverlay_status = crate::nodeoverlay::Status {
        client: client.clone(),
        state: state.clone(),
        cloud: cloud.clone(),
        interval: Duration::from_secs(2),
    };
    let capacitybuffer_status = crate::capacitybuffer::Status {
        client: client.clone(),
        state: state.clone(),
        interval: Duration::from_secs(5),
    };
    // Termination reads an eviction's 429 (a PodDisruptionBudget says not now) itself and
    // backs off per pod; kube's built-in 429 retry would hold the drain inside one request
    // for minutes, past the claim's terminationGracePeriod.
    let mut no_retry = kube_config;
    no_retry.default_retry = false;
    let termination_client = Client::try_from(no_retry)?;
    let termination =
        Termination::new(termination_client, state.clone(), cloud.clone(), recorder).await;
    let kubelet = Kubelet {
        client: client.clone(),
        state,
        heartbeat: config.heartbeat,
    };
    // With an instance directory real kubelets own the nodes (and their providerIDs look
    // alike), so the simulated one must not touch them.
    let kubelet = async move {
        if instance_dir.is_some() {
            std::future::pending::<()>().await
        } else {
            kubelet.run().await
        }
    };
    let prices = publish_prices(cloud.clone());
    let zonal_shift = crate::cloud::zonal_shift::ZonalShiftWatch {
        cloud: cloud.clone(),
        unavailable: unavailable.clone(),
        interval: crate::cloud::zonal_shift::ZONAL_SHIFT_INTERVAL,
    };
    let zonal_shift_enabled = config.zonal_shift;
    let zonal_shift = async move {
        if zonal_shift_enabled {
            zonal_shift.run().await
        } else {
            std::future::pending::<()>().await
        }
    };
    tokio::select! {
        _ = provisioner.run() => {}
        _ = lifecycle.run() => {}
        _ = kubelet => {}
        _ = termination.run() => {}
        _ = disruption.run() => {}
        _ = garbage.run() => {}
        _ = nodepool_status.run() => {}
        _ = nodeoverlay_status.run() => {}
        _ = capacitybuffer_status.run() => {}
        _ = static_pools.run() => {}
        _ = prices => {}
        _ = zonal_shift => {}
        _ = startup => {}
        _ = lost => anyhow::bail!("lost the leader lease; exiting so a restart rejoins as a follower"),
        r = shutdown_signal() => {
            r?;
            tracing::info!("interrupted; exiting");
            if let Some(settings) = &config.leader_election {
                adze_lease::release(client, settings).await;
            }
        }
    }
    Ok(())
}

/// Mirrors the interruption loop's counters into `adze_interruption_messages_total`.
#[cfg(feature = "aws")]
async fn publish_queue_stats(stats: Arc<adze_aws::interruption::QueueStats>) {
    loop {
        crate::metrics::catch_up(
            &crate::metrics::provisioner().interruption_messages,
            &stats.snapshot(),
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// Keeps `adze_cloudprovider_offering_price_dollars` at the cloud's current catalog prices
/// (the AWS provider refreshes its catalog on its own TTL; this only reads it).
async fn publish_prices(cloud: Arc<dyn CloudProvider>) {
    loop {
        crate::metrics::record_offering_prices(
            &crate::metrics::provisioner().offering_price,
            &cloud.instance_types(),
        );
        tokio::time::sleep(Duration::from_secs(60)).await;
    }
}
