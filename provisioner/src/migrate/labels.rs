//! Karpenter's well-known label keys and their Adze names.

use adze_scheduling::labels;

/// What becomes of a label key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    /// The same key (not Karpenter's).
    Same,
    /// Karpenter's key with an Adze equivalent.
    Renamed(&'static str),
    /// Karpenter's key Adze does not know: a requirement on it cannot be carried over.
    Unsupported,
}

const RENAMES: &[(&str, &str)] = &[
    ("karpenter.sh/capacity-type", labels::CAPACITY_TYPE),
    ("karpenter.sh/nodepool", labels::NODEPOOL),
    (
        "karpenter.k8s.aws/instance-category",
        labels::INSTANCE_CATEGORY,
    ),
    ("karpenter.k8s.aws/instance-family", labels::INSTANCE_FAMILY),
    (
        "karpenter.k8s.aws/instance-generation",
        labels::INSTANCE_GENERATION,
    ),
    ("karpenter.k8s.aws/instance-size", labels::INSTANCE_SIZE),
    ("karpenter.k8s.aws/instance-cpu", labels::INSTANCE_CPU),
    ("karpenter.k8s.aws/instance-memory", labels::INSTANCE_MEMORY),
    (
        "karpenter.k8s.aws/instance-gpu-count",
        labels::INSTANCE_GPU_COUNT,
    ),
    (
        "karpenter.k8s.aws/instance-gpu-name",
        labels::INSTANCE_GPU_NAME,
    ),
    (
        "karpenter.k8s.aws/instance-gpu-manufacturer",
        labels::INSTANCE_GPU_MANUFACTURER,
    ),
    (
        "karpenter.k8s.aws/instance-gpu-memory",
        labels::INSTANCE_GPU_MEMORY,
    ),
    (
        "karpenter.k8s.aws/instance-hypervisor",
        labels::INSTANCE_HYPERVISOR,
    ),
    (
        "karpenter.k8s.aws/instance-accelerator-name",
        labels::INSTANCE_ACCELERATOR_NAME,
    ),
    (
        "karpenter.k8s.aws/instance-accelerator-manufacturer",
        labels::INSTANCE_ACCELERATOR_MANUFACTURER,
    ),
    (
        "karpenter.k8s.aws/instance-accelerator-count",
        labels::INSTANCE_ACCELERATOR_COUNT,
    ),
    (
        "karpenter.k8s.aws/instance-local-nvme",
        labels::INSTANCE_LOCAL_NVME,
    ),
];

const KARPENTER_DOMAINS: &[&str] = &["karpenter.sh/", "karpenter.k8s.aws/"];

pub fn map(key: &str) -> Key {
    if let Some((_, adze)) = RENAMES.iter().find(|(k, _)| *k == key) {
        return Key::Renamed(adze);
    }
    if KARPENTER_DOMAINS.iter().any(|d| key.starts_with(d)) {
        Key::Unsupported
    } else {
        Key::Same
    }
}

/// Capacity types Adze launches.
pub const CAPACITY_TYPES: &[&str] = &[labels::CAPACITY_TYPE_ON_DEMAND, labels::CAPACITY_TYPE_SPOT];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn karpenter_keys_map_to_adze_keys_and_others_stay() {
        assert_eq!(
            map("karpenter.sh/capacity-type"),
            Key::Renamed("adze.sh/capacity-type")
        );
        assert_eq!(
            map("karpenter.k8s.aws/instance-family"),
            Key::Renamed("aws.adze.sh/instance-family")
        );
        assert_eq!(
            map("karpenter.k8s.aws/instance-local-nvme"),
            Key::Renamed("aws.adze.sh/instance-local-nvme")
        );
        assert_eq!(
            map("karpenter.k8s.aws/instance-ebs-bandwidth"),
            Key::Unsupported
        );
        assert_eq!(map("node.kubernetes.io/instance-type"), Key::Same);
        assert_eq!(map("team"), Key::Same);
    }
}
