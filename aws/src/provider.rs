//! [`AwsProvider`]: the `CloudProvider` for EC2. Launches go through CreateFleet (type instant)
//! with one override per allowed pool; instances carry tags naming the cluster, NodePool,
//! NodeClaim and class, which is how a relaunch after a crash finds its earlier instance and
//! how garbage collection finds strays.

use adze_cloud::sync::MutexExt;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use adze_api::NodeClaim;
use adze_api::ec2nodeclass::{
    AmiFamily, BlockDevice, EC2NODECLASS_TAG, EC2NodeClass, EC2NodeClassSpec, EC2NodeClassStatus,
    InterfaceType,
};
use adze_cloud::{CloudError, CloudProvider, Instance, UnavailableOfferings};
use adze_scheduling::instance_type::Reservation;
use adze_scheduling::{InstanceType, kubelet_expr, labels, node_class};
use aws_sdk_ec2::types::{
    CapacityReservationPreference, CapacityReservationTarget,
    ConnectionTrackingSpecificationRequest, DefaultTargetCapacityType, Filter,
    FleetLaunchTemplateConfigRequest, FleetLaunchTemplateOverridesRequest,
    FleetLaunchTemplateSpecificationRequest, FleetOnDemandAllocationStrategy, FleetType,
    LaunchTemplateBlockDeviceMappingRequest, LaunchTemplateCapacityReservationSpecificationRequest,
    LaunchTemplateEbsBlockDeviceRequest, LaunchTemplateEnclaveOptionsRequest,
    LaunchTemplateHttpTokensState, LaunchTemplateIamInstanceProfileSpecificationRequest,
    LaunchTemplateInstanceMarketOptionsRequest, LaunchTemplateInstanceMetadataEndpointState,
    LaunchTemplateInstanceMetadataOptionsRequest, LaunchTemplateInstanceMetadataProtocolIpv6,
    LaunchTemplateInstanceNetworkInterfaceSpecificationRequest,
    LaunchTemplateTagSpecificationRequest, MarketType, OnDemandOptionsRequest,
    RequestLaunchTemplateData, ResourceType, SpotAllocationStrategy, SpotOptionsRequest, Tag,
    TagSpecification, TargetCapacitySpecificationRequest,
};
use base64::Engine;
use futures::future::BoxFuture;
use sha2::{Digest, Sha256};

use crate::clients::Clients;
use crate::error::{AwsError, ec2_err};
use crate::instance_profile::Profiles;
use crate::instance_types::Catalog;
use crate::nodeclass::{self, AmiParameters};
use crate::selection::{self, Candidate, FleetError};
use crate::sweep::{Cached, PAGE_SIZE, paginate};
use crate::userdata::{self, Bootstrap};

/// Tag holding a hash of the EC2NodeClass spec the instance was launched from (drift).
pub const CLASS_HASH_TAG: &str = "aws.adze.sh/ec2nodeclass-hash";
/// At most this many overrides go into one CreateFleet (cheapest first).
pub const MAX_OVERRIDES: usize = 100;

/// Where the provider finds EC2NodeClasses: the apiserver in production, a map in tests.
pub trait NodeClasses: Send + Sync {
    fn get<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<EC2NodeClass>, String>>;
}

/// A fixed set of classes.
pub struct StaticNodeClasses(pub BTreeMap<String, EC2NodeClass>);

impl NodeClasses for StaticNodeClasses {
    fn get<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<EC2NodeClass>, String>> {
        Box::pin(async move { Ok(self.0.get(name).cloned()) })
    }
}

/// Classes read from the apiserver.
pub struct KubeNodeClasses(pub kube::Api<EC2NodeClass>);

impl NodeClasses for KubeNodeClasses {
    fn get<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<EC2NodeClass>, String>> {
        Box::pin(async move { self.0.get_opt(name).await.map_err(|e| e.to_string()) })
    }
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub region: String,
    pub cluster_name: String,
    pub cluster_endpoint: String,
    /// Base64 PEM of the cluster CA, written into user data.
    pub cluster_ca: String,
    /// The cluster's service CIDR, written into user data ([`crate::cluster`]).
    pub service_cidr: String,
    pub ami_parameters: AmiParameters,
    /// How long a discovered instance-type list is used before it is refreshed.
    pub catalog_ttl: Duration,
    /// How long one listing of the cluster's instances (the sweep) answers drift checks and
    /// garbage collection before it is taken again: disruption polls every 10 s, and one sweep
    /// per poll costs a DescribeInstances page per 1,000 instances instead of a call per claim.
    pub sweep_interval: Duration,
}

impl Settings {
    /// [`Settings::sweep_interval`] unless told otherwise: the disruption poll.
    pub const DEFAULT_SWEEP_INTERVAL: Duration = Duration::from_secs(10);
}

pub struct AwsProvider {
    pub clients: Clients,
    pub settings: Settings,
    classes: Arc<dyn NodeClasses>,
    catalog: Catalog,
    unavailable: UnavailableOfferings,
    templates: Mutex<HashSet<String>>,
    sweep: Cached<Sweep>,
    /// The EKS cluster's ARN, from DescribeCluster on the first zonal-shift reading.
    cluster_arn: Mutex<Option<String>>,
}

/// The cluster's live instances by id, as one paginated DescribeInstances saw them.
#[derive(Debug, Default)]
pub struct Sweep {
    pub instances: HashMap<String, aws_sdk_ec2::types::Instance>,
    /// DescribeInstances pages it took.
    pub pages: usize,
}

/// Which of the values a class resolves an instance no longer matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drift {
    pub image_ok: bool,
    pub subnet_ok: bool,
    pub sgs_ok: bool,
}

impl Drift {
    /// Only the values the class resolves drift here (Karpenter v1's dynamic drift). Its
    /// static fields drift by the hash the provisioner stamps on the NodeClaim
    /// (`adze.sh/ec2nodeclass-hash`), versioned so that an upgrade replaces nothing.
    pub fn of(i: &aws_sdk_ec2::types::Instance, status: &EC2NodeClassStatus) -> Drift {
        let image_ok = i
            .image_id
            .as_ref()
            .is_some_and(|img| status.amis.iter().any(|a| &a.id == img));
        let subnet_ok = i
            .subnet_id
            .as_ref()
            .is_some_and(|s| status.subnets.iter().any(|x| &x.id == s));
        let sgs: BTreeSet<&str> = i
            .security_groups
            .iter()
            .flatten()
            .filter_map(|g| g.group_id.as_deref())
            .collect();
        let want: BTreeSet<&str> = status
            .security_groups
            .iter()
            .map(|g| g.id.as_str())
            .collect();
        // EC2 always reports at least one group; none reported (moto, for fleet launches) is unknown.
        let sgs_ok = sgs.is_empty() || sgs == want;
        Drift {
            image_ok,
            subnet_ok,
            sgs_ok,
        }
    }

    pub fn drifted(&self) -> bool {
        !(self.image_ok && self.subnet_ok && self.sgs_ok)
    }
}

/// A hash of the class spec, stable across runs (serde_json of ordered fields and maps).
pub fn spec_hash(spec: &EC2NodeClassSpec) -> String {
    let json = serde_json::to_vec(spec).unwrap_or_default();
    hex16(&json)
}

/// The launch template's `EnclaveOptions`: the class's `enclaveOptions.enabled` as written
/// (false too, which is EC2's default), `None` when unset.
pub fn enclave_options(spec: &EC2NodeClassSpec) -> Option<LaunchTemplateEnclaveOptionsRequest> {
    let enabled = spec.enclave_options.as_ref()?.enabled?;
    Some(
        LaunchTemplateEnclaveOptionsRequest::builder()
            .enabled(enabled)
            .build(),
    )
}

