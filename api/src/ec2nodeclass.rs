//! EC2NodeClass: how to launch a node on AWS (network, image, IAM, disks, kubelet settings).
//!
//! Field names follow Karpenter's `karpenter.k8s.aws/v1` EC2NodeClass. Selector terms are ORed;
//! within a term, fields are ANDed. Status holds what the selectors resolved to, so launches do
//! not query AWS for them each time.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::{CustomResource, KubeSchema, core::Rule};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{duration::GoDuration, patterns, requirement::Requirement};

/// Tag keys Adze writes on instances to track ownership; a user value would break cleanup.
pub const RESERVED_TAG_KEYS: &[&str] = &[
    crate::labels::NODEPOOL,
    crate::labels::NODECLAIM,
    EC2NODECLASS_TAG,
    "eks:eks-cluster-name",
];
/// Tag key prefix EKS and the cloud controller use to mark cluster membership.
pub const RESERVED_TAG_PREFIX: &str = "kubernetes.io/cluster/";
/// Tag naming the EC2NodeClass an instance was launched from.
pub const EC2NODECLASS_TAG: &str = "aws.adze.sh/ec2nodeclass";

/// AWS launch settings shared by NodePools that reference this class.
// Each printcolumn repeats `type_`/`priority`; clippy mistakes those for duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "aws.adze.sh",
    version = "v1",
    kind = "EC2NodeClass",
    plural = "ec2nodeclasses",
    status = "EC2NodeClassStatus",
    category = "adze",
    shortname = "ec2nc",
    shortname = "ec2ncs",
    derive = "PartialEq",
    doc = "EC2NodeClass says how Adze launches nodes on AWS: subnets, security groups, image, IAM and disks.",
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    printcolumn(
        name = "Role",
        type_ = "string",
        json_path = ".spec.role",
        priority = 1
    )
)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("has(self.role) != has(self.instanceProfile)").message("must specify exactly one of role or instanceProfile"))]
#[x_kube(validation = Rule::new("has(self.role) == has(oldSelf.role)").message("switching between role and instanceProfile is not supported; delete and recreate the EC2NodeClass"))]
#[x_kube(validation = Rule::new("has(self.amiFamily) || self.amiSelectorTerms.exists(t, has(t.alias))").message("amiFamily is required unless an amiSelectorTerm sets alias"))]
#[x_kube(validation = instance_store_rule("Bottlerocket", &[AmiFamily::Bottlerocket]))]
#[x_kube(validation = instance_store_rule("Windows", &[AmiFamily::Windows2019, AmiFamily::Windows2022, AmiFamily::Windows2025]))]
#[x_kube(validation = family_matches_alias_rule())]
#[x_kube(validation = kubelet_family_rule("evictionMaxPodGracePeriod"))]
#[x_kube(validation = kubelet_family_rule("imageGCHighThresholdPercent"))]
#[x_kube(validation = kubelet_family_rule("imageGCLowThresholdPercent"))]
#[x_kube(validation = kubelet_family_rule("cpuCFSQuota"))]
#[x_kube(validation = kubelet_family_rule("podPidsLimit"))]
#[x_kube(validation = kubelet_family_rule("eventRecordQPS"))]
#[x_kube(validation = kubelet_family_rule("eventBurst"))]
#[x_kube(validation = kubelet_family_rule("kubeAPIQPS"))]
#[x_kube(validation = kubelet_family_rule("kubeAPIBurst"))]
#[x_kube(validation = kubelet_family_rule("shutdownGracePeriod"))]
#[x_kube(validation = kubelet_family_rule("shutdownGracePeriodCriticalPods"))]
#[x_kube(validation = kubelet_family_rule("streamingConnectionIdleTimeout"))]
#[x_kube(validation = kubelet_family_rule("kernelMemcgNotification"))]
#[x_kube(validation = Rule::new("!has(self.associatePublicIPAddress) || !has(self.networkInterfaces) || size(self.networkInterfaces) <= 1").message("associatePublicIPAddress cannot be set with more than one networkInterface (EC2 refuses the combination)"))]
pub struct EC2NodeClassSpec {
    /// Subnets to launch into; their zones become the zones the pool can offer.
    #[schemars(length(min = 1, max = 30))]
    pub subnet_selector_terms: Vec<SubnetSelectorTerm>,
    #[schemars(length(min = 1, max = 30))]
    pub security_group_selector_terms: Vec<SecurityGroupSelectorTerm>,
    /// Images to boot; an `alias` term picks the latest (or a pinned) official image of a family.
    #[schemars(length(min = 1, max = 30))]
    #[x_kube(validation = Rule::new("!self.exists(t, has(t.alias)) || size(self) == 1").message("an amiSelectorTerm with alias must be the only term"))]
    pub ami_selector_terms: Vec<AmiSelectorTerm>,
    /// Which bootstrap format userData uses; implied by an alias term when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ami_family: Option<AmiFamily>,
    /// IAM role for the nodes; Adze creates and manages the instance profile for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub role: Option<String>,
    /// An existing instance profile to use instead of `role`, for accounts where Adze may not
    /// create IAM resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128))]
    pub instance_profile: Option<String>,
    /// Extra user data, merged with what the AMI family needs to join the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_data: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 50))]
    #[x_kube(validation = Rule::new("self.filter(m, has(m.rootVolume) && m.rootVolume).size() <= 1").message("at most one blockDeviceMapping may be the rootVolume"))]
    pub block_device_mappings: Vec<BlockDeviceMapping>,
    /// Instance metadata service settings. The defaults require IMDSv2 with a hop limit of 1,
    /// so pods cannot borrow the node's IAM credentials.
    #[serde(default)]
    pub metadata_options: MetadataOptions,
    /// Tags for instances, volumes and launch templates, on top of the ones Adze adds.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::aws_tags")]
    #[x_kube(validation = Rule::new(format!("self.all(k, !k.startsWith('{RESERVED_TAG_PREFIX}') && !(k in ['{}']))", RESERVED_TAG_KEYS.join("', '"))).message("tag keys used by Adze and EKS to track ownership are restricted"))]
    pub tags: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubelet: Option<KubeletConfiguration>,
    /// Give instances a public IP; unset follows the subnet's setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "associatePublicIPAddress")]
    pub associate_public_ip_address: Option<bool>,
    /// One-minute CloudWatch metrics for the instances (costs extra).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detailed_monitoring: Option<bool>,
    /// `RAID0`: stripe the instance's local NVMe disks into one array for pods' ephemeral
    /// storage (AL2023 and AL2); ephemeral capacity is then the disks' total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::drop_null_from_enum)]
    pub instance_store_policy: Option<InstanceStorePolicy>,
    /// On-Demand Capacity Reservations and Capacity Blocks this class may launch into. Their
    /// remaining slots become `karpenter.sh/capacity-type: reserved` offerings, used before
    /// on-demand; none selected, none used (open matching is not relied on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 30))]
    pub capacity_reservation_selector_terms: Vec<CapacityReservationSelectorTerm>,
    /// The EC2 placement group (cluster, partition or spread) every instance launches into,
    /// by id or by name; resolved with DescribePlacementGroups into `status.placementGroup`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement_group_selector: Option<PlacementGroupSelector>,
    /// Idle timeouts of EC2's connection tracking on the node's IP interfaces; unset fields
    /// keep EC2's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_tracking: Option<ConnectionTracking>,
    /// The interfaces every instance launches with, one per (network card, device index);
    /// `efa-only` interfaces carry EFA traffic without an IP address. Unset: one primary
    /// interface, as EC2 makes by default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    #[x_kube(validation = Rule::new("size(self) == 0 || self.exists(i, i.networkCardIndex == 0 && i.deviceIndex == 0 && i.interfaceType == 'interface')").message("networkInterfaces must include the primary interface: networkCardIndex 0, deviceIndex 0, interfaceType interface"))]
    #[x_kube(validation = Rule::new("self.all(a, self.exists_one(b, b.networkCardIndex == a.networkCardIndex && b.deviceIndex == a.deviceIndex))").message("each (networkCardIndex, deviceIndex) pair may appear only once in networkInterfaces"))]
    pub network_interfaces: Vec<NetworkInterface>,
    /// AWS Nitro Enclaves (Karpenter's `enclaveOptions`): `enabled: true` launches every
    /// instance with enclave support (EC2's `EnclaveOptions`), and plans only instance types
    /// that can run enclaves. It cannot be switched on after launch, so a change replaces the
    /// class's nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enclave_options: Option<EnclaveOptions>,
}

