//! Starting the AWS parts inside `adze-provisioner run`: [`start`] builds the clients, keeps
//! instance types fresh and resolves EC2NodeClass status; [`start_interruption_queue`] polls
//! the interruption queue, next to whichever cloud provider runs (the simulated one in e2e).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use adze_api::{EC2NodeClass, NodeClaim};
use adze_cloud::UnavailableOfferings;
use kube::api::{Patch, PatchParams};

use crate::instance_profile::Profiles;
use crate::interruption::{self, Queue, QueueStats};
use crate::nodeclass::{self, AmiParameters};
use crate::{AwsProvider, Clients, KubeNodeClasses, Settings};

/// What `--cloud-provider aws` is configured with.
#[derive(Debug, Clone)]
pub struct Options {
    /// Endpoint override for every AWS service (moto, a proxy); None uses AWS.
    pub endpoint: Option<String>,
    pub region: String,
    pub cluster_name: String,
    /// Endpoint, CA, service CIDR and version as the flags set them; the rest is discovered.
    pub join: crate::cluster::Overrides,
    /// SSM path prefix of the family images (`/aws/service` on AWS).
    pub ssm_prefix: String,
    /// How long a class's resolved security groups are reused before EC2 is asked again
    /// (`--security-group-refresh-interval`; see [`nodeclass::SecurityGroupCache`]).
    pub security_group_refresh_interval: Duration,
}

/// The pod's own service-account CA, which on EKS is the cluster CA, as base64.
fn service_account_ca() -> Option<String> {
    use base64::Engine;
    let pem = std::fs::read("/var/run/secrets/kubernetes.io/serviceaccount/ca.crt").ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(pem))
}

/// Endpoint, CA, service CIDR and version for node user data: flags first, then the cluster
/// (API server `/version`, EKS DescribeCluster, the service-account CA).
pub async fn cluster_join(
    client: &kube::Client,
    clients: &Clients,
    options: &Options,
) -> Result<crate::cluster::ClusterJoin, String> {
    use crate::cluster;
    let j = &options.join;
    let complete = j.endpoint.is_some() && j.ca.is_some() && j.service_cidr.is_some();
    let (described, describe_error) = if complete {
        (cluster::Described::default(), None)
    } else {
        match cluster::describe(&clients.eks, &options.cluster_name).await {
            Ok(d) => (d, None),
            Err(e) => (cluster::Described::default(), Some(e)),
        }
    };
    let version = match &j.version {
        Some(_) => None,
        None => client.apiserver_version().await.ok().map(|v| v.git_version),
    };
    let join = cluster::resolve(
        j,
        &described,
        version.as_deref(),
        service_account_ca().as_deref(),
        describe_error.as_deref(),
    )
    .map_err(|e| e.to_string())?;
    tracing::info!(endpoint = %join.endpoint, service_cidr = %join.service_cidr, version = %join.version,
        described = describe_error.is_none() && !complete, "nodes will join with these cluster settings");
    Ok(join)
}

/// Where EventBridge interruption events arrive (`--interruption-queue`).
#[derive(Debug, Clone)]
pub struct QueueOptions {
    /// SQS queue name or URL.
    pub queue: String,
    /// Endpoint override (moto); None uses AWS.
    pub endpoint: Option<String>,
    pub region: String,
}

/// Builds the provider and spawns its background loops.
pub async fn start(
    client: kube::Client,
    options: Options,
    unavailable: UnavailableOfferings,
) -> Result<Arc<AwsProvider>, String> {
    let clients = Clients::new(&options.region, options.endpoint.as_deref()).await;
    let join = cluster_join(&client, &clients, &options).await?;
    let settings = Settings {
        region: options.region.clone(),
        cluster_name: options.cluster_name.clone(),
        cluster_endpoint: join.endpoint,
        cluster_ca: join.ca,
        service_cidr: join.service_cidr,
        ami_parameters: AmiParameters {
            prefix: options.ssm_prefix.clone(),
            kubernetes_version: join.version,
        },
        catalog_ttl: Duration::from_secs(300),
        sweep_interval: Settings::DEFAULT_SWEEP_INTERVAL,
    };
    let classes = Arc::new(KubeNodeClasses(kube::Api::all(client.clone())));
    let provider = Arc::new(AwsProvider::new(
        clients.clone(),
        settings.clone(),
        classes,
        unavailable,
    ));
    if let Err(e) = provider.refresh().await {
        tracing::warn!(error = %e, "initial instance type discovery failed; retrying in the background");
    }
    tokio::spawn(provider.clone().refresh_forever());
    tokio::spawn(resolve_classes_forever(
        client.clone(),
        clients.clone(),
        provider.profiles(),
        settings.ami_parameters,
        nodeclass::SecurityGroupCache::new(options.security_group_refresh_interval),
    ));
    tokio::spawn(cleanup_templates_forever(provider.clone(), client.clone()));
    Ok(provider)
}

