//! Well-known node label keys. Kubernetes' own keys keep their upstream names; Adze's live under
//! `adze.sh/` and instance attributes under `aws.adze.sh/`, mirroring Karpenter's layout so a
//! Karpenter user can translate requirements key for key.

use std::collections::BTreeMap;

pub const ARCH: &str = "kubernetes.io/arch";
pub const OS: &str = "kubernetes.io/os";
pub const HOSTNAME: &str = "kubernetes.io/hostname";
pub const INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";
pub const ZONE: &str = "topology.kubernetes.io/zone";
pub const REGION: &str = "topology.kubernetes.io/region";
/// The AWS zone ID (`use1-az1`) of the node's zone. Zone names (`us-east-1a`) are mapped to
/// physical zones per account; IDs are the same in every account. Karpenter uses the same key.
pub const ZONE_ID: &str = "topology.k8s.aws/zone-id";
/// The Windows Server build of a Windows node ("10.0.20348" for 2022), set by its kubelet;
/// lets a pod pick the Windows release its container images were built for.
pub const WINDOWS_BUILD: &str = "node.kubernetes.io/windows-build";

pub const NODEPOOL: &str = "adze.sh/nodepool";
pub const CAPACITY_TYPE: &str = "adze.sh/capacity-type";
pub const NODECLAIM: &str = "adze.sh/nodeclaim";

/// Keys whose value is different on every node: the hostname and the NodeClaim's name. A new
/// claim is always a fresh, empty domain of these.
pub fn is_per_node(key: &str) -> bool {
    key == HOSTNAME || key == NODECLAIM
}
/// Set on nodes once Adze has seen them register and initialise.
pub const INITIALIZED: &str = "adze.sh/initialized";
pub const REGISTERED: &str = "adze.sh/registered";
/// Pods and nodes carrying this annotation with value "true" are never voluntarily disrupted.
pub const DO_NOT_DISRUPT: &str = "adze.sh/do-not-disrupt";
/// Karpenter's key for the same protection: workloads migrated from Karpenter keep it.
pub const KARPENTER_DO_NOT_DISRUPT: &str = "karpenter.sh/do-not-disrupt";
/// Both keys honoured on pods, nodes and NodeClaims, Adze's first.
pub const DO_NOT_DISRUPT_KEYS: [&str; 2] = [DO_NOT_DISRUPT, KARPENTER_DO_NOT_DISRUPT];
/// On a Node, value `"true"`: node repair leaves it alone (Karpenter v1.15's veto; a node kept
/// for diagnosis). do-not-disrupt does not stop repair.
pub const DO_NOT_REPAIR: &str = "adze.sh/do-not-repair";
pub const KARPENTER_DO_NOT_REPAIR: &str = "karpenter.sh/do-not-repair";
pub const DO_NOT_REPAIR_KEYS: [&str; 2] = [DO_NOT_REPAIR, KARPENTER_DO_NOT_REPAIR];

