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

const KARPENTER_DOMAINS: &[&str] = &["karpenter.sh/", "karpenter.k8s.aws/"];

pub fn map(key: &str) -> Key {
    if let Some(adze) = labels::adze_key_for_karpenter(key) {
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
            Key::Renamed("aws.adze.sh/instance-ebs-bandwidth")
        );
        assert_eq!(
            map("karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz"),
            Key::Unsupported
        );
        assert_eq!(map("node.kubernetes.io/instance-type"), Key::Same);
        assert_eq!(map("team"), Key::Same);
    }
}