/// The launch template's network interfaces, or `None` when EC2's default single interface
/// will do (the security groups then go at the top level). The class's `networkInterfaces`
/// are launched as written; a public-IP choice or connection-tracking timeouts alone need the
/// primary interface spelled out. EC2 refuses security groups both on interfaces and at the
/// top level, so they go on every interface, EFA-only ones included. Connection tracking
/// applies to the IP (`interface`) interfaces; EFA-only ones carry no IP traffic.
pub fn network_interface_specs(
    spec: &EC2NodeClassSpec,
    groups: &[String],
) -> Option<Vec<LaunchTemplateInstanceNetworkInterfaceSpecificationRequest>> {
    let conntrack = spec.connection_tracking.as_ref().map(|c| {
        ConnectionTrackingSpecificationRequest::builder()
            .set_tcp_established_timeout(c.tcp_established_timeout)
            .set_udp_stream_timeout(c.udp_stream_timeout)
            .set_udp_timeout(c.udp_timeout)
            .build()
    });
    let primary = || {
        LaunchTemplateInstanceNetworkInterfaceSpecificationRequest::builder()
            .device_index(0)
            .set_associate_public_ip_address(spec.associate_public_ip_address)
            .set_groups(Some(groups.to_vec()))
            .set_connection_tracking_specification(conntrack.clone())
    };
    if spec.network_interfaces.is_empty() {
        if spec.associate_public_ip_address.is_none() && conntrack.is_none() {
            return None;
        }
        return Some(vec![primary().build()]);
    }
    Some(
        spec.network_interfaces
            .iter()
            .map(|n| {
                let ip = n.interface_type == InterfaceType::Interface;
                LaunchTemplateInstanceNetworkInterfaceSpecificationRequest::builder()
                    .network_card_index(n.network_card_index)
                    .device_index(n.device_index)
                    .interface_type(n.interface_type.as_str())
                    .set_groups(Some(groups.to_vec()))
                    // Validation allows a public-IP choice only with a single interface.
                    .set_associate_public_ip_address(
                        spec.associate_public_ip_address
                            .filter(|_| n.network_card_index == 0 && n.device_index == 0),
                    )
                    .set_connection_tracking_specification(conntrack.clone().filter(|_| ip))
                    .build()
            })
            .collect(),
    )
}

/// One EBS mapping as the launch template takes it.
pub fn ebs_request(e: &BlockDevice) -> LaunchTemplateEbsBlockDeviceRequest {
    let mut ebs = LaunchTemplateEbsBlockDeviceRequest::builder()
        .set_volume_size(e.volume_size_bytes().map(|b| b.div_ceil(1 << 30) as i32))
        .set_iops(e.iops.map(|v| v as i32))
        .set_throughput(e.throughput.map(|v| v as i32))
        .set_encrypted(e.encrypted)
        .set_kms_key_id(e.kms_key_id.clone())
        .set_delete_on_termination(e.delete_on_termination)
        .set_snapshot_id(e.snapshot_id.clone())
        .set_volume_initialization_rate(e.volume_initialization_rate);
    if let Some(t) = e.volume_type {
        ebs = ebs.volume_type(aws_sdk_ec2::types::VolumeType::from(
            format!("{t:?}").to_lowercase().as_str(),
        ));
    }
    ebs.build()
}