pub const INSTANCE_CATEGORY: &str = "aws.adze.sh/instance-category";
pub const INSTANCE_FAMILY: &str = "aws.adze.sh/instance-family";
pub const INSTANCE_GENERATION: &str = "aws.adze.sh/instance-generation";
pub const INSTANCE_SIZE: &str = "aws.adze.sh/instance-size";
pub const INSTANCE_CPU: &str = "aws.adze.sh/instance-cpu";
pub const INSTANCE_MEMORY: &str = "aws.adze.sh/instance-memory";
pub const INSTANCE_GPU_COUNT: &str = "aws.adze.sh/instance-gpu-count";
pub const INSTANCE_GPU_NAME: &str = "aws.adze.sh/instance-gpu-name";
pub const INSTANCE_GPU_MANUFACTURER: &str = "aws.adze.sh/instance-gpu-manufacturer";
pub const INSTANCE_GPU_MEMORY: &str = "aws.adze.sh/instance-gpu-memory";
/// Non-GPU accelerators (AWS Inferentia and Trainium): `aws`, the device name, devices per node.
pub const INSTANCE_ACCELERATOR_MANUFACTURER: &str = "aws.adze.sh/instance-accelerator-manufacturer";
pub const INSTANCE_ACCELERATOR_NAME: &str = "aws.adze.sh/instance-accelerator-name";
pub const INSTANCE_ACCELERATOR_COUNT: &str = "aws.adze.sh/instance-accelerator-count";
/// Total local NVMe instance-store size in GB (10^9 bytes) as EC2 reports it; absent when none.
pub const INSTANCE_LOCAL_NVME: &str = "aws.adze.sh/instance-local-nvme";
/// EFA interfaces the type supports (absent when none).
pub const INSTANCE_EFA_COUNT: &str = "aws.adze.sh/instance-efa-count";
pub const INSTANCE_HYPERVISOR: &str = "aws.adze.sh/instance-hypervisor";
/// `ProcessorInfo.Manufacturer` lower-cased: `intel`, `amd`, `aws` (Graviton).
pub const INSTANCE_CPU_MANUFACTURER: &str = "aws.adze.sh/instance-cpu-manufacturer";
/// Baseline network bandwidth in Mbps: the sum of `NetworkInfo.NetworkCards[].BaselineBandwidthInGbps`
/// × 1000. Absent when EC2 does not report it.
pub const INSTANCE_NETWORK_BANDWIDTH: &str = "aws.adze.sh/instance-network-bandwidth";
/// Baseline EBS bandwidth in Mbps (`EbsInfo.EbsOptimizedInfo.BaselineBandwidthInMbps`); absent
/// for types that are not EBS-optimized.
pub const INSTANCE_EBS_BANDWIDTH: &str = "aws.adze.sh/instance-ebs-bandwidth";

pub const CAPACITY_TYPE_ON_DEMAND: &str = "on-demand";
pub const CAPACITY_TYPE_SPOT: &str = "spot";
/// Launched into a capacity reservation the node class selected (an ODCR or a Capacity Block).
pub const CAPACITY_TYPE_RESERVED: &str = "reserved";
/// On reserved nodes only: the reservation's ID (`cr-…`) and its EC2 `ReservationType`
/// (`default` or `capacity-block`).
pub const CAPACITY_RESERVATION_ID: &str = "aws.adze.sh/capacity-reservation-id";
pub const CAPACITY_RESERVATION_TYPE: &str = "aws.adze.sh/capacity-reservation-type";
/// On reserved nodes only: `true` when EC2 may reclaim the reservation's capacity (an
/// interruptible reservation: its nodes get a two-minute warning, like spot), else `false`.
pub const CAPACITY_RESERVATION_INTERRUPTIBLE: &str =
    "aws.adze.sh/capacity-reservation-interruptible";
/// Keys whose value a node gets from the offering it is launched into, not from its type.
pub const OFFERING_KEYS: [&str; 6] = [
    ZONE,
    ZONE_ID,
    CAPACITY_TYPE,
    CAPACITY_RESERVATION_ID,
    CAPACITY_RESERVATION_TYPE,
    CAPACITY_RESERVATION_INTERRUPTIBLE,
];

/// The keys naming a node's capacity reservation (absent on nodes outside one).
pub fn is_reservation_key(key: &str) -> bool {
    key == CAPACITY_RESERVATION_ID
        || key == CAPACITY_RESERVATION_TYPE
        || key == CAPACITY_RESERVATION_INTERRUPTIBLE
}

/// The value of [`CAPACITY_RESERVATION_INTERRUPTIBLE`] for a reservation.
pub fn interruptible_value(interruptible: bool) -> &'static str {
    if interruptible { "true" } else { "false" }
}
pub const RESERVATION_TYPE_DEFAULT: &str = "default";
pub const RESERVATION_TYPE_CAPACITY_BLOCK: &str = "capacity-block";

/// Taints Adze itself places.
pub const TAINT_DISRUPTED: &str = "adze.sh/disrupted";
pub const TAINT_INTERRUPTED: &str = "adze.sh/interrupted";
pub const TAINT_AGENT_NOT_READY: &str = "adze.sh/agent-not-ready";