/// EC2's `EnclaveOptions`, as Karpenter's EC2NodeClass spells it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnclaveOptions {
    /// Launch instances with Nitro Enclaves enabled. Unset or false: as EC2's default, off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// EC2's connection-tracking idle timeouts, in seconds, with EC2's bounds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionTracking {
    /// Idle established TCP connections (60 s to 5 days).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 60, max = 432000))]
    pub tcp_established_timeout: Option<i32>,
    /// Idle UDP flows that have seen more than one request-response exchange (60–180 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 60, max = 180))]
    pub udp_stream_timeout: Option<i32>,
    /// Idle UDP flows seen in one direction or for one exchange (30–60 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 30, max = 60))]
    pub udp_timeout: Option<i32>,
}

/// EC2's bounds for each connection-tracking timeout, in seconds: (field, min, max).
pub const CONNECTION_TRACKING_BOUNDS: [(&str, i32, i32); 3] = [
    ("tcpEstablishedTimeout", 60, 432_000),
    ("udpStreamTimeout", 60, 180),
    ("udpTimeout", 30, 60),
];

impl ConnectionTracking {
    /// Each timeout with its field name, in [`CONNECTION_TRACKING_BOUNDS`] order.
    pub fn timeouts(&self) -> [Option<i32>; 3] {
        [
            self.tcp_established_timeout,
            self.udp_stream_timeout,
            self.udp_timeout,
        ]
    }
}

/// One network interface of the launched instance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkInterface {
    /// Which network card the interface is on (0 is the primary card).
    #[schemars(range(min = 0))]
    pub network_card_index: i32,
    /// The interface's position on its card (0 is the card's first).
    #[schemars(range(min = 0))]
    pub device_index: i32,
    pub interface_type: InterfaceType,
}

/// `interface`: an ordinary (ENA) interface with IP addresses; `efa-only`: an Elastic Fabric
/// Adapter without IP addresses, which the instance type must support.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum InterfaceType {
    #[serde(rename = "interface")]
    Interface,
    #[serde(rename = "efa-only")]
    EfaOnly,
}

impl InterfaceType {
    /// EC2's `InterfaceType` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Interface => "interface",
            Self::EfaOnly => "efa-only",
        }
    }
}