/// Resolves the queue URL and spawns [`interruption::run`], which marks the NodeClaims of
/// interrupted instances `Interrupted`. Fails when the queue cannot be found, or its URL names
/// no account to check events against, so a typo in `--interruption-queue` stops the
/// provisioner instead of silently ignoring notices. Returns
/// the loop's counters for `/metrics`.
pub async fn start_interruption_queue(
    client: kube::Client,
    options: QueueOptions,
) -> Result<Arc<QueueStats>, String> {
    let clients = Clients::new(&options.region, options.endpoint.as_deref()).await;
    let q = options.queue;
    let url = if q.starts_with("http") {
        q
    } else {
        clients
            .sqs
            .get_queue_url()
            .queue_name(&q)
            .send()
            .await
            .map_err(|e| {
                format!(
                    "GetQueueUrl {q}: {}",
                    aws_sdk_sqs::error::DisplayErrorContext(e)
                )
            })?
            .queue_url
            .unwrap_or_default()
    };
    let queue = Queue::new(clients.sqs, url, &options.region)?;
    tracing::info!(queue = %queue.url, account = %queue.origin.account, region = %queue.origin.region,
        "polling the interruption queue");
    let stats = queue.stats.clone();
    tokio::spawn(interruption::run(queue, client));
    Ok(stats)
}

/// Every 10 minutes, deletes launch templates no EC2NodeClass would launch with any more.
pub async fn cleanup_templates_forever(provider: Arc<AwsProvider>, client: kube::Client) {
    let api: kube::Api<EC2NodeClass> = kube::Api::all(client);
    loop {
        tokio::time::sleep(Duration::from_secs(600)).await;
        let classes = match api.list(&Default::default()).await {
            Ok(list) => list.items,
            Err(e) => {
                tracing::warn!(error = %e, "listing EC2NodeClasses failed; launch template cleanup skipped");
                continue;
            }
        };
        if let Err(e) = provider.cleanup_templates(&classes).await {
            tracing::warn!(error = %e, "launch template cleanup failed");
        }
    }
}

/// The EC2NodeClass status controller, kept thin: every 30 s, resolve each class and write the
/// status when it changed (conditions compared without their timestamps), then delete the
/// instance profiles of classes that are gone and that no NodeClaim still uses.
pub async fn resolve_classes_forever(
    client: kube::Client,
    clients: Clients,
    profiles: Profiles,
    params: AmiParameters,
    groups: nodeclass::SecurityGroupCache,
) {
    let api: kube::Api<EC2NodeClass> = kube::Api::all(client.clone());
    let claims: kube::Api<NodeClaim> = kube::Api::all(client);
    loop {
        match api.list(&Default::default()).await {
            Ok(list) => {
                let mut needed: BTreeSet<String> = BTreeSet::new();
                for class in list {
                    let name = class.metadata.name.clone().unwrap_or_default();
                    needed.insert(name.clone());
                    match nodeclass::resolve(
                        &clients.ec2,
                        &clients.ssm,
                        &profiles,
                        &params,
                        &name,
                        &class.spec,
                        &groups,
                    )
                    .await
                    {
                        Ok(mut status) => {
                            let old = class.status.clone().unwrap_or_default();
                            if !nodeclass::status_changed(&old, &status) {
                                continue;
                            }
                            for c in &mut status.conditions {
                                c.observed_generation = class.metadata.generation;
                            }
                            let patch = nodeclass::status_patch(&status);
                            match api
                                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                                .await
                            {
                                Ok(_) => {
                                    tracing::info!(ec2nodeclass = %name, subnets = status.subnets.len(),
                                    security_groups = status.security_groups.len(), amis = status.amis.len(), "EC2NodeClass resolved")
                                }
                                Err(e) => {
                                    tracing::warn!(ec2nodeclass = %name, error = %e, "writing EC2NodeClass status failed")
                                }
                            }
                        }
                        Err(e) => {
                            tracing::warn!(ec2nodeclass = %name, error = %e, "resolving EC2NodeClass failed")
                        }
                    }
                }
                match claims.list(&Default::default()).await {
                    Ok(list) => {
                        needed.extend(list.into_iter().map(|c| c.spec.node_class_ref.name));
                        if let Err(e) = profiles.collect_garbage(&needed).await {
                            tracing::warn!(error = %e, "instance profile cleanup failed");
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "listing NodeClaims failed; instance profile cleanup skipped")
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "listing EC2NodeClasses failed"),
        }
        tokio::time::sleep(Duration::from_secs(30)).await;
    }
}