/// Label keys a NodePool may constrain without defining a value in its template: the instance
/// type (or the cloud) supplies them. A pod may require any of these even when its NodePool
/// does not mention them. Custom keys must be defined by the NodePool to be satisfiable.
pub const WELL_KNOWN: &[&str] = &[
    ARCH,
    OS,
    HOSTNAME,
    INSTANCE_TYPE,
    ZONE,
    REGION,
    ZONE_ID,
    WINDOWS_BUILD,
    NODEPOOL,
    CAPACITY_TYPE,
    INSTANCE_CATEGORY,
    INSTANCE_FAMILY,
    INSTANCE_GENERATION,
    INSTANCE_SIZE,
    INSTANCE_CPU,
    INSTANCE_MEMORY,
    INSTANCE_GPU_COUNT,
    INSTANCE_GPU_NAME,
    INSTANCE_GPU_MANUFACTURER,
    INSTANCE_GPU_MEMORY,
    INSTANCE_ACCELERATOR_MANUFACTURER,
    INSTANCE_ACCELERATOR_NAME,
    INSTANCE_ACCELERATOR_COUNT,
    INSTANCE_EFA_COUNT,
    INSTANCE_LOCAL_NVME,
    INSTANCE_HYPERVISOR,
    INSTANCE_CPU_MANUFACTURER,
    INSTANCE_NETWORK_BANDWIDTH,
    INSTANCE_EBS_BANDWIDTH,
    CAPACITY_RESERVATION_ID,
    CAPACITY_RESERVATION_TYPE,
    CAPACITY_RESERVATION_INTERRUPTIBLE,
];

/// Karpenter's well-known label keys and Adze's equivalents. `migrate` renames by this table;
/// with Karpenter labels on (`--karpenter-labels`), nodes carry both keys and pods selecting
/// Karpenter's keys are planned as if they selected Adze's.
pub const KARPENTER_ALIASES: &[(&str, &str)] = &[
    ("karpenter.sh/capacity-type", CAPACITY_TYPE),
    ("karpenter.sh/nodepool", NODEPOOL),
    (
        "karpenter.k8s.aws/capacity-reservation-id",
        CAPACITY_RESERVATION_ID,
    ),
    (
        "karpenter.k8s.aws/capacity-reservation-type",
        CAPACITY_RESERVATION_TYPE,
    ),
    (
        "karpenter.k8s.aws/capacity-reservation-interruptible",
        CAPACITY_RESERVATION_INTERRUPTIBLE,
    ),
    ("karpenter.k8s.aws/instance-category", INSTANCE_CATEGORY),
    ("karpenter.k8s.aws/instance-family", INSTANCE_FAMILY),
    ("karpenter.k8s.aws/instance-generation", INSTANCE_GENERATION),
    ("karpenter.k8s.aws/instance-size", INSTANCE_SIZE),
    ("karpenter.k8s.aws/instance-cpu", INSTANCE_CPU),
    ("karpenter.k8s.aws/instance-memory", INSTANCE_MEMORY),
    ("karpenter.k8s.aws/instance-gpu-count", INSTANCE_GPU_COUNT),
    ("karpenter.k8s.aws/instance-gpu-name", INSTANCE_GPU_NAME),
    (
        "karpenter.k8s.aws/instance-gpu-manufacturer",
        INSTANCE_GPU_MANUFACTURER,
    ),
    ("karpenter.k8s.aws/instance-gpu-memory", INSTANCE_GPU_MEMORY),
    ("karpenter.k8s.aws/instance-hypervisor", INSTANCE_HYPERVISOR),
    (
        "karpenter.k8s.aws/instance-accelerator-name",
        INSTANCE_ACCELERATOR_NAME,
    ),
    (
        "karpenter.k8s.aws/instance-accelerator-manufacturer",
        INSTANCE_ACCELERATOR_MANUFACTURER,
    ),
    (
        "karpenter.k8s.aws/instance-accelerator-count",
        INSTANCE_ACCELERATOR_COUNT,
    ),
    ("karpenter.k8s.aws/instance-local-nvme", INSTANCE_LOCAL_NVME),
    (
        "karpenter.k8s.aws/instance-cpu-manufacturer",
        INSTANCE_CPU_MANUFACTURER,
    ),
    (
        "karpenter.k8s.aws/instance-network-bandwidth",
        INSTANCE_NETWORK_BANDWIDTH,
    ),
    (
        "karpenter.k8s.aws/instance-ebs-bandwidth",
        INSTANCE_EBS_BANDWIDTH,
    ),
];

