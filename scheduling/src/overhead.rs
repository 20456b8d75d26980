//! What a node keeps for itself, so that allocatable = capacity − overhead.
//!
//! The formulas are the ones the EKS-optimised AMIs' bootstrap applies to kubelet (and that
//! Karpenter documents for its AWS provider), with Adze's defaults for what they leave open:
//!
//! * **VM memory overhead**: the hypervisor and firmware take part of the memory EC2
//!   advertises; `capacity.memory = advertised × (1 − 0.075)`, rounded down to a MiB.
//! * **kube-reserved CPU**: 6% of the first core, 1% of the second, 0.5% of the third and
//!   fourth, 0.25% of every core above four (in millicores, rounded down per band).
//! * **kube-reserved memory**: `11 MiB × maxPods + 255 MiB`.
//! * **kube-reserved ephemeral storage**: 1 GiB.
//! * **system-reserved**: nothing unless the EC2NodeClass's kubelet settings add some.
//! * **eviction threshold** (hard): `memory.available < 100 MiB`, `nodefs.available < 10%`.
//! * **max pods**: the ENI limit `ENIs × (IPv4 per ENI − 1) + 2`, unless kubelet settings
//!   override it; `pods` is not reduced by overhead.
//! * **Windows nodes** ([`windows_max_pods`]): a Windows node gives pods addresses of its
//!   primary network interface only (EKS: one interface per Windows node, pods = its IPv4
//!   addresses − 1), so max pods is that unless kubelet settings override it. Reservations and
//!   thresholds follow the same formulas, with that pod count in kube-reserved memory, as
//!   Karpenter applies them to its Windows families.
//!
//! An EC2NodeClass's kubelet settings ([`KubeletSettings`]) change these the way the kubelet
//! will: `maxPods` replaces the ENI limit and `podsPerCore` caps it (so kube-reserved memory
//! follows), `kubeReserved`/`systemReserved` replace the computed value per resource, and an
//! eviction signal set in `evictionHard` or `evictionSoft` replaces the default threshold with
//! the larger of the two: a node that soft-evicts at 1 GiB free cannot offer that GiB to pods.

use std::collections::BTreeMap;

use crate::resources::Resources;

const MIB: i64 = 1 << 20;
const GIB: i64 = 1 << 30;

pub const VM_MEMORY_OVERHEAD: f64 = 0.075;
pub const DEFAULT_ROOT_VOLUME: i64 = 20 * GIB;

/// An eviction threshold as the kubelet takes it: an absolute amount or a share of capacity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    Bytes(i64),
    Percent(f64),
}

impl Threshold {
    /// The amount this threshold holds back on a resource of `capacity`, computed as the kubelet
    /// does: it parses a percentage into a single-precision fraction (`10%` becomes
    /// `0.1f32`, a little over a tenth) and truncates capacity times that fraction. Exact
    /// arithmetic would plan 32 bytes more allocatable than a 20 GiB node reports, and a pod
    /// asking for the planned amount would not fit.
    pub fn of(self, capacity: i64) -> i64 {
        match self {
            Threshold::Bytes(b) => b,
            Threshold::Percent(p) => {
                let fraction = (p as f32) / 100.0_f32;
                (capacity as f64 * f64::from(fraction)) as i64
            }
        }
    }
}

/// Eviction signals that hold back allocatable; the others only tune when the kubelet evicts.
pub const MEMORY_AVAILABLE: &str = "memory.available";
pub const NODEFS_AVAILABLE: &str = "nodefs.available";

/// The kubelet settings that change allocatable, parsed to model units (cpu in millicores,
/// everything else in bytes). Empty means the defaults above.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KubeletSettings {
    pub max_pods: Option<i64>,
    pub pods_per_core: Option<i64>,
    /// Resource name (cpu, memory, ephemeral-storage) → amount; replaces the computed value.
    pub kube_reserved: BTreeMap<String, i64>,
    pub system_reserved: BTreeMap<String, i64>,
    /// `maxPods` written as an expression (replaces [`KubeletSettings::max_pods`] once
    /// evaluated for a type, [`crate::node_class::kubelet_for`]).
    pub max_pods_expr: Option<crate::kubelet_expr::Expr>,
    /// Reservations written as expressions, by resource, in the resource's unit
    /// ([`crate::kubelet_expr::reserved_unit`]); `pid` included, which only kubelet uses.
    pub kube_reserved_expr: BTreeMap<String, crate::kubelet_expr::Expr>,
    pub system_reserved_expr: BTreeMap<String, crate::kubelet_expr::Expr>,
    /// Signal → threshold.
    pub eviction_hard: Vec<(String, Threshold)>,
    pub eviction_soft: Vec<(String, Threshold)>,
}

