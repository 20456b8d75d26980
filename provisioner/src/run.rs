//! `adze-provisioner run`: the controllers against a live cluster. Connects with KUBECONFIG
//! or the in-cluster config, starts the watches ([`crate::state`]), then runs provisioning,
//! the NodeClaim lifecycle and, with the simulated cloud, the simulated kubelet.

use std::sync::Arc;
use std::time::Duration;

use kube::Client;

use crate::cloud::simulated::Simulated;
use crate::cloud::{CloudProvider, UnavailableOfferings};
use crate::disruption::Disruption;
use crate::kubelet::Kubelet;
use crate::nodeclaim::Lifecycle;
use crate::provisioning::{Provisioner, Settings};
use crate::state::ClusterState;
use crate::termination::Termination;

#[derive(Debug, Clone)]
pub struct Config {
    pub batch_idle: Duration,
    pub batch_max: Duration,
    pub boot_delay: Duration,
    pub registration_timeout: Duration,
    pub max_instance_types: usize,
    pub heartbeat: Duration,
    pub disruption: crate::disruption::Settings,
}

pub async fn run(config: Config) -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    let version = client.apiserver_version().await?;
    tracing::info!(server = %version.git_version, "connected to the apiserver");
    let state = ClusterState::start(client.clone()).await?;
    tracing::info!(
        nodes = state.nodes.state().len(),
        pods = state.pods.state().len(),
        nodeclaims = state.claims.state().len(),
        nodepools = state.nodepools.state().len(),
        "cluster state synced"
    );
    let cloud: Arc<dyn CloudProvider> = Arc::new(Simulated::new(
        client.clone(),
        adze_scheduling::catalog::embedded(),
        config.boot_delay,
    ));
    let unavailable = UnavailableOfferings::new(Duration::from_secs(180));
    let provisioner = Provisioner {
        client: client.clone(),
        state: state.clone(),
        cloud: cloud.clone(),
        unavailable: unavailable.clone(),
        settings: Settings {
            batch_idle: config.batch_idle,
            batch_max: config.batch_max,
            max_instance_types: config.max_instance_types,
            retry: Duration::from_secs(30),
        },
    };
    let disruption = Disruption::new(
        client.clone(),
        state.clone(),
        cloud.clone(),
        unavailable.clone(),
        config.disruption.clone(),
    )
    .await;
    let lifecycle = Lifecycle {
        client: client.clone(),
        state: state.clone(),
        cloud: cloud.clone(),
        unavailable,
        registration_timeout: config.registration_timeout,
        remove_startup_taints: cloud.name() == "simulated",
    };
    let termination = Termination::new(client.clone(), state.clone(), cloud.clone()).await;
    let kubelet = Kubelet {
        client,
        state,
        heartbeat: config.heartbeat,
    };
    tokio::select! {
        _ = provisioner.run() => {}
        _ = lifecycle.run() => {}
        _ = kubelet.run() => {}
        _ = termination.run() => {}
        _ = disruption.run() => {}
        r = tokio::signal::ctrl_c() => { r?; tracing::info!("interrupted; exiting"); }
    }
    Ok(())
}