fn hex16(bytes: &[u8]) -> String {
    Sha256::digest(bytes)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn tag(k: &str, v: &str) -> Tag {
    Tag::builder().key(k).value(v).build()
}

/// Labels that name one instance's own facts; kubelet or the lifecycle sets them, and keeping
/// them out of user data lets claims of one NodePool share a launch template.
fn is_instance_label(key: &str) -> bool {
    [
        labels::HOSTNAME,
        labels::INSTANCE_TYPE,
        labels::ZONE,
        labels::ZONE_ID,
        labels::REGION,
        labels::CAPACITY_TYPE,
        labels::NODECLAIM,
        labels::ARCH,
        labels::OS,
    ]
    .contains(&key)
        || key.starts_with("aws.adze.sh/instance-")
}

impl AwsProvider {
    pub fn new(
        clients: Clients,
        settings: Settings,
        classes: Arc<dyn NodeClasses>,
        unavailable: UnavailableOfferings,
    ) -> Self {
        AwsProvider {
            catalog: Catalog::new(settings.catalog_ttl),
            clients,
            settings,
            classes,
            unavailable,
            templates: Mutex::default(),
            sweep: Cached::default(),
            cluster_arn: Mutex::default(),
        }
    }

    /// The cluster's ARN (EKS DescribeCluster, asked until it answers, then kept).
    async fn cluster_arn(&self) -> Result<String, AwsError> {
        if let Some(arn) = self.cluster_arn.lock_or_recover().clone() {
            return Ok(arn);
        }
        let described = crate::cluster::describe(&self.clients.eks, &self.settings.cluster_name)
            .await
            .map_err(|message| AwsError::Api {
                call: "DescribeCluster",
                message,
            })?;
        let arn = described
            .arn
            .filter(|a| !a.is_empty())
            .ok_or_else(|| AwsError::Api {
                call: "DescribeCluster",
                message: format!(
                    "cluster {:?} has no ARN: ARC zonal shift knows EKS clusters by ARN",
                    self.settings.cluster_name
                ),
            })?;
        *self.cluster_arn.lock_or_recover() = Some(arn.clone());
        Ok(arn)
    }

    /// Discovers instance types now if the cached list is stale.
    pub async fn refresh(&self) -> Result<(), AwsError> {
        self.catalog
            .refresh_if_stale(
                &self.clients.ec2,
                &self.clients.pricing,
                &self.settings.region,
            )
            .await
    }

    /// Keeps the instance-type list fresh: call from a spawned task.
    pub async fn refresh_forever(self: Arc<Self>) {
        loop {
            if let Err(e) = self.refresh().await {
                tracing::warn!(error = %e, "instance type refresh failed; keeping the previous list");
            }
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
    }

    /// This cluster's instance profiles (for classes that name a `role`).
    pub fn profiles(&self) -> Profiles {
        Profiles {
            iam: self.clients.iam.clone(),
            cluster: self.settings.cluster_name.clone(),
            region: self.settings.region.clone(),
        }
    }

    fn cluster_tag(&self) -> String {
        format!("kubernetes.io/cluster/{}", self.settings.cluster_name)
    }

    async fn class_of(
        &self,
        claim: &NodeClaim,
    ) -> Result<(EC2NodeClass, EC2NodeClassStatus), AwsError> {
        let name = &claim.spec.node_class_ref.name;
        let class = self
            .classes
            .get(name)
            .await
            .map_err(|e| AwsError::Invalid(format!("reading EC2NodeClass {name}: {e}")))?
            .ok_or_else(|| {
                AwsError::Invalid(format!("spec.nodeClassRef: EC2NodeClass {name} not found"))
            })?;
        let status = self.resolved_status(name, &class).await?;
        if status.instance_profile.is_none() {
            let why = adze_api::conditions::find(&status.conditions, adze_api::conditions::READY)
                .map(|c| c.message.clone())
                .unwrap_or_default();
            return Err(AwsError::Invalid(format!(
                "EC2NodeClass {name} has no instance profile yet ({why})"
            )));
        }
        Ok((class, status))
    }

    /// The class's status as its controller resolved it or, when that is empty (not resolved
    /// yet, or resolved to nothing), resolved now.
    async fn resolved_status(
        &self,
        name: &str,
        class: &EC2NodeClass,
    ) -> Result<EC2NodeClassStatus, AwsError> {
        match &class.status {
            Some(s) if is_resolved(s) => Ok(s.clone()),
            _ => {
                nodeclass::resolve(
                    &self.clients.ec2,
                    &self.clients.ssm,
                    &self.profiles(),
                    &self.settings.ami_parameters,
                    name,
                    &class.spec,
                    &nodeclass::SecurityGroupCache::uncached(),
                )
                .await
            }
        }
    }

    /// Our live instance for the claim, if one was launched before (possibly by a process that
    /// crashed before recording it).
    pub async fn find_by_claim(
        &self,
        claim_name: &str,
    ) -> Result<Option<aws_sdk_ec2::types::Instance>, AwsError> {
        let found = self
            .describe(vec![
                Filter::builder()
                    .name(format!("tag:{}", labels::NODECLAIM))
                    .values(claim_name)
                    .build(),
                Filter::builder()
                    .name(format!("tag:{}", self.cluster_tag()))
                    .values("owned")
                    .build(),
                live_states(),
            ])
            .await?;
        Ok(found.into_iter().next())
    }

    async fn describe(
        &self,
        filters: Vec<Filter>,
    ) -> Result<Vec<aws_sdk_ec2::types::Instance>, AwsError> {
        Ok(self.describe_pages(filters, None).await?.0)
    }

    /// Every instance matching `filters`, `max_results` a page, and how many pages it took.
    async fn describe_pages(
        &self,
        filters: Vec<Filter>,
        max_results: Option<i32>,
    ) -> Result<(Vec<aws_sdk_ec2::types::Instance>, usize), AwsError> {
        let mut pages = 0;
        let mut last: Option<String> = None;
        let out = paginate(|next| {
            pages += 1;
            // A token handed back twice would page forever; EC2 should never do it.
            let repeated = next.is_some() && next == last;
            last.clone_from(&next);
            let req = self
                .clients
                .ec2
                .describe_instances()
                .set_filters(Some(filters.clone()))
                .set_max_results(max_results)
                .set_next_token(next);
            async move {
                if repeated {
                    return Err(AwsError::Api {
                        call: "DescribeInstances",
                        message: "the same NextToken came back twice; stopped paging".into(),
                    });
                }
                let resp = req.send().await.map_err(ec2_err("DescribeInstances"))?;
                let items: Vec<_> = resp
                    .reservations
                    .unwrap_or_default()
                    .into_iter()
                    .flat_map(|r| r.instances.unwrap_or_default())
                    .collect();
                Ok::<_, AwsError>((items, resp.next_token))
            }
        })
        .await?;
        Ok((out, pages))
    }

    /// Filters for this cluster's NodeClaim instances that are still alive.
    fn cluster_filters(&self) -> Vec<Filter> {
        vec![
            Filter::builder()
                .name(format!("tag:{}", self.cluster_tag()))
                .values("owned")
                .build(),
            Filter::builder()
                .name("tag-key")
                .values(labels::NODECLAIM)
                .build(),
            live_states(),
        ]
    }

    /// The cluster's instances, listed at most once per [`Settings::sweep_interval`] however
    /// many callers ask (they share one in-flight listing). A sweep is up to an interval old:
    /// an instance launched since is missing from it, which callers read as "not known yet".
    pub async fn sweep(&self) -> Result<Arc<Sweep>, AwsError> {
        self.sweep
            .get(Instant::now(), self.settings.sweep_interval, || async {
                let (found, pages) = self
                    .describe_pages(self.cluster_filters(), Some(PAGE_SIZE))
                    .await
                    .map_err(|e| e.to_string())?;
                let instances = found
                    .into_iter()
                    .filter_map(|i| Some((i.instance_id.clone()?, i)))
                    .collect();
                tracing::debug!(pages, "swept the cluster's instances");
                Ok(Sweep { instances, pages })
            })
            .await
            .map_err(|message| AwsError::Api {
                call: "DescribeInstances",
                message,
            })
    }

    /// The class's resolved status to judge drift against; None when there is none to judge
    /// by (the class is gone, or resolves to no image, subnet or group right now — replacing
    /// every node because a selector matches nothing for a moment would be worse than waiting).
    async fn drift_status(&self, name: &str) -> Result<Option<EC2NodeClassStatus>, AwsError> {
        let class = self
            .classes
            .get(name)
            .await
            .map_err(|e| AwsError::Invalid(format!("reading EC2NodeClass {name}: {e}")))?;
        let Some(class) = class else {
            tracing::warn!(
                nodeclass = name,
                "EC2NodeClass not found; its nodes are not checked for drift"
            );
            return Ok(None);
        };
        let status = self.resolved_status(name, &class).await?;
        if !is_resolved(&status) {
            tracing::warn!(
                nodeclass = name,
                "EC2NodeClass resolves to no image, subnet or security group; its nodes are not checked for drift"
            );
            return Ok(None);
        }
        Ok(Some(status))
    }

    /// Whether each `(claim, instance)` drifted, reading each class once.
    async fn judge<'c>(
        &self,
        found: Vec<(&'c NodeClaim, &aws_sdk_ec2::types::Instance)>,
    ) -> Result<BTreeSet<&'c str>, AwsError> {
        let mut by_class: BTreeMap<&str, Vec<_>> = BTreeMap::new();
        for (c, i) in found {
            by_class
                .entry(c.spec.node_class_ref.name.as_str())
                .or_default()
                .push((c, i));
        }
        let mut out = BTreeSet::new();
        for (class, members) in by_class {
            let Some(status) = self.drift_status(class).await? else {
                continue;
            };
            for (c, i) in members {
                let d = Drift::of(i, &status);
                if d.drifted() {
                    tracing::info!(
                        instance = i.instance_id.as_deref().unwrap_or_default(),
                        nodeclaim = c.metadata.name.as_deref().unwrap_or_default(),
                        nodeclass = class,
                        image_ok = d.image_ok,
                        subnet_ok = d.subnet_ok,
                        sgs_ok = d.sgs_ok,
                        "instance's image, subnet or security groups are no longer its EC2NodeClass's"
                    );
                    out.insert(c.metadata.name.as_deref().unwrap_or_default());
                }
            }
        }
        Ok(out)
    }

    /// [`CloudProvider::drifted_claims`]: every claim against one sweep.
    async fn drifted_in_sweep(
        &self,
        claims: &[Arc<NodeClaim>],
    ) -> Result<BTreeSet<String>, CloudError> {
        let with_ids: Vec<(&NodeClaim, &str)> = claims
            .iter()
            .filter_map(|c| {
                let id = c
                    .status
                    .as_ref()
                    .and_then(|s| s.provider_id.as_deref())
                    .and_then(crate::interruption::instance_id_of)?;
                Some((c.as_ref(), id))
            })
            .collect();
        if with_ids.is_empty() {
            return Ok(BTreeSet::new());
        }
        let sweep = self.sweep().await?;
        // Missing from the sweep: launched after it (or gone); not drifted as far as we know.
        let found = with_ids
            .into_iter()
            .filter_map(|(c, id)| Some((c, sweep.instances.get(id)?)))
            .collect();
        Ok(self
            .judge(found)
            .await?
            .into_iter()
            .map(String::from)
            .collect())
    }

    fn to_instance(&self, i: &aws_sdk_ec2::types::Instance) -> Instance {
        let zone = i
            .placement
            .as_ref()
            .and_then(|p| p.availability_zone.clone())
            .unwrap_or_default();
        let type_name = i
            .instance_type
            .as_ref()
            .map(|t| t.as_str().to_string())
            .unwrap_or_default();
        let capacity_type = if i
            .instance_lifecycle
            .as_ref()
            .is_some_and(|l| l.as_str() == "spot")
        {
            labels::CAPACITY_TYPE_SPOT
        } else if i.capacity_reservation_id.is_some() {
            labels::CAPACITY_TYPE_RESERVED
        } else {
            labels::CAPACITY_TYPE_ON_DEMAND
        };
        self.instance_of(
            i.instance_id.as_deref().unwrap_or_default(),
            &type_name,
            &zone,
            capacity_type,
        )
    }

    /// An instance as the NodeClaim records it, capacity from the catalog's type.
    fn instance_of(&self, id: &str, type_name: &str, zone: &str, capacity_type: &str) -> Instance {
        let catalog = self.catalog.get();
        let t = catalog.iter().find(|t| t.name == type_name);
        Instance {
            provider_id: format!("aws:///{zone}/{id}"),
            instance_type: type_name.to_string(),
            zone: zone.to_string(),
            capacity_type: capacity_type.into(),
            capacity: t.map(|t| t.capacity.to_quantities()).unwrap_or_default(),
            allocatable: t
                .map(|t| t.allocatable().to_quantities())
                .unwrap_or_default(),
        }
    }

    /// The launch template for one (image, user data, class) combination, created once.
    async fn ensure_template(
        &self,
        class: &EC2NodeClass,
        status: &EC2NodeClassStatus,
        ami: &str,
        user_data: &str,
        reservation: Option<&Reservation>,
    ) -> Result<String, AwsError> {
        let spec = &class.spec;
        let class_name = class.metadata.name.clone().unwrap_or_default();
        let mut key = format!("{ami}\n{class_name}\n{}\n{user_data}", spec_hash(spec));
        if let Some(r) = reservation {
            key.push_str(&format!("\n{}", r.id));
        }
        // A group deleted and made again under the same name has a new id: a new template.
        if let Some(pg) = &status.placement_group {
            key.push_str(&format!("\npg:{}", pg.id));
        }
        let name = format!(
            "adze-{}-{}",
            self.settings.cluster_name,
            hex16(key.as_bytes())
        );
        if self.templates.lock_or_recover().contains(&name) {
            return Ok(name);
        }
        let exists = self
            .clients
            .ec2
            .describe_launch_templates()
            .filters(
                Filter::builder()
                    .name("launch-template-name")
                    .values(&name)
                    .build(),
            )
            .send()
            .await
            .ok()
            .and_then(|r| r.launch_templates)
            .is_some_and(|t| {
                t.iter()
                    .any(|t| t.launch_template_name.as_deref() == Some(&name))
            });
        if !exists {
            let mo = &spec.metadata_options;
            let metadata = LaunchTemplateInstanceMetadataOptionsRequest::builder()
                .http_tokens(LaunchTemplateHttpTokensState::from(
                    format!("{:?}", mo.http_tokens).to_lowercase().as_str(),
                ))
                .http_put_response_hop_limit(mo.http_put_response_hop_limit as i32)
                .http_endpoint(LaunchTemplateInstanceMetadataEndpointState::from(
                    format!("{:?}", mo.http_endpoint).to_lowercase().as_str(),
                ))
                .http_protocol_ipv6(LaunchTemplateInstanceMetadataProtocolIpv6::from(
                    format!("{:?}", mo.http_protocol_ipv6)
                        .to_lowercase()
                        .as_str(),
                ))
                .build();
            let mut tags: Vec<Tag> = spec.tags.iter().map(|(k, v)| tag(k, v)).collect();
            tags.push(tag(&self.cluster_tag(), "owned"));
            tags.push(tag(EC2NODECLASS_TAG, &class_name));
            let groups: Vec<String> = status
                .security_groups
                .iter()
                .map(|g| g.id.clone())
                .collect();
            let mut data = RequestLaunchTemplateData::builder()
                .image_id(ami)
                .user_data(base64::engine::general_purpose::STANDARD.encode(user_data))
                .metadata_options(metadata);
            data = match network_interface_specs(spec, &groups) {
                Some(interfaces) => data.set_network_interfaces(Some(interfaces)),
                None => data.set_security_group_ids(Some(groups)),
            };
            // Everything a launch creates carries the cluster tag and the class tag: the IAM
            // policy allows creating only what does, and the cluster tag alone is also on nodes
            // Adze did not launch (deploy/aws/adze.yaml, tests/iam_policy.rs).
            for kind in [
                ResourceType::Volume,
                ResourceType::NetworkInterface,
                ResourceType::SpotInstancesRequest,
            ] {
                data = data.tag_specifications(
                    LaunchTemplateTagSpecificationRequest::builder()
                        .resource_type(kind)
                        .set_tags(Some(tags.clone()))
                        .build(),
                );
            }
            // Into this reservation and no other: a targeted ODCR takes only launches naming
            // it, and a Capacity Block also needs its market type. An unreserved launch of a
            // class that selects reservations opts out of EC2's open matching, which would
            // otherwise put it into a matching `open` ODCR — a slot planned for a reserved claim.
            if reservation.is_none() && !spec.capacity_reservation_selector_terms.is_empty() {
                data = data.capacity_reservation_specification(
                    LaunchTemplateCapacityReservationSpecificationRequest::builder()
                        .capacity_reservation_preference(CapacityReservationPreference::None)
                        .build(),
                );
            }
            if let Some(r) = reservation {
                data = data.capacity_reservation_specification(
                    LaunchTemplateCapacityReservationSpecificationRequest::builder()
                        .capacity_reservation_target(
                            CapacityReservationTarget::builder()
                                .capacity_reservation_id(&r.id)
                                .build(),
                        )
                        .build(),
                );
                if r.kind == labels::RESERVATION_TYPE_CAPACITY_BLOCK {
                    data = data.instance_market_options(
                        LaunchTemplateInstanceMarketOptionsRequest::builder()
                            .market_type(MarketType::CapacityBlock)
                            .build(),
                    );
                }
            }
            // Into the class's placement group, by the id it resolved to.
            if let Some(pg) = &status.placement_group {
                data = data.placement(
                    aws_sdk_ec2::types::LaunchTemplatePlacementRequest::builder()
                        .group_id(&pg.id)
                        .build(),
                );
            }
            if let Some(profile) = &status.instance_profile {
                data = data.iam_instance_profile(
                    LaunchTemplateIamInstanceProfileSpecificationRequest::builder()
                        .name(profile)
                        .build(),
                );
            }
            if let Some(e) = enclave_options(spec) {
                data = data.enclave_options(e);
            }
            if let Some(m) = spec.detailed_monitoring {
                data = data.monitoring(
                    aws_sdk_ec2::types::LaunchTemplatesMonitoringRequest::builder()
                        .enabled(m)
                        .build(),
                );
            }
            for b in &spec.block_device_mappings {
                let mut m =
                    LaunchTemplateBlockDeviceMappingRequest::builder().device_name(&b.device_name);
                if let Some(e) = &b.ebs {
                    m = m.ebs(ebs_request(e));
                }
                data = data.block_device_mappings(m.build());
            }
            // What cleanup judges the template by (crate::templates::stale).
            tags.push(tag(CLASS_HASH_TAG, &spec_hash(spec)));
            tags.push(tag(crate::templates::IMAGE_TAG, ami));
            if let Some(r) = reservation {
                tags.push(tag(labels::CAPACITY_RESERVATION_ID, &r.id));
            }
            let created = self
                .clients
                .ec2
                .create_launch_template()
                .launch_template_name(&name)
                .launch_template_data(data.build())
                .tag_specifications(
                    TagSpecification::builder()
                        .resource_type(ResourceType::LaunchTemplate)
                        .set_tags(Some(tags))
                        .build(),
                )
                .send()
                .await;
            if let Err(e) = created {
                let text = aws_sdk_ec2::error::DisplayErrorContext(&e).to_string();
                // Another launch created it first.
                if !text.contains("AlreadyExists") {
                    return Err(AwsError::Api {
                        call: "CreateLaunchTemplate",
                        message: text,
                    });
                }
            }
            tracing::info!(template = %name, ami, reservation = ?reservation.map(|r| &r.id), "launch template created");
        }
        self.templates.lock_or_recover().insert(name.clone());
        Ok(name)
    }

    /// Deletes this cluster's launch templates that no launch would pick any more, given the
    /// EC2NodeClasses as they are now (see [`crate::templates::stale`]); returns their names.
    pub async fn cleanup_templates(
        &self,
        classes: &[EC2NodeClass],
    ) -> Result<Vec<String>, AwsError> {
        let prefix = format!("adze-{}-", self.settings.cluster_name);
        let mut found = Vec::new();
        let mut pages = self
            .clients
            .ec2
            .describe_launch_templates()
            .filters(
                Filter::builder()
                    .name(format!("tag:{}", self.cluster_tag()))
                    .values("owned")
                    .build(),
            )
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(ec2_err("DescribeLaunchTemplates"))?;
            for t in page.launch_templates.unwrap_or_default() {
                let Some(name) = t.launch_template_name.filter(|n| n.starts_with(&prefix)) else {
                    continue;
                };
                let tags: BTreeMap<String, String> = t
                    .tags
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|t| Some((t.key?, t.value?)))
                    .collect();
                found.push(crate::templates::Template {
                    name,
                    class: tags.get(EC2NODECLASS_TAG).cloned(),
                    class_hash: tags.get(CLASS_HASH_TAG).cloned(),
                    image: tags.get(crate::templates::IMAGE_TAG).cloned(),
                });
            }
        }
        let now: BTreeMap<String, crate::templates::Class> = classes
            .iter()
            .map(|c| {
                (
                    c.metadata.name.clone().unwrap_or_default(),
                    crate::templates::Class {
                        spec_hash: spec_hash(&c.spec),
                        images: c
                            .status
                            .iter()
                            .flat_map(|s| s.amis.iter().map(|a| a.id.clone()))
                            .collect(),
                    },
                )
            })
            .collect();
        let stale = crate::templates::stale(&found, &now);
        for name in &stale {
            self.templates.lock_or_recover().remove(name);
            self.clients
                .ec2
                .delete_launch_template()
                .launch_template_name(name)
                .send()
                .await
                .map_err(ec2_err("DeleteLaunchTemplate"))?;
            tracing::info!(template = %name, "deleted a launch template no EC2NodeClass uses any more");
        }
        Ok(stale)
    }

    async fn launch(&self, claim: &NodeClaim) -> Result<Instance, CloudError> {
        let claim_name = claim.metadata.name.clone().unwrap_or_default();
        if let Some(existing) = self.find_by_claim(&claim_name).await? {
            tracing::info!(nodeclaim = %claim_name, instance = ?existing.instance_id, "instance already launched for this claim");
            return Ok(self.to_instance(&existing));
        }
        let (class, status) = self.class_of(claim).await?;
        let family = class
            .spec
            .effective_ami_family()
            .unwrap_or(AmiFamily::Custom);
        self.refresh().await?;
        let reqs = selection::claim_requirements(claim).map_err(CloudError::Other)?;
        let requests = selection::claim_requests(claim).map_err(CloudError::Other)?;
        // The catalog as this class shapes it (zones, images, kubelet overhead, root volume):
        // the same view the planner had, so the claim's requests fit what is launched here.
        let facts = {
            let mut resolved = class.clone();
            resolved.status = Some(status.clone());
            adze_api::convert::nodeclass(&resolved).map_err(|e| CloudError::Other(e.to_string()))?
        };
        // The first resolved image that boots the type (architecture, accelerator drivers).
        let ami_for = |t: &InstanceType| -> Option<String> {
            status
                .amis
                .iter()
                .zip(&facts.images)
                .find(|(_, reqs)| node_class::image_fits(reqs, t))
                .map(|(a, _)| a.id.clone())
        };
        let mut tried_out: Vec<(String, String, String)> = Vec::new();
        for attempt in 1..=5 {
            let catalog = node_class::instance_types(
                &self.unavailable.apply(&self.catalog.get(), Instant::now()),
                &facts,
            )
            .map_err(|e| {
                CloudError::Other(format!(
                    "EC2NodeClass {}: {e}",
                    class.metadata.name.as_deref().unwrap_or_default()
                ))
            })?;
            let mut cands = selection::candidates(&reqs, &requests, &catalog, &status.subnets);
            cands.retain(|c| ami_for(&c.instance_type).is_some());
            let cands = if cands.is_empty() {
                cands
            } else {
                selection::pick_overrides(&reqs, &cands, MAX_OVERRIDES).map_err(|why| {
                    let (t, z, ct) = tried_out
                        .first()
                        .cloned()
                        .unwrap_or_else(|| ("*".into(), "*".into(), "*".into()));
                    CloudError::InsufficientCapacity {
                        instance_type: t,
                        zone: z,
                        capacity_type: ct,
                        message: format!("NodeClaim {claim_name}: {why}"),
                    }
                })?
            };
            if cands.is_empty() {
                let (t, z, ct) = tried_out
                    .first()
                    .cloned()
                    .unwrap_or_else(|| ("*".into(), "*".into(), "*".into()));
                return Err(CloudError::InsufficientCapacity {
                    instance_type: t,
                    zone: z,
                    capacity_type: ct,
                    message: format!(
                        "no launchable pool left for NodeClaim {claim_name} ({} ruled out by capacity errors)",
                        tried_out.len()
                    ),
                });
            }
            let capacity_type = cands[0].capacity_type.clone();
            // One launch template per (image, max pods, reservations, capacity
            // reservation): user data carries max pods, which the class-shaped type already
            // holds (overhead::max_pods), and the kubelet reservations with their expressions
            // evaluated for the type; a capacity reservation is targeted from the template.
            let spec_kubelet = userdata::KubeletConfig::from_spec(class.spec.kubelet.as_ref());
            let class_err = |e: kubelet_expr::EvalError| {
                CloudError::Other(format!(
                    "EC2NodeClass {}: spec.kubelet.{e}",
                    class.metadata.name.as_deref().unwrap_or_default()
                ))
            };
            // Compiled once per launch; evaluated per candidate type below.
            let reserved_exprs = [
                kubelet_expr::Reserved::compile("systemReserved", &spec_kubelet.system_reserved)
                    .map_err(class_err)?,
                kubelet_expr::Reserved::compile("kubeReserved", &spec_kubelet.kube_reserved)
                    .map_err(class_err)?,
            ];
            type Group = (String, i64, Option<String>, [BTreeMap<String, String>; 2]);
            let mut groups: BTreeMap<Group, Vec<&Candidate>> = BTreeMap::new();
            for c in &cands {
                let ami = ami_for(&c.instance_type).unwrap_or_default();
                let reservation = c.reservation.as_ref().map(|r| r.id.clone());
                let vars = kubelet_expr::Vars::of(&c.instance_type, c.instance_type.capacity.pods);
                let [system, kube] = &reserved_exprs;
                let reserved = [
                    system.resolve(&vars).map_err(class_err)?,
                    kube.resolve(&vars).map_err(class_err)?,
                ];
                groups
                    .entry((ami, c.instance_type.capacity.pods, reservation, reserved))
                    .or_default()
                    .push(c);
            }
            let mut configs = Vec::new();
            for ((ami, max_pods, _, [system_reserved, kube_reserved]), members) in &groups {
                let boot = Bootstrap {
                    cluster_name: self.settings.cluster_name.clone(),
                    cluster_endpoint: self.settings.cluster_endpoint.clone(),
                    cluster_ca: self.settings.cluster_ca.clone(),
                    service_cidr: self.settings.service_cidr.clone(),
                    max_pods: *max_pods,
                    kubelet: userdata::KubeletConfig {
                        system_reserved: system_reserved.clone(),
                        kube_reserved: kube_reserved.clone(),
                        ..spec_kubelet.clone()
                    },
                    instance_store_raid0: class.spec.instance_store_policy.is_some(),
                    labels: claim
                        .metadata
                        .labels
                        .clone()
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|(k, _)| !is_instance_label(k))
                        .collect(),
                    taints: claim
                        .spec
                        .taints
                        .iter()
                        .chain(&claim.spec.startup_taints)
                        .map(|t| {
                            format!(
                                "{}={}:{}",
                                t.key,
                                t.value.as_deref().unwrap_or_default(),
                                t.effect.as_str()
                            )
                        })
                        .collect(),
                };
                let ud = userdata::render(family, &boot, class.spec.user_data.as_deref());
                let reservation = members[0].reservation.as_ref();
                let template = self
                    .ensure_template(&class, &status, ami, &ud, reservation)
                    .await?;
                let overrides: Vec<_> = members
                    .iter()
                    .map(|c| {
                        FleetLaunchTemplateOverridesRequest::builder()
                            .instance_type(aws_sdk_ec2::types::InstanceType::from(
                                c.instance_type.name.as_str(),
                            ))
                            .subnet_id(&c.subnet_id)
                            .build()
                    })
                    .collect();
                configs.push(
                    FleetLaunchTemplateConfigRequest::builder()
                        .launch_template_specification(
                            FleetLaunchTemplateSpecificationRequest::builder()
                                .launch_template_name(template)
                                .version("$Latest")
                                .build(),
                        )
                        .set_overrides(Some(overrides))
                        .build(),
                );
            }
            let nodepool = claim
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(labels::NODEPOOL))
                .cloned()
                .unwrap_or_default();
            // The NodePool and NodeClaim tags are what the IAM policy checks before
            // TerminateInstances; the class tag what it checks on every launch.
            let mut tags: Vec<Tag> = class.spec.tags.iter().map(|(k, v)| tag(k, v)).collect();
            tags.extend([
                tag(&self.cluster_tag(), "owned"),
                tag("eks:eks-cluster-name", &self.settings.cluster_name),
                tag(labels::NODEPOOL, &nodepool),
                tag(labels::NODECLAIM, &claim_name),
                tag(
                    EC2NODECLASS_TAG,
                    class.metadata.name.as_deref().unwrap_or_default(),
                ),
                tag(CLASS_HASH_TAG, &spec_hash(&class.spec)),
                tag(
                    "Name",
                    &format!("{}/{claim_name}", self.settings.cluster_name),
                ),
            ]);
            let spot = capacity_type == labels::CAPACITY_TYPE_SPOT;
            // Candidates share one reservation type (selection::candidates).
            let capacity_block = cands[0]
                .reservation
                .as_ref()
                .is_some_and(|r| r.kind == labels::RESERVATION_TYPE_CAPACITY_BLOCK);
            let target = TargetCapacitySpecificationRequest::builder()
                .total_target_capacity(1)
                .default_target_capacity_type(if spot {
                    DefaultTargetCapacityType::Spot
                } else if capacity_block {
                    DefaultTargetCapacityType::CapacityBlock
                } else {
                    DefaultTargetCapacityType::OnDemand
                })
                .set_spot_target_capacity(spot.then_some(1))
                .set_on_demand_target_capacity((!spot).then_some(1))
                .build();
            // The same claim and attempt always send the same token: EC2 answers a repeated
            // CreateFleet (a retry after a timeout, a restart before the instance was visible
            // to DescribeInstances) with the first call's instances instead of new ones.
            let token = format!(
                "adze-{}",
                hex16(
                    format!(
                        "{}:{attempt}",
                        claim.metadata.uid.as_deref().unwrap_or(&claim_name)
                    )
                    .as_bytes()
                )
            );
            let mut req = self
                .clients
                .ec2
                .create_fleet()
                .client_token(token)
                .r#type(FleetType::Instant)
                .target_capacity_specification(target)
                .set_launch_template_configs(Some(configs))
                .tag_specifications(
                    TagSpecification::builder()
                        .resource_type(ResourceType::Instance)
                        .set_tags(Some(tags.clone()))
                        .build(),
                )
                .tag_specifications(
                    TagSpecification::builder()
                        .resource_type(ResourceType::Fleet)
                        .set_tags(Some(tags))
                        .build(),
                );
            req = if spot {
                req.spot_options(
                    SpotOptionsRequest::builder()
                        .allocation_strategy(SpotAllocationStrategy::PriceCapacityOptimized)
                        .build(),
                )
            } else {
                req.on_demand_options(
                    OnDemandOptionsRequest::builder()
                        .allocation_strategy(FleetOnDemandAllocationStrategy::LowestPrice)
                        .build(),
                )
            };
            let resp = req
                .send()
                .await
                .map_err(crate::error::launch_err("CreateFleet"))?;
            let errors: Vec<FleetError> = resp
                .errors
                .clone()
                .unwrap_or_default()
                .into_iter()
                .map(|e| {
                    let o = e.launch_template_and_overrides.and_then(|l| l.overrides);
                    FleetError {
                        instance_type: o
                            .as_ref()
                            .and_then(|o| o.instance_type.as_ref().map(|t| t.as_str().to_string())),
                        subnet_id: o.and_then(|o| o.subnet_id),
                        code: e.error_code.unwrap_or_default(),
                        message: e.error_message.unwrap_or_default(),
                    }
                })
                .collect();
            let ruled = selection::ruled_out(&errors, &cands);
            for (t, z, ct) in &ruled {
                self.unavailable.mark(t, z, ct, Instant::now());
            }
            tried_out.extend(ruled.iter().cloned());
            // What was launched comes from CreateFleet's own answer: DescribeInstances may not
            // know a new instance for a while (EC2 is eventually consistent), and the fleet
            // picks among the overrides, not necessarily the first.
            let launched = resp
                .instances
                .unwrap_or_default()
                .into_iter()
                .find_map(|i| {
                    let id = i.instance_ids.as_ref()?.first()?.clone();
                    let over = i.launch_template_and_overrides.and_then(|l| l.overrides);
                    let type_name =
                        i.instance_type
                            .map(|t| t.as_str().to_string())
                            .or_else(|| {
                                over.as_ref()?
                                    .instance_type
                                    .as_ref()
                                    .map(|t| t.as_str().to_string())
                            })?;
                    let subnet = over.as_ref().and_then(|o| o.subnet_id.clone());
                    let zone = over
                        .as_ref()
                        .and_then(|o| o.availability_zone.clone())
                        .or_else(|| {
                            let s = subnet.as_deref()?;
                            status
                                .subnets
                                .iter()
                                .find(|x| x.id == s)
                                .map(|x| x.zone.clone())
                        })
                        .unwrap_or_default();
                    let spot = i
                        .lifecycle
                        .as_ref()
                        .map(|l| l.as_str() == "spot")
                        .unwrap_or(spot);
                    Some((id, type_name, zone, spot))
                });
            if let Some((id, type_name, zone, spot)) = launched {
                let launched_as = if spot {
                    labels::CAPACITY_TYPE_SPOT
                } else {
                    capacity_type.as_str()
                };
                let mut out = self.instance_of(&id, &type_name, &zone, launched_as);
                // Capacity as this class shapes it (kubelet settings, root volume).
                if let Some(t) = catalog.iter().find(|t| t.name == out.instance_type) {
                    out.capacity = t.capacity.to_quantities();
                    out.allocatable = t.allocatable().to_quantities();
                }
                tracing::info!(nodeclaim = %claim_name, instance = %id, instance_type = %out.instance_type, zone = %out.zone,
                    capacity_type = %out.capacity_type, attempt, ruled_out = ruled.len(), "launched");
                return Ok(out);
            }
            if ruled.is_empty() {
                let detail: Vec<String> = errors
                    .iter()
                    .map(|e| format!("{}: {}", e.code, e.message))
                    .collect();
                return Err(CloudError::LaunchFailed {
                    code: errors
                        .first()
                        .map(|e| e.code.clone())
                        .filter(|c| !c.is_empty())
                        .unwrap_or_else(|| "CreateFleetLaunchedNothing".into()),
                    message: format!("CreateFleet launched nothing: {}", detail.join("; ")),
                });
            }
            tracing::info!(nodeclaim = %claim_name, ruled_out = ?ruled, attempt, "pools out of capacity; retrying with the rest");
        }
        Err(CloudError::Other(format!(
            "NodeClaim {claim_name}: launch kept failing after 5 attempts"
        )))
    }

    async fn terminate(&self, ids: Vec<String>) -> Result<(), AwsError> {
        if ids.is_empty() {
            return Ok(());
        }
        self.clients
            .ec2
            .terminate_instances()
            .set_instance_ids(Some(ids.clone()))
            .send()
            .await
            .map_err(ec2_err("TerminateInstances"))?;
        // Wait until EC2 reports them going away, so the claim's finalizer is honest.
        for _ in 0..60 {
            let still = self
                .describe(vec![
                    Filter::builder()
                        .name("instance-id")
                        .set_values(Some(ids.clone()))
                        .build(),
                    live_states(),
                ])
                .await?;
            if still.is_empty() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        Err(AwsError::Api {
            call: "TerminateInstances",
            message: format!("{ids:?} still running after 2 minutes"),
        })
    }

    /// One claim's drift, by a direct DescribeInstances (the batch path is
    /// [`CloudProvider::drifted_claims`]).
    async fn drifted(&self, claim: &NodeClaim) -> Result<bool, CloudError> {
        let Some(id) = claim
            .status
            .as_ref()
            .and_then(|s| s.provider_id.as_deref())
            .and_then(crate::interruption::instance_id_of)
        else {
            return Ok(false);
        };
        let found = self
            .describe(vec![
                Filter::builder().name("instance-id").values(id).build(),
            ])
            .await?;
        let Some(i) = found.first() else {
            return Ok(false);
        };
        Ok(!self.judge(vec![(claim, i)]).await?.is_empty())
    }
}

