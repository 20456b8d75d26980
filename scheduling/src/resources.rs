//! Resource vectors: CPU in millicores, memory and ephemeral storage in bytes, pod slots, and
//! extended resources (e.g. `nvidia.com/gpu`) in whole units. Addition and the "fits" check
//! are on the hot path of every placement, so the common resources are plain fields and the
//! extended ones a small sorted list that is usually empty.

use std::collections::BTreeMap;
use std::fmt;

use crate::quantity::{self, QuantityError};

pub const CPU: &str = "cpu";
pub const MEMORY: &str = "memory";
pub const EPHEMERAL_STORAGE: &str = "ephemeral-storage";
pub const PODS: &str = "pods";
pub const GPU_NVIDIA: &str = "nvidia.com/gpu";
pub const GPU_AMD: &str = "amd.com/gpu";
/// Neuron devices (Inferentia, Trainium) as the Neuron device plugin advertises them.
pub const NEURON: &str = "aws.amazon.com/neuron";
/// Neuron cores: devices × cores per device.
pub const NEURON_CORE: &str = "aws.amazon.com/neuroncore";
/// Elastic Fabric Adapter interfaces, as the EFA device plugin advertises them.
pub const EFA: &str = "vpc.amazonaws.com/efa";

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Resources {
    pub cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub pods: i64,
    /// Sorted by name, no zero entries.
    pub extended: Vec<(String, i64)>,
}

impl Resources {
    pub fn new(cpu_milli: i64, memory: i64) -> Self {
        Resources {
            cpu: cpu_milli,
            memory,
            ..Default::default()
        }
    }

    pub fn with_pods(mut self, pods: i64) -> Self {
        self.pods = pods;
        self
    }

    pub fn with_ephemeral(mut self, bytes: i64) -> Self {
        self.ephemeral_storage = bytes;
        self
    }

    pub fn with_extended(mut self, name: &str, amount: i64) -> Self {
        self.set(name, amount);
        self
    }

    /// Parses a Kubernetes resource list (name → quantity string).
    pub fn from_quantities<'a>(
        list: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, QuantityError> {
        let mut r = Resources::default();
        for (name, q) in list {
            let value = if name == CPU {
                quantity::parse_milli(q)?
            } else {
                quantity::parse_units(q)?
            };
            r.set(name, value);
        }
        Ok(r)
    }

    pub fn get(&self, name: &str) -> i64 {
        match name {
            CPU => self.cpu,
            MEMORY => self.memory,
            EPHEMERAL_STORAGE => self.ephemeral_storage,
            PODS => self.pods,
            _ => self
                .extended
                .binary_search_by(|(n, _)| n.as_str().cmp(name))
                .map(|i| self.extended[i].1)
                .unwrap_or(0),
        }
    }

    pub fn set(&mut self, name: &str, value: i64) {
        match name {
            CPU => self.cpu = value,
            MEMORY => self.memory = value,
            EPHEMERAL_STORAGE => self.ephemeral_storage = value,
            PODS => self.pods = value,
            _ => match self
                .extended
                .binary_search_by(|(n, _)| n.as_str().cmp(name))
            {
                Ok(i) if value == 0 => {
                    self.extended.remove(i);
                }
                Ok(i) => self.extended[i].1 = value,
                Err(_) if value == 0 => {}
                Err(i) => self.extended.insert(i, (name.to_string(), value)),
            },
        }
    }