impl EC2NodeClassSpec {
    /// Whether instances launch with Nitro Enclaves enabled.
    pub fn enclaves_enabled(&self) -> bool {
        self.enclave_options
            .as_ref()
            .and_then(|e| e.enabled)
            .unwrap_or(false)
    }

    /// How many `efa-only` interfaces each instance launches with.
    pub fn efa_only_interfaces(&self) -> usize {
        self.network_interfaces
            .iter()
            .filter(|i| i.interface_type == InterfaceType::EfaOnly)
            .count()
    }
}

/// One existing placement group, named by exactly one of its id and its name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[x_kube(validation = Rule::new("has(self.id) != has(self.name)").message("placementGroupSelector needs exactly one of id or name"))]
pub struct PlacementGroupSelector {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(patterns::PLACEMENT_GROUP_ID))]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub name: Option<String>,
}

/// Selects capacity reservations by ID, or by tags and/or how they match launches (optionally
/// only those an account owns, for reservations shared from another account). Fields of one
/// term are ANDed, terms ORed, as in Karpenter.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[x_kube(validation = Rule::new("has(self.tags) || has(self.id) || has(self.instanceMatchCriteria)").message("a capacityReservationSelectorTerm needs tags, id or instanceMatchCriteria"))]
#[x_kube(validation = Rule::new("!has(self.id) || !(has(self.tags) || has(self.ownerID) || has(self.instanceMatchCriteria))").message("id cannot be combined with other fields in a capacityReservationSelectorTerm"))]
pub struct CapacityReservationSelectorTerm {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::selector_tags")]
    #[x_kube(validation = selector_tags_rule())]
    pub tags: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(patterns::CAPACITY_RESERVATION_ID))]
    pub id: Option<String>,
    /// The account that owns the reservation; with `tags` only.
    #[serde(rename = "ownerID", default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(patterns::ACCOUNT_ID))]
    pub owner_id: Option<String>,
    /// Only reservations that accept this kind of launch: `open` ones (any matching launch may
    /// land in them) or `targeted` ones (only launches naming them). EC2's
    /// `instance-match-criteria` filter.
    #[serde(
        rename = "instanceMatchCriteria",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(transform = crate::schema::drop_null_from_enum)]
    pub instance_match_criteria: Option<InstanceMatchCriteria>,
}

/// How a capacity reservation accepts launches, as EC2 names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum InstanceMatchCriteria {
    Open,
    Targeted,
}

impl InstanceMatchCriteria {
    /// The value of EC2's `instance-match-criteria` filter.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Targeted => "targeted",
        }
    }
}

/// How the instance's local (instance-store) disks are used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum InstanceStorePolicy {
    RAID0,
}

/// Selects subnets by tags or by ID.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[x_kube(validation = Rule::new("has(self.tags) || has(self.id)").message("a subnetSelectorTerm needs tags or id"))]
#[x_kube(validation = Rule::new("!(has(self.id) && has(self.tags))").message("id cannot be combined with tags in a subnetSelectorTerm"))]
pub struct SubnetSelectorTerm {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::selector_tags")]
    #[x_kube(validation = selector_tags_rule())]
    pub tags: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(patterns::SUBNET_ID))]
    pub id: Option<String>,
}

/// Selects security groups by tags, ID or name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[x_kube(validation = Rule::new("has(self.tags) || has(self.id) || has(self.name)").message("a securityGroupSelectorTerm needs tags, id or name"))]
#[x_kube(validation = Rule::new("!has(self.id) || !(has(self.tags) || has(self.name))").message("id cannot be combined with other fields in a securityGroupSelectorTerm"))]
#[x_kube(validation = Rule::new("!has(self.name) || !(has(self.tags) || has(self.id))").message("name cannot be combined with other fields in a securityGroupSelectorTerm"))]
pub struct SecurityGroupSelectorTerm {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::selector_tags")]
    #[x_kube(validation = selector_tags_rule())]
    pub tags: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(patterns::SECURITY_GROUP_ID))]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub name: Option<String>,
}

/// Selects AMIs. `alias` (e.g. "al2023@latest") stands alone; `id` and `ssmParameter` each name
/// one image and stand alone within their term; `name`, `tags` and `owner` filter together.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("has(self.alias) || has(self.tags) || has(self.id) || has(self.name) || has(self.ssmParameter)").message("an amiSelectorTerm needs alias, tags, id, name or ssmParameter"))]
#[x_kube(validation = Rule::new("!has(self.alias) || !(has(self.tags) || has(self.id) || has(self.name) || has(self.owner) || has(self.ssmParameter))").message("alias cannot be combined with other fields in an amiSelectorTerm"))]
#[x_kube(validation = Rule::new("!has(self.id) || !(has(self.tags) || has(self.name) || has(self.owner) || has(self.ssmParameter))").message("id cannot be combined with other fields in an amiSelectorTerm"))]
#[x_kube(validation = Rule::new("!has(self.ssmParameter) || !(has(self.tags) || has(self.name) || has(self.owner))").message("ssmParameter cannot be combined with other fields in an amiSelectorTerm"))]
pub struct AmiSelectorTerm {
    /// `family@version`; family is al2, al2023, bottlerocket, windows2019, windows2022 or
    /// windows2025, version "latest" or a release (Windows: "latest" only, as AWS publishes
    /// no pinned Windows parameters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64), pattern(patterns::AMI_ALIAS))]
    #[x_kube(validation = alias_family_rule())]
    #[x_kube(validation = windows_latest_rule())]
    pub alias: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::selector_tags")]
    #[x_kube(validation = selector_tags_rule())]
    pub tags: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(patterns::AMI_ID))]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128))]
    pub name: Option<String>,
    /// Account ID or alias ("self", "amazon") owning the image; narrows name/tags matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub owner: Option<String>,
    /// SSM parameter whose value is an AMI ID, for images published that way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 2048))]
    pub ssm_parameter: Option<String>,
}

