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

use crate::resources::Resources;

const MIB: i64 = 1 << 20;
const GIB: i64 = 1 << 30;

pub const VM_MEMORY_OVERHEAD: f64 = 0.075;
pub const DEFAULT_ROOT_VOLUME: i64 = 20 * GIB;

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

/// kube-reserved CPU in millicores for a node with `vcpus` cores.
pub fn kube_reserved_cpu(vcpus: u32) -> i64 {
    let cores = i64::from(vcpus);
    let band = |from: i64, to: i64| (cores.min(to) - from).max(0);
    // Percent-of-a-core bands, in thousandths of a core (millicores) per core.
    (band(0, 1) * 60) + (band(1, 2) * 10) + (band(2, 4) * 5) + (band(4, i64::MAX) * 5 / 2)
}

pub fn kube_reserved_memory(max_pods: i64) -> i64 {
    11 * MIB * max_pods + 255 * MIB
}

/// The default overhead for a node of this shape.
pub fn default_overhead(vcpus: u32, max_pods: i64, ephemeral_storage: i64) -> Overhead {
    Overhead {
        kube_reserved: Resources::new(kube_reserved_cpu(vcpus), kube_reserved_memory(max_pods))
            .with_ephemeral(GIB),
        system_reserved: Resources::default(),
        eviction_threshold: Resources::new(0, 100 * MIB).with_ephemeral(ephemeral_storage / 10),
    }
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
        assert_eq!(eni_max_pods(3, 10), 29);
        assert_eq!(eni_max_pods(15, 50), 737);
    }

    #[test]
    fn vm_overhead_takes_seven_and_a_half_percent() {
        assert_eq!(memory_capacity(8192), 7577 * MIB);
    }
}