    /// Every resource name with a non-zero amount, in a stable order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        [
            (CPU, self.cpu),
            (MEMORY, self.memory),
            (EPHEMERAL_STORAGE, self.ephemeral_storage),
            (PODS, self.pods),
        ]
        .into_iter()
        .filter(|(_, v)| *v != 0)
        .map(|(n, _)| n)
        .chain(self.extended.iter().map(|(n, _)| n.as_str()))
    }

    /// Adds `other`, saturating: amounts are bounded when parsed ([`quantity::MAX_QUANTITY`]),
    /// but a sum over many pods must not wrap into a small or negative total.
    pub fn add(&mut self, other: &Resources) {
        self.cpu = self.cpu.saturating_add(other.cpu);
        self.memory = self.memory.saturating_add(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_add(other.ephemeral_storage);
        self.pods = self.pods.saturating_add(other.pods);
        for (n, v) in &other.extended {
            let cur = self.get(n);
            self.set(n, cur.saturating_add(*v));
        }
    }

    /// Subtracts `other`, saturating like [`Resources::add`].
    pub fn sub(&mut self, other: &Resources) {
        self.cpu = self.cpu.saturating_sub(other.cpu);
        self.memory = self.memory.saturating_sub(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_sub(other.ephemeral_storage);
        self.pods = self.pods.saturating_sub(other.pods);
        for (n, v) in &other.extended {
            let cur = self.get(n);
            self.set(n, cur.saturating_sub(*v));
        }
    }

    pub fn plus(&self, other: &Resources) -> Resources {
        let mut r = self.clone();
        r.add(other);
        r
    }

    pub fn minus(&self, other: &Resources) -> Resources {
        let mut r = self.clone();
        r.sub(other);
        r
    }

    /// Per-resource maximum.
    pub fn max_with(&mut self, other: &Resources) {
        self.cpu = self.cpu.max(other.cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        self.pods = self.pods.max(other.pods);
        for (n, v) in &other.extended {
            if *v > self.get(n) {
                self.set(n, *v);
            }
        }
    }

    /// True when `self` (a request) fits in `capacity`. Extended resources the capacity does
    /// not list count as zero there.
    #[inline]
    pub fn fits_in(&self, capacity: &Resources) -> bool {
        self.cpu <= capacity.cpu
            && self.memory <= capacity.memory
            && self.ephemeral_storage <= capacity.ephemeral_storage
            && self.pods <= capacity.pods
            && (self.extended.is_empty()
                || self.extended.iter().all(|(n, v)| *v <= capacity.get(n)))
    }

    /// `self + extra <= capacity` without allocating. The sum saturates, so a huge request
    /// never wraps around into "fits".
    #[inline]
    pub fn fits_with(&self, extra: &Resources, capacity: &Resources) -> bool {
        self.cpu.saturating_add(extra.cpu) <= capacity.cpu
            && self.memory.saturating_add(extra.memory) <= capacity.memory
            && self
                .ephemeral_storage
                .saturating_add(extra.ephemeral_storage)
                <= capacity.ephemeral_storage
            && self.pods.saturating_add(extra.pods) <= capacity.pods
            && (extra.extended.is_empty()
                || extra
                    .extended
                    .iter()
                    .all(|(n, v)| self.get(n).saturating_add(*v) <= capacity.get(n)))
            && (self.extended.is_empty()
                || self
                    .extended
                    .iter()
                    .all(|(n, v)| v.saturating_add(extra.get(n)) <= capacity.get(n)))
    }

    /// Names of the resources where `self` exceeds `capacity`, for messages.
    pub fn exceeding(&self, capacity: &Resources) -> Vec<&str> {
        self.names()
            .filter(|n| self.get(n) > capacity.get(n))
            .collect()
    }

    pub fn is_zero(&self) -> bool {
        self.cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.pods == 0
            && self.extended.is_empty()
    }

    /// Kubernetes quantity strings, for output.
    pub fn to_quantities(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for n in self.names() {
            let v = self.get(n);
            let s = match n {
                CPU => quantity::format_milli(v),
                MEMORY | EPHEMERAL_STORAGE => quantity::format_bytes(v),
                _ => v.to_string(),
            };
            out.insert(n.to_string(), s);
        }
        out
    }

    /// One resource in words for a reason message ("96 GiB memory", "4 cpu").
    pub fn describe(name: &str, value: i64) -> String {
        match name {
            CPU => format!("{} cpu", quantity::format_cores(value)),
            MEMORY => format!("{} memory", quantity::human_bytes(value)),
            EPHEMERAL_STORAGE => format!("{} ephemeral-storage", quantity::human_bytes(value)),
            PODS => format!("{value} pod slots"),
            other => format!("{value} {other}"),
        }
    }
}

impl fmt::Display for Resources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .to_quantities()
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        write!(f, "{{{}}}", parts.join(", "))
    }
}

/// A container's requests, and for init containers whether it is a sidecar
/// (`restartPolicy: Always`), which keeps running beside the app containers.
#[derive(Debug, Clone, Default)]
pub struct ContainerRequests {
    pub requests: Resources,
    pub sidecar: bool,
}