fn alias_family_rule() -> Rule {
    let tests: Vec<String> = AmiFamily::ALIAS_FAMILIES
        .iter()
        .map(|family| format!("self.startsWith('{family}@')"))
        .collect();
    Rule::new(tests.join(" || ")).message(
        format!(
            "alias family must be one of {}",
            AmiFamily::ALIAS_FAMILIES.join(", ")
        )
        .as_str(),
    )
}

/// Windows aliases resolve through `ami-windows-latest` parameters only.
fn windows_latest_rule() -> Rule {
    let windows: Vec<String> = AmiFamily::ALL
        .iter()
        .filter(|f| f.is_windows())
        .filter_map(|f| f.alias_name())
        .map(|a| format!("self.startsWith('{a}@')"))
        .collect();
    Rule::new(format!(
        "!({}) || self.endsWith('@latest')",
        windows.join(" || ")
    ))
    .message(AmiFamily::WINDOWS_LATEST_ONLY)
}

/// `amiFamily`, when set next to an alias, names the alias's family.
fn family_matches_alias_rule() -> Rule {
    let pairs: Vec<String> = AmiFamily::ALL
        .iter()
        .filter_map(|f| {
            let alias = f.alias_name()?;
            Some(format!(
                "(self.amiFamily == '{f:?}' && t.alias.startsWith('{alias}@'))"
            ))
        })
        .collect();
    Rule::new(format!(
        "!has(self.amiFamily) || self.amiSelectorTerms.all(t, !has(t.alias) || {})",
        pairs.join(" || ")
    ))
    .message("amiFamily must match the family of the amiSelectorTerms alias")
}

/// instanceStorePolicy is refused for families whose bootstrap cannot stripe local disks.
fn instance_store_rule(label: &str, families: &[AmiFamily]) -> Rule {
    let tests: Vec<String> = families
        .iter()
        .map(|f| {
            let alias = f.alias_name().unwrap_or_default();
            format!("(has(self.amiFamily) && self.amiFamily == '{f:?}') || self.amiSelectorTerms.exists(t, has(t.alias) && t.alias.startsWith('{alias}@'))")
        })
        .collect();
    Rule::new(format!(
        "!has(self.instanceStorePolicy) || !({})",
        tests.join(" || ")
    ))
    .message(format!("instanceStorePolicy is not supported with {label}").as_str())
}

/// CFS quota and pod PID limits are Linux cgroup controls: the Windows kubelet has nothing to
/// enforce them with. `field` is the kubelet field the rule refuses.
/// The CRD's side of [`KubeletConfiguration::unsupported_with`]: `field` may not be set when
/// the class's family (set, or implied by its alias) is one that cannot carry it.
fn kubelet_family_rule(field: &str) -> Rule {
    let families = kubelet_refusing_families(field);
    let tests: Vec<String> = families
        .iter()
        .map(|f| match f.alias_name() {
            Some(alias) => format!("(has(self.amiFamily) && self.amiFamily == '{f:?}') || self.amiSelectorTerms.exists(t, has(t.alias) && t.alias.startsWith('{alias}@'))"),
            None => format!("(has(self.amiFamily) && self.amiFamily == '{f:?}')"),
        })
        .collect();
    let mut names: Vec<&str> = families.iter().map(|f| f.label()).collect();
    names.dedup();
    Rule::new(format!(
        "!has(self.kubelet) || !has(self.kubelet.{field}) || !({})",
        tests.join(" || ")
    ))
    .message(kube::core::Message::Message(format!(
        "kubelet.{field} is not supported with {}",
        names.join(", ")
    )))
}

fn selector_tags_rule() -> Rule {
    Rule::new("self.all(k, k != '' && self[k] != '')")
        .message("empty tag keys or values aren't supported")
}

/// The bootstrap format of the node image. AL2 boots with `/etc/eks/bootstrap.sh` (EKS
/// publishes no AL2 images past Kubernetes 1.32); the Windows families are the EKS-optimized
/// Windows Server Core images, amd64 only, bootstrapped by `Start-EKSBootstrap.ps1` (2025
/// images from Kubernetes 1.35). Variant docs are kept here: a documented variant would
/// reorder the CRD's enum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum AmiFamily {
    AL2,
    AL2023,
    Bottlerocket,
    Windows2019,
    Windows2022,
    Windows2025,
    /// Bring your own image and complete userData; Adze adds nothing.
    Custom,
}

impl AmiFamily {
    pub const ALL: [AmiFamily; 7] = [
        Self::AL2,
        Self::AL2023,
        Self::Bottlerocket,
        Self::Windows2019,
        Self::Windows2022,
        Self::Windows2025,
        Self::Custom,
    ];