/// Deprecated label keys kubelet still sets beside their GA names: a selector on the old key
/// means the new one (as kube-scheduler sees it on nodes carrying both, and as Karpenter
/// normalises it).
pub const DEPRECATED_ALIASES: &[(&str, &str)] = &[
    ("beta.kubernetes.io/arch", ARCH),
    ("beta.kubernetes.io/os", OS),
    ("beta.kubernetes.io/instance-type", INSTANCE_TYPE),
    ("failure-domain.beta.kubernetes.io/zone", ZONE),
    ("failure-domain.beta.kubernetes.io/region", REGION),
];

/// The GA key for a deprecated one, if `key` is deprecated.
pub fn ga_key_for_deprecated(key: &str) -> Option<&'static str> {
    DEPRECATED_ALIASES
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, a)| *a)
}

/// Adze's key for Karpenter's `key`, if it has one.
pub fn adze_key_for_karpenter(key: &str) -> Option<&'static str> {
    KARPENTER_ALIASES
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, a)| *a)
}

/// `labels` plus, for every Adze key with a Karpenter equivalent, Karpenter's key with the
/// same value (what a node carries with `--karpenter-labels`).
pub fn with_karpenter_aliases(labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut out = labels.clone();
    for (karpenter, adze) in KARPENTER_ALIASES {
        if let Some(v) = labels.get(*adze) {
            out.insert((*karpenter).to_string(), v.clone());
        }
    }
    out
}

/// Label domains Adze refuses in a NodePool template: they belong to the kubelet or to Adze.
pub const RESTRICTED_PREFIXES: &[&str] = &["kubernetes.io/", "k8s.io/", "adze.sh/"];

/// Keys under restricted prefixes that a template may still set.
pub const ALLOWED_IN_RESTRICTED: &[&str] = &[
    ARCH,
    OS,
    INSTANCE_TYPE,
    ZONE,
    REGION,
    CAPACITY_TYPE,
    "node-restriction.kubernetes.io/",
    // As in Karpenter: kubelet may set `node.kubernetes.io` labels itself; `kops.k8s.io`
    // ones the provisioner sets on the Node at registration (see [`kubelet_may_set`]).
    "node.kubernetes.io/",
    "kops.k8s.io/",
];

/// Whether kubelet accepts `key` in `--node-labels` (and Bottlerocket's `node-labels`). Since
/// Kubernetes 1.16 kubelet refuses to start on a label in the `kubernetes.io` or `k8s.io`
/// namespaces unless it is one of its own well-known labels or under `kubelet.kubernetes.io`
/// / `node.kubernetes.io` (the NodeRestriction admission plugin's rule). Such labels
/// (`node-restriction.kubernetes.io/*`, `node-role.kubernetes.io/*`) are set on the Node by
/// the provisioner at registration instead.
pub fn kubelet_may_set(key: &str) -> bool {
    const KUBELET_OWN: &[&str] = &[
        HOSTNAME,
        ARCH,
        OS,
        INSTANCE_TYPE,
        ZONE,
        REGION,
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/instance-type",
        "failure-domain.beta.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
    ];
    let Some((domain, _)) = key.split_once('/') else {
        return true;
    };
    let under = |d: &str, ns: &str| d == ns || d.ends_with(&format!(".{ns}"));
    if !under(domain, "kubernetes.io") && !under(domain, "k8s.io") {
        return true;
    }
    KUBELET_OWN.contains(&key)
        || under(domain, "kubelet.kubernetes.io")
        || under(domain, "node.kubernetes.io")
}

pub fn is_well_known(key: &str) -> bool {
    WELL_KNOWN.contains(&key)
}