/// The request the scheduler charges a pod, as Kubernetes computes it:
/// `max(sum(app containers) + sum(sidecars), max over init containers i of
/// (init_i + sidecars declared before i)) + overhead`, plus one pod slot.
pub fn effective_pod_requests(
    containers: &[Resources],
    init_containers: &[ContainerRequests],
    overhead: Option<&Resources>,
) -> Resources {
    let mut app = Resources::default();
    for c in containers {
        app.add(c);
    }
    let mut sidecars = Resources::default();
    let mut init_peak = Resources::default();
    for ic in init_containers {
        if ic.sidecar {
            sidecars.add(&ic.requests);
            // A sidecar starting also needs room beside the ones already running.
            init_peak.max_with(&sidecars);
        } else {
            init_peak.max_with(&ic.requests.plus(&sidecars));
        }
    }
    let mut total = app.plus(&sidecars);
    total.max_with(&init_peak);
    if let Some(o) = overhead {
        total.add(o);
    }
    total.pods = 1;
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    const GI: i64 = 1 << 30;

    #[test]
    fn init_container_larger_than_app_sets_the_request() {
        let r = effective_pod_requests(
            &[Resources::new(500, GI)],
            &[ContainerRequests {
                requests: Resources::new(2000, GI / 2),
                sidecar: false,
            }],
            None,
        );
        assert_eq!(r.cpu, 2000);
        assert_eq!(r.memory, GI);
        assert_eq!(r.pods, 1);
    }

    #[test]
    fn sidecars_add_to_app_containers_and_later_inits() {
        let r = effective_pod_requests(
            &[Resources::new(500, GI)],
            &[
                ContainerRequests {
                    requests: Resources::new(100, GI),
                    sidecar: true,
                },
                ContainerRequests {
                    requests: Resources::new(1000, 0),
                    sidecar: false,
                },
            ],
            Some(&Resources::new(50, 0)),
        );
        // app 500 + sidecar 100 = 600 < init 1000 + sidecar 100 = 1100; plus overhead 50.
        assert_eq!(r.cpu, 1150);
        assert_eq!(r.memory, 2 * GI);
    }

    #[test]
    fn extended_resources_fit_and_sum() {
        let gpu_pod = Resources::new(1000, GI).with_extended(GPU_NVIDIA, 1);
        let node = Resources::new(4000, 16 * GI).with_pods(10);
        assert!(!gpu_pod.fits_in(&node), "a node without GPUs has none");
        let gpu_node = node.clone().with_extended(GPU_NVIDIA, 1);
        let mut used = Resources::default();
        assert!(used.fits_with(&gpu_pod.clone().with_pods(1), &gpu_node));
        used.add(&gpu_pod);
        assert!(
            !used.fits_with(&gpu_pod, &gpu_node),
            "second GPU does not exist"
        );
        assert_eq!(used.exceeding(&node), vec![GPU_NVIDIA]);
    }

    #[test]
    fn a_huge_request_never_fits_beside_another_pod() {
        let huge = Resources::from_quantities([(CPU, "4611686018427387m"), (MEMORY, "4Ei")])
            .unwrap()
            .with_pods(1)
            .with_extended(GPU_NVIDIA, i64::MAX);
        let small = Resources::new(250, GI)
            .with_pods(1)
            .with_extended(GPU_NVIDIA, 1);
        let node = Resources::new(2000, 4 * GI)
            .with_pods(110)
            .with_extended(GPU_NVIDIA, 1);
        assert!(!small.fits_with(&huge, &node));
        assert!(!huge.fits_with(&small, &node));
        let mut used = Resources::default();
        for _ in 0..4 {
            used.add(&huge);
        }
        assert_eq!(
            used.memory,
            i64::MAX,
            "the sum saturates instead of wrapping negative"
        );
        assert_eq!(used.get(GPU_NVIDIA), i64::MAX);
        assert!(!used.fits_in(&node) && !used.fits_with(&small, &node));
        used.sub(&Resources::new(i64::MIN, 0));
        assert_eq!(used.cpu, i64::MAX, "subtracting saturates too");
    }

    #[test]
    fn a_request_past_the_quantity_bound_is_refused() {
        let e = Resources::from_quantities([(CPU, "9223372036854775807")]).unwrap_err();
        assert!(e.to_string().contains("9223372036854775807"), "{e}");
    }

    #[test]
    fn set_to_zero_removes_extended_entry() {
        let mut r = Resources::default().with_extended("x/y", 2);
        r.set("x/y", 0);
        assert!(r.is_zero());
    }
}