    /// Families an `alias` may name, in alias spelling.
    pub const ALIAS_FAMILIES: &'static [&'static str] = &[
        "al2",
        "al2023",
        "bottlerocket",
        "windows2019",
        "windows2022",
        "windows2025",
    ];

    pub const WINDOWS_LATEST_ONLY: &'static str = "windows aliases may only use version latest (windows2019@latest, windows2022@latest, windows2025@latest)";

    /// The family as messages name it: the Windows versions share one name.
    pub fn label(self) -> &'static str {
        match self {
            Self::AL2 => "AL2",
            Self::AL2023 => "AL2023",
            Self::Bottlerocket => "Bottlerocket",
            Self::Windows2019 | Self::Windows2022 | Self::Windows2025 => "Windows",
            Self::Custom => "Custom",
        }
    }

    /// The family's alias spelling ("al2023"); Custom has none.
    pub fn alias_name(self) -> Option<&'static str> {
        match self {
            Self::AL2 => Some("al2"),
            Self::AL2023 => Some("al2023"),
            Self::Bottlerocket => Some("bottlerocket"),
            Self::Windows2019 => Some("windows2019"),
            Self::Windows2022 => Some("windows2022"),
            Self::Windows2025 => Some("windows2025"),
            Self::Custom => None,
        }
    }

    /// The family an alias such as "al2023@latest" names.
    pub fn from_alias(alias: &str) -> Option<Self> {
        let family = alias.split_once('@')?.0;
        Self::ALL
            .into_iter()
            .find(|f| f.alias_name() == Some(family))
    }

    pub fn is_windows(self) -> bool {
        self.windows_build().is_some()
    }

    /// `node.kubernetes.io/windows-build` of the family's nodes: the major.minor.build the
    /// kubelet reports for that Windows Server release.
    pub fn windows_build(self) -> Option<&'static str> {
        match self {
            Self::Windows2019 => Some("10.0.17763"),
            Self::Windows2022 => Some("10.0.20348"),
            Self::Windows2025 => Some("10.0.26100"),
            _ => None,
        }
    }
}

impl EC2NodeClassSpec {
    /// `amiFamily`, or the family implied by an alias term when it is unset.
    pub fn effective_ami_family(&self) -> Option<AmiFamily> {
        self.ami_family.or_else(|| {
            self.ami_selector_terms
                .iter()
                .find_map(|term| term.alias.as_deref().and_then(AmiFamily::from_alias))
        })
    }
}

/// One EBS (or instance-store) device attached at launch.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlockDeviceMapping {
    /// e.g. "/dev/xvda".
    #[schemars(length(min = 1, max = 64))]
    pub device_name: String,
    /// Marks the device holding the OS and container images; node ephemeral-storage is sized
    /// from it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub root_volume: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ebs: Option<BlockDevice>,
}

/// EBS volume settings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("has(self.volumeSize) || has(self.snapshotID)").message("ebs needs volumeSize or snapshotID"))]
#[x_kube(validation = Rule::new("!has(self.iops) || (has(self.volumeType) && self.volumeType in ['io1', 'io2', 'gp3'])").message("iops needs volumeType io1, io2 or gp3"))]
#[x_kube(validation = Rule::new("!has(self.throughput) || (has(self.volumeType) && self.volumeType == 'gp3')").message("throughput needs volumeType gp3"))]
#[x_kube(validation = Rule::new("!has(self.volumeInitializationRate) || has(self.snapshotID)").message("volumeInitializationRate needs snapshotID"))]
pub struct BlockDevice {
    /// Size such as "20Gi" or "1Ti".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(patterns::VOLUME_SIZE))]
    pub volume_size: Option<String>,
    /// Unset uses the EBS default for the region (gp2 or gp3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::drop_null_from_enum)]
    pub volume_type: Option<VolumeType>,
    /// Provisioned IOPS (io1, io2, gp3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 100, max = 256000))]
    pub iops: Option<i64>,
    /// Provisioned throughput in MiB/s (gp3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 125, max = 2000))]
    pub throughput: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<bool>,
    #[serde(rename = "kmsKeyID", default, skip_serializing_if = "Option::is_none")]
    pub kms_key_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_on_termination: Option<bool>,
    #[serde(
        rename = "snapshotID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub snapshot_id: Option<String>,
    /// MiB/s at which EBS pulls the snapshot's blocks into a new volume (EC2 allows 100–300),
    /// so the volume is fully initialized after a predictable time; with `snapshotID` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 100, max = 300))]
    pub volume_initialization_rate: Option<i32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VolumeType {
    Standard,
    Io1,
    Io2,
    Gp2,
    Sc1,
    St1,
    Gp3,
}

impl BlockDevice {
    /// The volume size in bytes, if set ("20Gi" → 20 GiB, "100G" → 100 GB).
    pub fn volume_size_bytes(&self) -> Option<u64> {
        let size = self.volume_size.as_deref()?;
        let digits = size.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        let number: u64 = digits.parse().ok()?;
        let scale: u64 = match &size[digits.len()..] {
            "Gi" => 1 << 30,
            "Ti" => 1 << 40,
            "G" => 1_000_000_000,
            "T" => 1_000_000_000_000,
            _ => return None,
        };
        number.checked_mul(scale)
    }
}

/// Instance metadata service (IMDS) options.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetadataOptions {
    #[serde(default = "enabled")]
    pub http_endpoint: Toggle,
    #[serde(rename = "httpProtocolIPv6", default = "disabled")]
    pub http_protocol_ipv6: Toggle,
    /// 1 keeps IMDS unreachable from pods in their own network namespace.
    #[serde(default = "default_hop_limit")]
    #[schemars(range(min = 1, max = 64))]
    pub http_put_response_hop_limit: i64,
    #[serde(default)]
    pub http_tokens: HttpTokens,
}

