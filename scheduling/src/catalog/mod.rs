//! Instance-type catalogs: the embedded EC2 facts, or a user-supplied list, turned into
//! schedulable [`InstanceType`]s with capacity, overhead, labels and offerings.

pub mod ebs_limits;
pub mod ec2_data;
pub mod ec2_windows;
pub mod regions;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::instance_type::{InstanceType, Offering};
use crate::labels;
use crate::overhead;
use crate::resources::{EFA, GPU_AMD, GPU_NVIDIA, NEURON, NEURON_CORE, Resources};

/// A type's accelerators and EFA interfaces as DescribeInstanceTypes reports them (`GpuInfo`,
/// `NeuronInfo`, `NetworkInfo.EfaInfo`); the embedded table and the live catalog both go
/// through [`add_accelerators`], so they label and count them alike.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Accelerators {
    /// (count, name, manufacturer, memory MiB per GPU); names lower-case.
    pub gpu: Option<(u32, String, String, u64)>,
    /// (devices, cores per device, name); names lower-case.
    pub neuron: Option<(u32, u32, String)>,
    pub efa_interfaces: u32,
}

/// The extended resources and labels `acc` gives a node: `nvidia.com/gpu` or `amd.com/gpu` by
/// manufacturer, `aws.amazon.com/neuron` and `neuroncore`, `vpc.amazonaws.com/efa`.
pub fn add_accelerators(
    acc: &Accelerators,
    capacity: &mut Resources,
    l: &mut BTreeMap<String, String>,
) {
    let mut put = |k: &str, v: String| {
        l.insert(k.to_string(), v);
    };
    if let Some((count, name, manufacturer, memory)) = &acc.gpu {
        match manufacturer.as_str() {
            "nvidia" => capacity.set(GPU_NVIDIA, i64::from(*count)),
            "amd" => capacity.set(GPU_AMD, i64::from(*count)),
            _ => {}
        }
        put(labels::INSTANCE_GPU_COUNT, count.to_string());
        put(labels::INSTANCE_GPU_NAME, name.clone());
        put(labels::INSTANCE_GPU_MANUFACTURER, manufacturer.clone());
        put(labels::INSTANCE_GPU_MEMORY, memory.to_string());
    }
    if let Some((devices, cores, name)) = &acc.neuron {
        capacity.set(NEURON, i64::from(*devices));
        capacity.set(NEURON_CORE, i64::from(*devices) * i64::from(*cores));
        put(labels::INSTANCE_ACCELERATOR_MANUFACTURER, "aws".into());
        put(labels::INSTANCE_ACCELERATOR_NAME, name.clone());
        put(labels::INSTANCE_ACCELERATOR_COUNT, devices.to_string());
    }
    if acc.efa_interfaces > 0 {
        capacity.set(EFA, i64::from(acc.efa_interfaces));
        put(labels::INSTANCE_EFA_COUNT, acc.efa_interfaces.to_string());
    }
}

/// A plain description of one instance type, as an `InstanceCatalog` document gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogEntry {
    pub name: String,
    pub cpu_milli: i64,
    pub memory_bytes: i64,
    pub pods: i64,
    pub arch: String,
    /// `nvidia.com/gpu` count.
    pub gpus: i64,
    pub labels: BTreeMap<String, String>,
    pub offerings: Vec<Offering>,
}

impl CatalogEntry {
    /// Capacity is taken as given; overhead follows [`overhead`]'s formulas with a 20 GiB
    /// root volume, so a user catalog and the embedded one are treated alike.
    pub fn into_instance_type(self) -> InstanceType {
        let vcpus = u32::try_from((self.cpu_milli + 999) / 1000).unwrap_or(u32::MAX);
        let mut capacity = Resources::new(self.cpu_milli, self.memory_bytes)
            .with_pods(self.pods)
            .with_ephemeral(overhead::DEFAULT_ROOT_VOLUME);
        if self.gpus > 0 {
            capacity.set(GPU_NVIDIA, self.gpus);
        }
        let oh = overhead::default_overhead(vcpus, self.pods, overhead::DEFAULT_ROOT_VOLUME);
        let mut l = BTreeMap::from([
            (labels::ARCH.to_string(), self.arch.clone()),
            (labels::OS.to_string(), "linux".to_string()),
            (labels::INSTANCE_CPU.to_string(), vcpus.to_string()),
            (
                labels::INSTANCE_MEMORY.to_string(),
                (self.memory_bytes >> 20).to_string(),
            ),
        ]);
        if self.gpus > 0 {
            l.insert(
                labels::INSTANCE_GPU_COUNT.to_string(),
                self.gpus.to_string(),
            );
        }
        // A type named like an EC2 type ("c5.large") gets the labels EC2 types get from their
        // name, so NodePools written for EC2 (e.g. `instance-family Exists, minValues: 3`)
        // mean the same against a custom catalog; the entry's own labels still win.
        if let (Some((family, size)), Some(parts)) = (
            self.name.split_once('.'),
            ec2_data::family_parts(&self.name),
        ) {
            for (k, v) in [
                (labels::INSTANCE_FAMILY, family.to_string()),
                (labels::INSTANCE_SIZE, size.to_string()),
                (labels::INSTANCE_CATEGORY, parts.category.to_string()),
                (labels::INSTANCE_GENERATION, parts.generation.to_string()),
            ] {
                l.insert(k.to_string(), v);
            }
        }
        l.extend(self.labels);
        InstanceType::new(&self.name, capacity, oh, l, self.offerings)
    }
}

