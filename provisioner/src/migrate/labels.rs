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

const KARPENTER_DOMAINS: &[&str] = &["karpenter.sh/", "karpenter.k8s.aws/", EKS];

/// EKS Auto Mode's domain: its `instance-*` keys mean what Karpenter's do.
const EKS: &str = "eks.amazonaws.com/";

/// Keys older Karpenter generations accepted and normalized to the current well-known ones.
const DEPRECATED: &[(&str, &str)] = &[
    ("karpenter.sh/provisioner-name", labels::NODEPOOL),
    ("beta.kubernetes.io/arch", labels::ARCH),
    ("beta.kubernetes.io/os", labels::OS),
    ("beta.kubernetes.io/instance-type", labels::INSTANCE_TYPE),
    ("failure-domain.beta.kubernetes.io/zone", labels::ZONE),
    ("failure-domain.beta.kubernetes.io/region", labels::REGION),
];

pub fn map(key: &str) -> Key {
    if let Some(adze) = labels::adze_key_for_karpenter(key) {
        return Key::Renamed(adze);
    }
    if let Some((_, new)) = DEPRECATED.iter().find(|(old, _)| *old == key) {
        return Key::Renamed(new);
    }
    if let Some(rest) = key.strip_prefix(EKS)
        && let Some(adze) = labels::adze_key_for_karpenter(&format!("karpenter.k8s.aws/{rest}"))
    {
        return Key::Renamed(adze);
    }
    if KARPENTER_DOMAINS.iter().any(|d| key.starts_with(d)) {
        Key::Unsupported
    } else {
        Key::Same
    }
}

/// Capacity types Adze launches.
pub const CAPACITY_TYPES: &[&str] = &[
    labels::CAPACITY_TYPE_ON_DEMAND,
    labels::CAPACITY_TYPE_SPOT,
    labels::CAPACITY_TYPE_RESERVED,
];

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
            Key::Renamed("aws.adze.sh/instance-ebs-bandwidth")
        );
        assert_eq!(
            map("karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz"),
            Key::Unsupported
        );
        assert_eq!(map("node.kubernetes.io/instance-type"), Key::Same);
        assert_eq!(
            map("eks.amazonaws.com/instance-category"),
            Key::Renamed("aws.adze.sh/instance-category")
        );
        assert_eq!(
            map("eks.amazonaws.com/instance-generation"),
            Key::Renamed("aws.adze.sh/instance-generation")
        );
        assert_eq!(map("eks.amazonaws.com/compute-type"), Key::Unsupported);
        assert_eq!(
            map("karpenter.sh/provisioner-name"),
            Key::Renamed("adze.sh/nodepool")
        );
        assert_eq!(
            map("failure-domain.beta.kubernetes.io/zone"),
            Key::Renamed("topology.kubernetes.io/zone")
        );
        assert_eq!(map("team"), Key::Same);
    }
}