/// Annotation on a NodeClaim listing the pods it was launched for (its *nominations*), as a
/// JSON array of `{"namespace", "name", "uid"}` objects. The provisioner writes it when it
/// creates the claim; the extender reads it to keep the claim's capacity for those pods.
pub const NOMINATED_PODS: &str = "adze.sh/nominated-pods";

/// Reason of the core/v1 Event the extender records on a pod when `filter` turned it away from
/// every candidate node: the provisioner treats a pod with such an Event (matched by the pod's
/// UID) as pending at once, without waiting for kube-scheduler's
/// `PodScheduled=False/Unschedulable` condition. An Event rather than a pod annotation so that
/// the extender needs no `patch` on pods (see extender/src/signal.rs).
pub const FAILED_EVERY_NODE_REASON: &str = "FailedEveryNode";

/// `source.component` of the extender's Events; with [`FAILED_EVERY_NODE_REASON`] the field
/// selector the provisioner watches Events by.
pub const EXTENDER_COMPONENT: &str = "adze-extender";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn karpenter_aliases_map_both_ways() {
        assert_eq!(
            adze_key_for_karpenter("karpenter.sh/capacity-type"),
            Some(CAPACITY_TYPE)
        );
        assert_eq!(adze_key_for_karpenter("example.com/x"), None);
        let l = BTreeMap::from([
            (CAPACITY_TYPE.to_string(), "spot".to_string()),
            (INSTANCE_FAMILY.to_string(), "m5".to_string()),
            ("team".to_string(), "a".to_string()),
        ]);
        let both = with_karpenter_aliases(&l);
        assert_eq!(both["karpenter.sh/capacity-type"], "spot");
        assert_eq!(both["karpenter.k8s.aws/instance-family"], "m5");
        assert_eq!(both[CAPACITY_TYPE], "spot");
        assert_eq!(both.len(), 5);
        for (k, _) in KARPENTER_ALIASES {
            assert!(kubelet_may_set(k), "{k}");
        }
    }

    #[test]
    fn karpenter_instance_attribute_keys_map_to_adze_keys() {
        for (karpenter, adze) in [
            (
                "karpenter.k8s.aws/instance-cpu-manufacturer",
                "aws.adze.sh/instance-cpu-manufacturer",
            ),
            (
                "karpenter.k8s.aws/instance-network-bandwidth",
                "aws.adze.sh/instance-network-bandwidth",
            ),
            (
                "karpenter.k8s.aws/instance-ebs-bandwidth",
                "aws.adze.sh/instance-ebs-bandwidth",
            ),
            (
                "karpenter.k8s.aws/instance-local-nvme",
                "aws.adze.sh/instance-local-nvme",
            ),
            (
                "karpenter.k8s.aws/instance-accelerator-count",
                "aws.adze.sh/instance-accelerator-count",
            ),
        ] {
            assert_eq!(adze_key_for_karpenter(karpenter), Some(adze), "{karpenter}");
            assert!(is_well_known(adze), "{adze}");
        }
        // Karpenter and Adze share the zone-ID key: nothing to alias, but it is well known.
        assert_eq!(adze_key_for_karpenter(ZONE_ID), None);
        assert!(is_well_known(ZONE_ID));
        for (_, adze) in KARPENTER_ALIASES {
            assert!(is_well_known(adze), "{adze} is aliased but not well known");
        }
    }

    #[test]
    fn kubelet_refuses_kubernetes_io_labels_outside_its_own() {
        for ok in [
            "team",
            "example.com/tier",
            ARCH,
            ZONE,
            INSTANCE_TYPE,
            "node.kubernetes.io/lifecycle",
            "kubelet.kubernetes.io/x",
            "adze.sh/nodepool",
        ] {
            assert!(kubelet_may_set(ok), "{ok}");
        }
        for refused in [
            "node-restriction.kubernetes.io/team",
            "node-role.kubernetes.io/worker",
            "kubernetes.io/role",
            "k8s.io/x",
            "example.k8s.io/x",
        ] {
            assert!(!kubelet_may_set(refused), "{refused}");
        }
    }
}