impl Default for MetadataOptions {
    fn default() -> Self {
        Self {
            http_endpoint: Toggle::Enabled,
            http_protocol_ipv6: Toggle::Disabled,
            http_put_response_hop_limit: default_hop_limit(),
            http_tokens: HttpTokens::Required,
        }
    }
}

fn enabled() -> Toggle {
    Toggle::Enabled
}

fn disabled() -> Toggle {
    Toggle::Disabled
}

fn default_hop_limit() -> i64 {
    1
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Toggle {
    Enabled,
    Disabled,
}

/// "required" means IMDSv2 only (session tokens); "optional" also allows IMDSv1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HttpTokens {
    #[default]
    Required,
    Optional,
}

/// Resource names kubelet reservations accept.
pub const RESERVED_RESOURCES: &[&str] = &["cpu", "memory", "ephemeral-storage", "pid"];
/// Signals kubelet evictions accept.
pub const EVICTION_SIGNALS: &[&str] = &[
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
];

/// Kubelet settings Adze writes into the node's bootstrap configuration. They also change the
/// node's allocatable resources, so the scheduler reads them too.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.evictionSoft) || (has(self.evictionSoftGracePeriod) && self.evictionSoft.all(k, k in self.evictionSoftGracePeriod))").message("every evictionSoft signal needs an evictionSoftGracePeriod"))]
#[x_kube(validation = Rule::new("!has(self.evictionSoftGracePeriod) || (has(self.evictionSoft) && self.evictionSoftGracePeriod.all(k, k in self.evictionSoft))").message("every evictionSoftGracePeriod signal needs an evictionSoft threshold"))]
#[x_kube(validation = Rule::new("!has(self.imageGCHighThresholdPercent) || !has(self.imageGCLowThresholdPercent) || self.imageGCLowThresholdPercent < self.imageGCHighThresholdPercent").message("imageGCLowThresholdPercent must be less than imageGCHighThresholdPercent"))]
#[x_kube(validation = Rule::new("!has(self.imageGCHighThresholdPercent) || has(self.imageGCLowThresholdPercent) || self.imageGCHighThresholdPercent > 80").message("imageGCHighThresholdPercent alone must exceed kubelet's default imageGCLowThresholdPercent (80)"))]
#[x_kube(validation = Rule::new("!has(self.imageGCLowThresholdPercent) || has(self.imageGCHighThresholdPercent) || self.imageGCLowThresholdPercent < 85").message("imageGCLowThresholdPercent alone must be below kubelet's default imageGCHighThresholdPercent (85)"))]
#[x_kube(validation = Rule::new("!has(self.shutdownGracePeriodCriticalPods) || (has(self.shutdownGracePeriod) && duration(self.shutdownGracePeriodCriticalPods) <= duration(self.shutdownGracePeriod))").message("shutdownGracePeriodCriticalPods may not exceed shutdownGracePeriod"))]
pub struct KubeletConfiguration {
    /// Upper bound on pods per node; otherwise derived from the instance's ENI limits. A
    /// number, or an expression over the instance type such as
    /// `min(110, default_enis * (ips_per_eni - 1))` (`max_pods` is then the ENI limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::int_or_expression")]
    pub max_pods: Option<IntOrString>,
    /// Pods per vCPU; the lower of this and maxPods wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub pods_per_core: Option<i32>,
    /// Resources held back for the operating system: each a quantity, or an expression over
    /// the instance type in the resource's unit (cpu millicores, memory MiB,
    /// ephemeral-storage GiB, pid a count), e.g. `memory: "max(100, memory_mib / 64)"`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::reserved_map")]
    #[x_kube(validation = reserved_keys_rule("systemReserved"))]
    pub system_reserved: BTreeMap<String, String>,
    /// Resources held back for kubelet and the container runtime, written as
    /// `systemReserved`'s are (`max_pods` is the resolved `maxPods`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::reserved_map")]
    #[x_kube(validation = reserved_keys_rule("kubeReserved"))]
    pub kube_reserved: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::eviction_map")]
    #[x_kube(validation = eviction_keys_rule("evictionHard"))]
    pub eviction_hard: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::eviction_map")]
    #[x_kube(validation = eviction_keys_rule("evictionSoft"))]
    pub eviction_soft: BTreeMap<String, String>,
    /// How long each soft threshold must hold before pods are evicted; the kubelet refuses to
    /// start without one per evictionSoft signal.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::grace_period_map")]
    #[x_kube(validation = eviction_keys_rule("evictionSoftGracePeriod"))]
    pub eviction_soft_grace_period: BTreeMap<String, GoDuration>,
    /// DNS server IPs for pods, when the cluster's DNS service is not the default.
    #[serde(rename = "clusterDNS", default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 3))]
    pub cluster_dns: Vec<String>,
    /// Seconds: the longest termination grace a pod is given when a soft eviction threshold
    /// evicts it (kubelet's default 0 lets each pod keep its own). Karpenter leaves it unbounded;
    /// a negative value means nothing to kubelet, so Adze refuses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub eviction_max_pod_grace_period: Option<i32>,
    /// Disk usage (percent of the image filesystem) at which kubelet always collects unused
    /// images. Kubelet refuses to start unless it exceeds the low threshold, whose default is 80
    /// when that one is not set.
    #[serde(
        rename = "imageGCHighThresholdPercent",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 0, max = 100))]
    pub image_gc_high_threshold_percent: Option<i32>,
    /// Disk usage image collection frees down to, and below which it never runs; must stay
    /// under the high threshold (default 85 when that one is not set).
    #[serde(
        rename = "imageGCLowThresholdPercent",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 0, max = 100))]
    pub image_gc_low_threshold_percent: Option<i32>,
    /// Whether kubelet enforces containers' CPU limits with CFS quota (kubelet's default:
    /// true). A Linux cgroup feature: refused with the Windows families.
    #[serde(
        rename = "cpuCFSQuota",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cpu_cfs_quota: Option<bool>,
    /// The most process IDs one pod may use (`-1`, kubelet's default, or `0`: no limit); at
    /// most 4194304, the kernel's ceiling. A Linux cgroup control: refused with the Windows
    /// families.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -1, max = 4_194_304))]
    pub pod_pids_limit: Option<i64>,
    /// Events per second kubelet may create (0: no limit; kubelet's default 50, 5 before
    /// Kubernetes 1.27).
    #[serde(
        rename = "eventRecordQPS",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 0))]
    pub event_record_qps: Option<i32>,
    /// Burst of events above `eventRecordQPS` (kubelet's default 100, 10 before 1.27).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub event_burst: Option<i32>,
    /// Requests per second kubelet makes to the API server (kubelet's default 50, 5 before
    /// Kubernetes 1.27).
    #[serde(
        rename = "kubeAPIQPS",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 0))]
    pub kube_api_qps: Option<i32>,
    /// Burst of API requests above `kubeAPIQPS` (kubelet's default 100, 10 before 1.27).
    #[serde(
        rename = "kubeAPIBurst",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 0))]
    pub kube_api_burst: Option<i32>,
    /// How long kubelet holds off a system shutdown to stop pods (graceful node shutdown; 0,
    /// kubelet's default, turns it off). Kubelet has no flag for it, so the families that take
    /// kubelet settings as flags (AL2, Windows) refuse it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutdown_grace_period: Option<GoDuration>,
    /// The last part of `shutdownGracePeriod`, kept for critical pods; at most
    /// `shutdownGracePeriod` (kubelet refuses to start otherwise). Refused with AL2 and Windows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutdown_grace_period_critical_pods: Option<GoDuration>,
    /// How long an exec, attach or port-forward stream may sit idle before kubelet closes it
    /// (kubelet's default 4h; 0 never closes one). Bottlerocket has no setting for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming_connection_idle_timeout: Option<GoDuration>,
    /// Whether kubelet learns of memory pressure from the kernel's memcg notifications rather
    /// than by polling (kubelet's default: false). A Linux cgroup feature: refused with Windows;
    /// Bottlerocket has no setting for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_memcg_notification: Option<bool>,
}