/// The embedded catalog in us-east-1: every type in [`ec2_data::TYPES`], offered in each of
/// [`ec2_data::ZONES`] on demand at its list price and as spot at
/// [`ec2_data::spot_fraction`] of it. Other regions: [`regions::embedded_in`].
pub fn embedded() -> Vec<Arc<InstanceType>> {
    ec2_data::TYPES
        .iter()
        .map(|t| Arc::new(ec2_instance_type(t)))
        .collect()
}

pub fn ec2_instance_type(t: &ec2_data::Ec2Type) -> InstanceType {
    ec2_instance_type_in(t, ec2_data::REGION, ec2_data::ZONES, t.on_demand_usd)
}

/// `t` as offered in `region`'s `zones` at the Linux on-demand price `on_demand_usd`.
pub fn ec2_instance_type_in(
    t: &ec2_data::Ec2Type,
    region: &str,
    zones: &[&str],
    on_demand_usd: f64,
) -> InstanceType {
    let max_pods = overhead::eni_max_pods(t.max_enis, t.ipv4_per_eni);
    let mut capacity = Resources::new(
        i64::from(t.vcpu) * 1000,
        overhead::memory_capacity(t.memory_mib),
    )
    .with_pods(max_pods)
    .with_ephemeral(overhead::DEFAULT_ROOT_VOLUME);
    let mut l = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        l.insert(k.to_string(), v);
    };
    put(labels::ARCH, t.arch.to_string());
    put(labels::OS, "linux".to_string());
    put(labels::REGION, region.to_string());
    put(labels::INSTANCE_CPU, t.vcpu.to_string());
    put(labels::INSTANCE_MEMORY, t.memory_mib.to_string());
    put(
        labels::INSTANCE_FAMILY,
        ec2_data::family(t.name).to_string(),
    );
    put(labels::INSTANCE_SIZE, ec2_data::size(t.name).to_string());
    if let Some(p) = ec2_data::family_parts(t.name) {
        put(labels::INSTANCE_CATEGORY, p.category.to_string());
        put(labels::INSTANCE_GENERATION, p.generation.to_string());
    }
    if !t.hypervisor.is_empty() {
        put(labels::INSTANCE_HYPERVISOR, t.hypervisor.to_string());
    }
    if let Some(m) = ec2_data::cpu_manufacturer(t.name) {
        put(labels::INSTANCE_CPU_MANUFACTURER, m.to_string());
    }
    // As the live catalog does (aws/src/instance_types.rs): only types with NVMe instance
    // store carry the label, valued in total GB.
    if t.local_nvme_gb > 0 {
        put(labels::INSTANCE_LOCAL_NVME, t.local_nvme_gb.to_string());
    }
    add_accelerators(&ec2_data::accelerators(t), &mut capacity, &mut l);
    let spot = on_demand_usd * ec2_data::spot_fraction(t.name);
    let offerings = zones
        .iter()
        .flat_map(|z| {
            [
                Offering {
                    zone: z.to_string(),
                    zone_id: None,
                    capacity_type: labels::CAPACITY_TYPE_ON_DEMAND.to_string(),
                    price: on_demand_usd,
                    available: true,
                    reservation: None,
                },
                Offering {
                    zone: z.to_string(),
                    zone_id: None,
                    capacity_type: labels::CAPACITY_TYPE_SPOT.to_string(),
                    price: (spot * 10_000.0).round() / 10_000.0,
                    available: true,
                    reservation: None,
                },
            ]
        })
        .collect();
    let oh = overhead::default_overhead(t.vcpu, max_pods, overhead::DEFAULT_ROOT_VOLUME);
    InstanceType::new(t.name, capacity, oh, l, offerings)
        .with_ebs_attach_limit(Some(ebs_limits::for_ec2_type(t)))
        .with_network(Some(crate::instance_type::NetworkFacts {
            default_enis: t.max_enis,
            ipv4_per_eni: t.ipv4_per_eni,
        }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_catalog_entry_named_like_an_ec2_type_gets_its_name_labels() {
        let entry = |name: &str, own: &[(&str, &str)]| {
            CatalogEntry {
                name: name.into(),
                cpu_milli: 2000,
                memory_bytes: 4 << 30,
                pods: 29,
                arch: "amd64".into(),
                gpus: 0,
                labels: own
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                offerings: vec![],
            }
            .into_instance_type()
        };
        let c5 = entry("c5.large", &[]);
        assert_eq!(c5.label(labels::INSTANCE_FAMILY), Some("c5"));
        assert_eq!(c5.label(labels::INSTANCE_SIZE), Some("large"));
        assert_eq!(c5.label(labels::INSTANCE_CATEGORY), Some("c"));
        assert_eq!(c5.label(labels::INSTANCE_GENERATION), Some("5"));
        let own = entry("m7g.xlarge", &[(labels::INSTANCE_FAMILY, "custom")]);
        assert_eq!(
            own.label(labels::INSTANCE_FAMILY),
            Some("custom"),
            "own labels win"
        );
        assert_eq!(own.label(labels::INSTANCE_GENERATION), Some("7"));
        let plain = entry("small", &[]);
        assert_eq!(plain.label(labels::INSTANCE_FAMILY), None);
        assert_eq!(plain.label(labels::INSTANCE_CATEGORY), None);
    }

    #[test]
    fn embedded_catalog_has_labelled_types_with_offerings() {
        let cat = embedded();
        assert!(cat.len() >= 200);
        let m5 = cat.iter().find(|t| t.name == "m5.large").unwrap();
        assert_eq!(m5.label(labels::ARCH), Some("amd64"));
        assert_eq!(m5.label(labels::INSTANCE_FAMILY), Some("m5"));
        assert_eq!(m5.label(labels::INSTANCE_CATEGORY), Some("m"));
        assert_eq!(m5.capacity.pods, 29);
        assert_eq!(m5.allocatable().cpu, 2000 - 70);
        let spot = m5
            .offerings
            .iter()
            .find(|o| o.capacity_type == "spot")
            .unwrap();
        assert!(spot.price < 0.096 && spot.price > 0.0);
        let g = cat.iter().find(|t| t.name == "g5.xlarge").unwrap();
        assert_eq!(g.capacity.get(GPU_NVIDIA), 1);
        assert_eq!(g.capacity.get(EFA), 0, "g5.xlarge has no EFA");
        let inf2 = cat.iter().find(|t| t.name == "inf2.xlarge").unwrap();
        assert_eq!(inf2.capacity.get(NEURON), 1);
        assert_eq!(inf2.capacity.get(NEURON_CORE), 2);
        assert_eq!(
            inf2.label(labels::INSTANCE_ACCELERATOR_NAME),
            Some("inferentia2")
        );
        let big = cat.iter().find(|t| t.name == "g5.48xlarge").unwrap();
        assert_eq!(big.capacity.get(EFA), 1);
    }

    #[test]
    fn instance_store_types_carry_the_local_nvme_label_in_gb_and_ebs_only_types_none() {
        let cat = embedded();
        let label = |name: &str| {
            cat.iter()
                .find(|t| t.name == name)
                .unwrap()
                .label(labels::INSTANCE_LOCAL_NVME)
                .map(str::to_string)
        };
        assert_eq!(label("m5d.large").as_deref(), Some("75"));
        assert_eq!(label("c6id.32xlarge").as_deref(), Some("7600"));
        assert_eq!(label("i4i.large").as_deref(), Some("468"));
        assert_eq!(label("g5.xlarge").as_deref(), Some("250"));
        assert_eq!(label("m5.large"), None);
        assert_eq!(label("p3.2xlarge"), None);
        // Other regions build their types through the same function.
        let eu = regions::embedded_in("eu-west-1").unwrap();
        let m6id = eu.iter().find(|t| t.name == "m6id.large").unwrap();
        assert_eq!(m6id.label(labels::INSTANCE_LOCAL_NVME), Some("118"));
    }
}