/// A status with at least one image, subnet and security group to launch with.
fn is_resolved(s: &EC2NodeClassStatus) -> bool {
    !s.subnets.is_empty() && !s.security_groups.is_empty() && !s.amis.is_empty()
}

fn live_states() -> Filter {
    Filter::builder()
        .name("instance-state-name")
        .set_values(Some(
            ["pending", "running", "stopping", "stopped"]
                .map(String::from)
                .to_vec(),
        ))
        .build()
}

impl CloudProvider for AwsProvider {
    fn name(&self) -> &'static str {
        "aws"
    }

    fn create<'a>(&'a self, claim: &'a NodeClaim) -> BoxFuture<'a, Result<Instance, CloudError>> {
        Box::pin(self.launch(claim))
    }

    fn delete<'a>(&'a self, claim: &'a NodeClaim) -> BoxFuture<'a, Result<(), CloudError>> {
        Box::pin(async move {
            let name = claim.metadata.name.clone().unwrap_or_default();
            let mut ids: BTreeSet<String> = claim
                .status
                .as_ref()
                .and_then(|s| s.provider_id.as_deref())
                .and_then(crate::interruption::instance_id_of)
                .map(String::from)
                .into_iter()
                .collect();
            // An instance launched before a crash may not be in the status yet.
            if let Some(i) = self.find_by_claim(&name).await? {
                ids.extend(i.instance_id);
            }
            let any = !ids.is_empty();
            self.terminate(ids.into_iter().collect()).await?;
            // The sweep still lists what we just terminated; garbage collection would try again.
            if any {
                self.sweep.invalidate().await;
            }
            Ok(())
        })
    }

    fn get<'a>(
        &'a self,
        provider_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Instance>, CloudError>> {
        Box::pin(async move {
            let Some(id) = crate::interruption::instance_id_of(provider_id) else {
                return Ok(None);
            };
            let found = self
                .describe(vec![
                    Filter::builder().name("instance-id").values(id).build(),
                    live_states(),
                ])
                .await?;
            Ok(found.first().map(|i| self.to_instance(i)))
        })
    }

    /// From the sweep: garbage collection waits a grace period (minutes) before acting on
    /// what the list shows or lacks, so an interval-old listing is fresh enough.
    fn list(&self) -> BoxFuture<'_, Result<Vec<Instance>, CloudError>> {
        Box::pin(async move {
            let sweep = self.sweep().await?;
            Ok(sweep
                .instances
                .values()
                .map(|i| self.to_instance(i))
                .collect())
        })
    }

    fn instance_types(&self) -> Vec<Arc<InstanceType>> {
        self.catalog.get().as_ref().clone()
    }

    fn is_drifted<'a>(&'a self, claim: &'a NodeClaim) -> BoxFuture<'a, Result<bool, CloudError>> {
        Box::pin(self.drifted(claim))
    }

    fn drifted_claims<'a>(
        &'a self,
        claims: &'a [Arc<NodeClaim>],
    ) -> BoxFuture<'a, Result<BTreeSet<String>, CloudError>> {
        Box::pin(self.drifted_in_sweep(claims))
    }

    /// DescribeInstanceStatus for the instances named ([`crate::status_checks`]); providerIDs
    /// that are not EC2's are left out.
    fn instance_health<'a>(
        &'a self,
        provider_ids: &'a [String],
    ) -> BoxFuture<'a, Result<BTreeMap<String, Vec<adze_cloud::StatusCheck>>, CloudError>> {
        Box::pin(async move {
            let by_id: BTreeMap<String, &String> = provider_ids
                .iter()
                .filter_map(|p| Some((crate::interruption::instance_id_of(p)?.to_string(), p)))
                .collect();
            let ids: Vec<String> = by_id.keys().cloned().collect();
            let found = crate::status_checks::describe(&self.clients.ec2, &ids).await?;
            Ok(found
                .into_iter()
                .filter_map(|(id, checks)| Some(((*by_id.get(&id)?).clone(), checks)))
                .collect())
        })
    }

    /// RebootInstances of the one instance `provider_id` names (node repair's first action with
    /// `--reboot-for-repair`). EC2 accepts the request and reboots asynchronously; repair
    /// watches the Node for the outcome. A providerID that is not EC2's is refused here.
    fn reboot<'a>(&'a self, provider_id: &'a str) -> BoxFuture<'a, Result<(), CloudError>> {
        Box::pin(async move {
            let Some(id) = crate::interruption::instance_id_of(provider_id) else {
                return Err(CloudError::Other(format!(
                    "{provider_id:?} is not an EC2 instance's providerID: nothing to reboot"
                )));
            };
            self.clients
                .ec2
                .reboot_instances()
                .instance_ids(id)
                .send()
                .await
                .map_err(ec2_err("RebootInstances"))?;
            tracing::info!(instance = id, "RebootInstances accepted");
            Ok(())
        })
    }

    /// ARC zonal shift's GetManagedResource on the EKS cluster's ARN
    /// ([`crate::zonal_shift`]).
    fn zonal_shifts(&self) -> BoxFuture<'_, Result<Vec<adze_cloud::ZonalShift>, CloudError>> {
        Box::pin(async move {
            let arn = self.cluster_arn().await?;
            Ok(crate::zonal_shift::read(&self.clients.arc, &arn, adze_cloud::unix_now()).await?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_ec2::types::GroupIdentifier;

    fn status() -> EC2NodeClassStatus {
        serde_json::from_value(serde_json::json!({
            "subnets": [{"id": "subnet-a", "zone": "us-east-1a"}, {"id": "subnet-b", "zone": "us-east-1b"}],
            "securityGroups": [{"id": "sg-1"}, {"id": "sg-2"}],
            "amis": [{"id": "ami-new", "requirements": []}],
        }))
        .unwrap()
    }

    fn instance(image: &str, subnet: &str, groups: &[&str]) -> aws_sdk_ec2::types::Instance {
        aws_sdk_ec2::types::Instance::builder()
            .instance_id("i-1")
            .image_id(image)
            .subnet_id(subnet)
            .set_security_groups(Some(
                groups
                    .iter()
                    .map(|g| GroupIdentifier::builder().group_id(*g).build())
                    .collect(),
            ))
            .build()
    }

    #[test]
    fn an_instance_drifts_by_image_subnet_or_exact_group_set() {
        let s = status();
        let ok = Drift::of(&instance("ami-new", "subnet-b", &["sg-2", "sg-1"]), &s);
        assert!(!ok.drifted(), "{ok:?}");
        let image = Drift::of(&instance("ami-old", "subnet-a", &["sg-1", "sg-2"]), &s);
        assert_eq!((image.drifted(), image.image_ok), (true, false));
        let subnet = Drift::of(&instance("ami-new", "subnet-z", &["sg-1", "sg-2"]), &s);
        assert_eq!((subnet.drifted(), subnet.subnet_ok), (true, false));
        // A group too many or too few is drift; none reported is unknown, not drift.
        let groups = Drift::of(&instance("ami-new", "subnet-a", &["sg-1"]), &s);
        assert_eq!((groups.drifted(), groups.sgs_ok), (true, false));
        assert!(!Drift::of(&instance("ami-new", "subnet-a", &[]), &s).drifted());
    }
}

#[cfg(test)]
mod launch_template_tests {
    use super::*;

    fn spec(extra: serde_json::Value) -> EC2NodeClassSpec {
        let mut spec = serde_json::json!({
            "role": "NodeRole",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"k": "v"}}],
            "securityGroupSelectorTerms": [{"tags": {"k": "v"}}],
        });
        for (k, v) in extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        serde_json::from_value(spec).unwrap()
    }

    fn groups() -> Vec<String> {
        vec!["sg-1".into(), "sg-2".into()]
    }

    #[test]
    fn enclave_options_reach_the_template_and_change_the_class_hash() {
        let plain = spec(serde_json::json!({}));
        let on = spec(serde_json::json!({"enclaveOptions": {"enabled": true}}));
        let off = spec(serde_json::json!({"enclaveOptions": {"enabled": false}}));
        assert!(enclave_options(&plain).is_none());
        assert_eq!(enclave_options(&on).unwrap().enabled(), Some(true));
        assert_eq!(enclave_options(&off).unwrap().enabled(), Some(false));
        assert!(enclave_options(&spec(serde_json::json!({"enclaveOptions": {}}))).is_none());
        // Static field: switching it on replaces the nodes (drift by hash); a class that never
        // set it hashes as before the field existed.
        assert_ne!(spec_hash(&plain), spec_hash(&on));
        let json = String::from_utf8(serde_json::to_vec(&plain).unwrap()).unwrap();
        assert!(!json.contains("enclave"), "{json}");
    }

    #[test]
    fn a_plain_class_keeps_ec2s_default_interface_and_top_level_groups() {
        assert_eq!(
            network_interface_specs(&spec(serde_json::json!({})), &groups()),
            None
        );
    }

    #[test]
    fn connection_tracking_alone_spells_out_the_primary_interface() {
        let s = spec(serde_json::json!({
            "connectionTracking": {"tcpEstablishedTimeout": 300, "udpStreamTimeout": 120, "udpTimeout": 45},
        }));
        let nics = network_interface_specs(&s, &groups()).unwrap();
        assert_eq!(nics.len(), 1);
        assert_eq!(nics[0].device_index(), Some(0));
        assert_eq!(nics[0].groups(), ["sg-1", "sg-2"]);
        assert_eq!(nics[0].associate_public_ip_address(), None);
        let ct = nics[0].connection_tracking_specification().unwrap();
        assert_eq!(
            (
                ct.tcp_established_timeout(),
                ct.udp_stream_timeout(),
                ct.udp_timeout()
            ),
            (Some(300), Some(120), Some(45))
        );
    }

    #[test]
    fn efa_only_interfaces_are_launched_on_their_cards_with_the_groups_and_no_conntrack() {
        let s = spec(serde_json::json!({
            "connectionTracking": {"udpTimeout": 45},
            "networkInterfaces": [
                {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
                {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
            ],
        }));
        let nics = network_interface_specs(&s, &groups()).unwrap();
        let shape: Vec<_> = nics
            .iter()
            .map(|n| {
                (
                    n.network_card_index(),
                    n.device_index(),
                    n.interface_type(),
                    n.connection_tracking_specification()
                        .and_then(|c| c.udp_timeout()),
                )
            })
            .collect();
        assert_eq!(
            shape,
            [
                (Some(0), Some(0), Some("interface"), Some(45)),
                (Some(0), Some(1), Some("efa-only"), None),
                (Some(1), Some(0), Some("efa-only"), None),
            ]
        );
        assert!(nics.iter().all(|n| n.groups() == ["sg-1", "sg-2"]));
        assert!(
            nics.iter()
                .all(|n| n.associate_public_ip_address().is_none())
        );
    }

    #[test]
    fn a_public_ip_choice_goes_on_the_single_listed_interface() {
        let s = spec(serde_json::json!({
            "associatePublicIPAddress": true,
            "networkInterfaces": [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}],
        }));
        let nics = network_interface_specs(&s, &groups()).unwrap();
        assert_eq!(nics.len(), 1);
        assert_eq!(nics[0].associate_public_ip_address(), Some(true));
        assert_eq!(nics[0].interface_type(), Some("interface"));
    }

    #[test]
    fn the_ebs_request_carries_the_volume_initialization_rate() {
        let s = spec(serde_json::json!({
            "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {
                "snapshotID": "snap-0123", "volumeSize": "100Gi", "volumeType": "gp3",
                "volumeInitializationRate": 250,
            }}],
        }));
        let ebs = ebs_request(s.block_device_mappings[0].ebs.as_ref().unwrap());
        assert_eq!(ebs.volume_initialization_rate(), Some(250));
        assert_eq!(ebs.snapshot_id(), Some("snap-0123"));
        assert_eq!(ebs.volume_size(), Some(100));
        let plain = spec(serde_json::json!({
            "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi"}}],
        }));
        assert_eq!(
            ebs_request(plain.block_device_mappings[0].ebs.as_ref().unwrap())
                .volume_initialization_rate(),
            None
        );
    }

    #[test]
    fn the_new_fields_change_the_class_hash_and_an_unset_one_does_not() {
        let base = spec(serde_json::json!({}));
        let with = spec(serde_json::json!({"connectionTracking": {"udpTimeout": 45}}));
        let nics = spec(serde_json::json!({"networkInterfaces": [
            {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        ]}));
        assert_ne!(spec_hash(&base), spec_hash(&with));
        assert_ne!(spec_hash(&base), spec_hash(&nics));
        // Classes written before these fields existed hash as they did.
        let json = serde_json::to_string(&base).unwrap();
        assert!(!json.contains("connectionTracking") && !json.contains("networkInterfaces"));
    }
}