impl KubeletConfiguration {
    /// The set fields `family` cannot carry to kubelet, each with why, in field order. One
    /// table ([`kubelet_refusal`]), read by `validate()`, the CRD's rules, `migrate` and the
    /// user data tests, so a field is either written for a family or refused for it, never
    /// dropped.
    pub fn unsupported_with(&self, family: AmiFamily) -> Vec<(&'static str, &'static str)> {
        let set: [bool; KUBELET_TUNING_FIELDS.len()] = [
            self.eviction_max_pod_grace_period.is_some(),
            self.image_gc_high_threshold_percent.is_some(),
            self.image_gc_low_threshold_percent.is_some(),
            self.cpu_cfs_quota.is_some(),
            self.pod_pids_limit.is_some(),
            self.event_record_qps.is_some(),
            self.event_burst.is_some(),
            self.kube_api_qps.is_some(),
            self.kube_api_burst.is_some(),
            self.shutdown_grace_period.is_some(),
            self.shutdown_grace_period_critical_pods.is_some(),
            self.streaming_connection_idle_timeout.is_some(),
            self.kernel_memcg_notification.is_some(),
        ];
        KUBELET_TUNING_FIELDS
            .iter()
            .zip(set)
            .filter(|(_, set)| *set)
            .filter_map(|(field, _)| Some((*field, kubelet_refusal(field, family)?)))
            .collect()
    }
}

/// The kubelet settings that shape no planning, in field order: they matter only once
/// written into a node's user data.
pub const KUBELET_TUNING_FIELDS: [&str; 13] = [
    "evictionMaxPodGracePeriod",
    "imageGCHighThresholdPercent",
    "imageGCLowThresholdPercent",
    "cpuCFSQuota",
    "podPidsLimit",
    "eventRecordQPS",
    "eventBurst",
    "kubeAPIQPS",
    "kubeAPIBurst",
    "shutdownGracePeriod",
    "shutdownGracePeriodCriticalPods",
    "streamingConnectionIdleTimeout",
    "kernelMemcgNotification",
];