impl KubeletSettings {
    /// Whether any setting is an expression: only then can the settings differ by type, or
    /// have no value for one ([`crate::node_class::kubelet_for`]).
    pub fn has_expressions(&self) -> bool {
        self.max_pods_expr.is_some()
            || !self.kube_reserved_expr.is_empty()
            || !self.system_reserved_expr.is_empty()
    }

    /// The amount `signal` holds back on `capacity`: the larger of its hard and soft
    /// thresholds, or None when neither sets it.
    fn eviction(&self, signal: &str, capacity: i64) -> Option<i64> {
        self.eviction_hard
            .iter()
            .chain(&self.eviction_soft)
            .filter(|(s, _)| s == signal)
            .map(|(_, t)| t.of(capacity))
            .max()
    }
}

/// The pods a node runs: the ENI limit unless `maxPods` replaces it, capped at
/// `podsPerCore × vCPUs` when that is set and positive. The planner's allocatable and the
/// kubelet's `maxPods` in user data both come from here.
pub fn max_pods(eni_pods: i64, vcpus: u32, kubelet: &KubeletSettings) -> i64 {
    let pods = kubelet.max_pods.unwrap_or(eni_pods);
    match kubelet.pods_per_core {
        Some(ppc) if ppc > 0 => pods.min(ppc * i64::from(vcpus.max(1))),
        _ => pods,
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overhead {
    pub kube_reserved: Resources,
    pub system_reserved: Resources,
    pub eviction_threshold: Resources,
}

impl Overhead {
    pub fn total(&self) -> Resources {
        self.kube_reserved
            .plus(&self.system_reserved)
            .plus(&self.eviction_threshold)
    }
}

/// Memory the node really has out of what EC2 advertises.
pub fn memory_capacity(advertised_mib: u64) -> i64 {
    let usable_mib = (advertised_mib as f64 * (1.0 - VM_MEMORY_OVERHEAD)).floor() as i64;
    usable_mib * MIB
}

pub fn eni_max_pods(enis: u32, ipv4_per_eni: u32) -> i64 {
    i64::from(enis) * (i64::from(ipv4_per_eni) - 1).max(0) + 2
}

/// Pods a Windows node runs before kubelet settings: the primary interface's IPv4 addresses
/// less the node's own.
pub fn windows_max_pods(ipv4_per_eni: u32) -> i64 {
    (i64::from(ipv4_per_eni) - 1).max(0)
}

/// kube-reserved CPU in millicores for a node with `vcpus` cores.
pub fn kube_reserved_cpu(vcpus: u32) -> i64 {
    let cores = i64::from(vcpus);
    let band = |from: i64, to: i64| (cores.min(to) - from).max(0);
    // Percent-of-a-core bands, in thousandths of a core (millicores) per core.
    (band(0, 1) * 60) + (band(1, 2) * 10) + (band(2, 4) * 5) + (band(4, i64::MAX) * 5 / 2)
}

/// Saturates: a catalog type claiming an absurd pod count gets a reserve larger than any
/// memory (so no room) instead of an overflow.
pub fn kube_reserved_memory(max_pods: i64) -> i64 {
    (11 * MIB)
        .saturating_mul(max_pods)
        .saturating_add(255 * MIB)
}

/// The default overhead for a node of this shape.
pub fn default_overhead(vcpus: u32, max_pods: i64, ephemeral_storage: i64) -> Overhead {
    Overhead {
        kube_reserved: Resources::new(kube_reserved_cpu(vcpus), kube_reserved_memory(max_pods))
            .with_ephemeral(GIB),
        system_reserved: Resources::default(),
        // The kubelet's default `nodefs.available<10%`, rounded as it rounds a percentage.
        eviction_threshold: Resources::new(0, 100 * MIB)
            .with_ephemeral(Threshold::Percent(10.0).of(ephemeral_storage)),
    }
}

/// The overhead of a node of this shape under `kubelet`: the defaults, with each resource the
/// settings name replaced.
pub fn overhead(
    vcpus: u32,
    memory: i64,
    max_pods: i64,
    ephemeral_storage: i64,
    kubelet: &KubeletSettings,
) -> Overhead {
    let mut oh = default_overhead(vcpus, max_pods, ephemeral_storage);
    for (name, amount) in &kubelet.kube_reserved {
        oh.kube_reserved.set(name, *amount);
    }
    for (name, amount) in &kubelet.system_reserved {
        oh.system_reserved.set(name, *amount);
    }
    if let Some(m) = kubelet.eviction(MEMORY_AVAILABLE, memory) {
        oh.eviction_threshold.memory = m;
    }
    if let Some(e) = kubelet.eviction(NODEFS_AVAILABLE, ephemeral_storage) {
        oh.eviction_threshold.ephemeral_storage = e;
    }
    oh
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_reservation_bands() {
        assert_eq!(kube_reserved_cpu(1), 60);
        assert_eq!(kube_reserved_cpu(2), 70);
        assert_eq!(kube_reserved_cpu(4), 80);
        assert_eq!(kube_reserved_cpu(8), 90);
        assert_eq!(kube_reserved_cpu(96), 310);
    }

    #[test]
    fn memory_reservation_follows_max_pods() {
        // m5.large: 29 pods → 11*29 + 255 = 574 MiB.
        assert_eq!(kube_reserved_memory(29), 574 * MIB);
        // An absurd pod count saturates instead of overflowing into a small reserve.
        assert_eq!(kube_reserved_memory(i64::MAX), i64::MAX);
        assert_eq!(eni_max_pods(3, 10), 29);
        assert_eq!(eni_max_pods(15, 50), 737);
    }

    #[test]
    fn windows_pods_come_from_the_primary_interface_alone() {
        // m5.large: 3 ENIs of 10 addresses; Linux 29 pods, Windows 9.
        assert_eq!(windows_max_pods(10), 9);
        assert_eq!(windows_max_pods(50), 49);
        assert_eq!(windows_max_pods(0), 0, "never negative");
    }

    #[test]
    fn vm_overhead_takes_seven_and_a_half_percent() {
        assert_eq!(memory_capacity(8192), 7577 * MIB);
    }

    #[test]
    fn max_pods_takes_max_pods_then_caps_by_pods_per_core() {
        let none = KubeletSettings::default();
        assert_eq!(max_pods(29, 2, &none), 29);
        let k = KubeletSettings {
            max_pods: Some(110),
            ..Default::default()
        };
        assert_eq!(max_pods(29, 2, &k), 110);
        let k = KubeletSettings {
            max_pods: Some(110),
            pods_per_core: Some(10),
            ..Default::default()
        };
        assert_eq!(max_pods(29, 2, &k), 20);
        let k = KubeletSettings {
            pods_per_core: Some(0),
            ..Default::default()
        };
        assert_eq!(max_pods(29, 2, &k), 29, "0 means no per-core cap");
    }

    #[test]
    fn kubelet_settings_replace_reservations_and_thresholds_per_resource() {
        let k = KubeletSettings {
            kube_reserved: BTreeMap::from([("cpu".into(), 500)]),
            system_reserved: BTreeMap::from([("cpu".into(), 100), ("memory".into(), 256 * MIB)]),
            eviction_hard: vec![
                (MEMORY_AVAILABLE.into(), Threshold::Bytes(500 * MIB)),
                (NODEFS_AVAILABLE.into(), Threshold::Percent(15.0)),
            ],
            eviction_soft: vec![(MEMORY_AVAILABLE.into(), Threshold::Bytes(GIB))],
            ..Default::default()
        };
        let oh = overhead(2, 8 * GIB, 29, 100 * GIB, &k);
        assert_eq!(oh.kube_reserved.cpu, 500, "named resource replaced");
        assert_eq!(
            oh.kube_reserved.memory,
            kube_reserved_memory(29),
            "unnamed resource keeps its formula"
        );
        assert_eq!(oh.system_reserved, Resources::new(100, 256 * MIB));
        assert_eq!(oh.eviction_threshold.memory, GIB, "soft above hard wins");
        // 15 % of 100 GiB as the kubelet computes it (float32 0.15): 640 bytes over 15 GiB.
        assert_eq!(oh.eviction_threshold.ephemeral_storage, 15 * GIB + 640);
    }

    #[test]
    fn percent_thresholds_round_as_the_kubelet_does() {
        // 10 % of a 20 GiB root volume: the kubelet holds back 2147483680 bytes (float32 0.1),
        // not 2147483648 — measured on a registered kubelet 1.20.2 in e2e/aws.sh.
        assert_eq!(Threshold::Percent(10.0).of(20 * GIB), 2_147_483_680);
        assert_eq!(Threshold::Percent(0.0).of(20 * GIB), 0);
        assert_eq!(Threshold::Bytes(100 * MIB).of(20 * GIB), 100 * MIB);
    }
}