/// Why `family` cannot carry the kubelet setting `field`, or None when it can.
pub fn kubelet_refusal(field: &str, family: AmiFamily) -> Option<&'static str> {
    let windows = family.is_windows();
    let cgroup = matches!(
        field,
        "cpuCFSQuota" | "podPidsLimit" | "kernelMemcgNotification"
    );
    let no_flag = matches!(
        field,
        "shutdownGracePeriod" | "shutdownGracePeriodCriticalPods"
    );
    let no_bottlerocket_key = matches!(
        field,
        "streamingConnectionIdleTimeout" | "kernelMemcgNotification"
    );
    // Settings that shape no planning reach a node only through the user data Adze writes,
    // which Custom does not get. (The ones that shape allocatable still describe, for
    // planning, what a Custom image does.)
    if family == AmiFamily::Custom {
        Some(CUSTOM)
    } else if windows && cgroup {
        Some(CGROUP)
    } else if (windows || family == AmiFamily::AL2) && no_flag {
        Some(NO_FLAG)
    } else if family == AmiFamily::Bottlerocket && no_bottlerocket_key {
        Some(NO_BOTTLEROCKET_SETTING)
    } else {
        None
    }
}

const CGROUP: &str = "a Linux cgroup control";
const NO_FLAG: &str = "kubelet has no command-line flag for it, and this family passes kubelet settings only as flags";
const NO_BOTTLEROCKET_SETTING: &str = "Bottlerocket's settings API has no key for it";
const CUSTOM: &str = "Adze writes no user data for Custom, so it would never reach kubelet; set it in your image's kubelet configuration";

/// For the CRD: the families that refuse the kubelet setting `field` ([`kubelet_refusal`]).
pub fn kubelet_refusing_families(field: &str) -> Vec<AmiFamily> {
    AmiFamily::ALL
        .into_iter()
        .filter(|f| kubelet_refusal(field, *f).is_some())
        .collect()
}

/// The kernel's ceiling on process IDs (`PID_MAX_LIMIT` on 64-bit Linux), so the most a pod's
/// limit can mean.
pub const POD_PIDS_LIMIT_MAX: i64 = 4_194_304;

/// Kubelet's own defaults for the image GC thresholds, which a lone threshold is checked against.
pub const KUBELET_IMAGE_GC_HIGH_DEFAULT: i32 = 85;
pub const KUBELET_IMAGE_GC_LOW_DEFAULT: i32 = 80;

fn reserved_keys_rule(field: &str) -> Rule {
    Rule::new(format!(
        "self.all(k, k in ['{}'])",
        RESERVED_RESOURCES.join("', '")
    ))
    .message(
        format!(
            "valid keys for {field} are {}",
            RESERVED_RESOURCES.join(", ")
        )
        .as_str(),
    )
}

fn eviction_keys_rule(field: &str) -> Rule {
    Rule::new(format!(
        "self.all(k, k in ['{}'])",
        EVICTION_SIGNALS.join("', '")
    ))
    .message(format!("valid keys for {field} are {}", EVICTION_SIGNALS.join(", ")).as_str())
}

/// What the EC2NodeClass controller resolved the selectors to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct EC2NodeClassStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subnets: Vec<Subnet>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_groups: Vec<SecurityGroup>,
    /// Resolved images, each with the requirements (e.g. architecture) an instance must meet to
    /// boot it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub amis: Vec<Ami>,
    /// The instance profile Adze created for `role`, or the one named in the spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_profile: Option<String>,
    /// Selected reservations that are active, with the slots EC2 last reported free.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capacity_reservations: Vec<CapacityReservation>,
    /// The group `placementGroupSelector` resolved to; launches name it by id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement_group: Option<PlacementGroup>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
}

/// A placement group as DescribePlacementGroups reported it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementGroup {
    pub id: String,
    pub name: String,
    /// `cluster`, `partition` or `spread`.
    pub strategy: String,
}

/// One active capacity reservation a class selected, as DescribeCapacityReservations said.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CapacityReservation {
    pub id: String,
    pub instance_type: String,
    pub availability_zone: String,
    /// Instances that can still be launched into it.
    pub available_instance_count: i64,
    /// `default` or `capacity-block`.
    pub reservation_type: ReservationType,
    /// `targeted` (only launches naming it use it) or `open`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub instance_match_criteria: String,
    #[serde(rename = "ownerID", default, skip_serializing_if = "String::is_empty")]
    pub owner_id: String,
    /// RFC 3339; a Capacity Block's nodes are drained before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<String>,
    /// EC2 may reclaim this reservation's capacity, terminating its instances after a
    /// two-minute warning (an interruptible reservation). Its nodes carry
    /// `aws.adze.sh/capacity-reservation-interruptible: "true"`, others `"false"`.
    #[serde(default)]
    pub interruptible: bool,
}

/// EC2's `ReservationType`; also the `karpenter.k8s.aws/capacity-reservation-type` label.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ReservationType {
    #[default]
    #[serde(rename = "default")]
    Default,
    #[serde(rename = "capacity-block")]
    CapacityBlock,
}

impl ReservationType {
    pub fn as_str(self) -> &'static str {
        match self {
            ReservationType::Default => "default",
            ReservationType::CapacityBlock => "capacity-block",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Subnet {
    pub id: String,
    pub zone: String,
    /// The zone ID (e.g. "usw2-az1"), stable across accounts unlike the zone name.
    #[serde(rename = "zoneID", default, skip_serializing_if = "Option::is_none")]
    pub zone_id: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SecurityGroup {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Ami {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default)]
    #[schemars(transform = crate::schema::without_cel_rules)]
    pub requirements: Vec<Requirement>,
}
