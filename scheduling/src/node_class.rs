//! What a pool's node class (an EC2NodeClass) changes about the instance types it can launch.
//!
//! The catalog says what a region offers; a class narrows and reshapes it:
//!
//! * offerings only in zones where the class has a subnet;
//! * only types one of the class's resolved images boots ([`image_fits`]: its architecture,
//!   and for accelerated images the accelerator the image carries drivers for);
//! * pods, overhead and ephemeral storage from its kubelet settings and root volume
//!   ([`overhead::overhead`]), so allocatable is what the kubelet will report.
//!
//! Catalog types carry the ENI-limited pod count in `capacity.pods`; that is the figure
//! `maxPods`/`podsPerCore` start from. Pure: same catalog and facts, same answer.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::catalog::ec2_windows;
use crate::instance_type::{InstanceType, Offering, Reservation, reserved_price};
use crate::kubelet_expr;
use crate::labels;
use crate::overhead::{self, KubeletSettings};
use crate::requirements::Requirements;

/// The facts of one node class that placement needs, parsed at the edge.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeClassFacts {
    /// Zones where the class has a subnet.
    pub zones: BTreeSet<String>,
    /// Zone name to zone ID from the class's subnets (`AvailabilityZoneId`), for offerings
    /// whose catalog did not know the ID.
    pub zone_ids: BTreeMap<String, String>,
    /// The requirements of each resolved image (architecture, accelerator); a type needs one
    /// image whose requirements its labels meet.
    pub images: Vec<Requirements>,
    pub kubelet: KubeletSettings,
    /// Size of the volume that backs ephemeral storage; None keeps the catalog's.
    pub root_volume: Option<i64>,
    /// `instanceStorePolicy: RAID0`: a type with local NVMe disks backs ephemeral storage
    /// with all of them (the `instance-local-nvme` label); others keep the root volume.
    pub instance_store_raid0: bool,
    /// Active capacity reservations the class selected; each becomes a `reserved` offering of
    /// its type in its zone.
    pub reservations: Vec<ReservationFacts>,
    /// The Windows Server build of a Windows class's images ("10.0.20348"), None for Linux.
    /// The catalog describes Linux nodes; a Windows class's nodes are `kubernetes.io/os:
    /// windows` of this build, and amd64 only (EKS publishes no arm64 Windows image).
    pub windows_build: Option<String>,
    /// `efa-only` interfaces in the class's `networkInterfaces`: a type needs at least this
    /// many EFA interfaces (its `instance-efa-count`, from the catalog) to launch with them.
    pub efa_only_interfaces: u32,
    /// `enclaveOptions.enabled`: only types that can run Nitro Enclaves ([`enclaves_fit`]).
    pub nitro_enclaves: bool,
}

/// One capacity reservation as placement needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReservationFacts {
    pub id: String,
    pub instance_type: String,
    pub zone: String,
    /// [`labels::RESERVATION_TYPE_DEFAULT`] or [`labels::RESERVATION_TYPE_CAPACITY_BLOCK`].
    pub kind: String,
    /// Instances that can still be launched into it.
    pub remaining: u32,
    /// EC2 may reclaim it (DescribeCapacityReservations' `Interruptible`).
    pub interruptible: bool,
}

/// The catalog as a pool of this class can really launch it. An error when a kubelet
/// expression has no usable value for one of the types: as with Karpenter, a class whose
/// expressions fail launches nothing rather than some types with guessed settings.
pub fn instance_types(
    catalog: &[Arc<InstanceType>],
    class: &NodeClassFacts,
) -> Result<Vec<Arc<InstanceType>>, KubeletExprError> {
    let mut out = Vec::new();
    for t in catalog
        .iter()
        .filter_map(|t| as_class_os(t, class))
        .filter(|t| class.images.iter().any(|i| image_fits(i, t)))
        .filter(|t| efa_fits(t, class.efa_only_interfaces))
        .filter(|t| !class.nitro_enclaves || enclaves_fit(t))
    {
        if let Some(t) = reshape(&t, class)? {
            out.push(Arc::new(t));
        }
    }
    Ok(out)
}

/// A kubelet expression of a class with no usable value for one instance type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("spec.kubelet.{field} on {instance_type}: {message}")]
pub struct KubeletExprError {
    /// `maxPods`, or `kubeReserved[cpu]` and the like.
    pub field: String,
    pub instance_type: String,
    pub message: String,
}

/// The class's kubelet settings for `t` with every expression evaluated, in Karpenter's
/// order: `maxPods` against the type's default pods (`t`'s pods before the class), then the
/// reservations against the resolved `maxPods` (after `podsPerCore`). A `maxPods` outside
/// 0..=2^31-1 or a negative reservation is an error, as kubelet would refuse it.
pub fn kubelet_for(
    t: &InstanceType,
    kubelet: &KubeletSettings,
) -> Result<KubeletSettings, KubeletExprError> {
    if !kubelet.has_expressions() {
        return Ok(kubelet.clone());
    }
    let has_reserved =
        !kubelet.kube_reserved_expr.is_empty() || !kubelet.system_reserved_expr.is_empty();
    let err = |field: &str, message: String| KubeletExprError {
        field: field.to_string(),
        instance_type: t.name.clone(),
        message,
    };
    let mut out = kubelet.clone();
    if let Some(expr) = &kubelet.max_pods_expr {
        let vars = kubelet_expr::Vars::of(t, t.capacity.pods);
        let pods = expr
            .eval(&vars)
            .map_err(|e| err("maxPods", e.to_string()))?;
        if !(0..=i64::from(i32::MAX)).contains(&pods) {
            return Err(err(
                "maxPods",
                format!("gave {pods}; maxPods must be between 0 and {}", i32::MAX),
            ));
        }
        out.max_pods = Some(pods);
        out.max_pods_expr = None;
    }
    if has_reserved {
        let vcpus = u32::try_from(t.capacity.cpu.saturating_add(999) / 1000).unwrap_or(u32::MAX);
        let pods = overhead::max_pods(t.capacity.pods, vcpus, &out);
        let vars = kubelet_expr::Vars::of(t, pods);
        for (field, exprs, amounts) in [
            (
                "kubeReserved",
                &kubelet.kube_reserved_expr,
                &mut out.kube_reserved,
            ),
            (
                "systemReserved",
                &kubelet.system_reserved_expr,
                &mut out.system_reserved,
            ),
        ] {
            for (resource, expr) in exprs {
                let field = format!("{field}[{resource}]");
                let n = expr
                    .reservation(&vars)
                    .map_err(|e| err(&field, e.to_string()))?;
                let (unit, _) = kubelet_expr::reserved_unit(resource);
                let amount = n
                    .checked_mul(unit)
                    .ok_or_else(|| err(&field, format!("{n} {resource} overflows")))?;
                // `pid` limits processes, which placement does not count.
                if resource != "pid" {
                    amounts.insert(resource.clone(), amount);
                }
            }
        }
        out.kube_reserved_expr.clear();
        out.system_reserved_expr.clear();
    }
    Ok(out)
}

/// `t` as a node of the class's operating system: unchanged for Linux; for Windows
/// [`as_windows`] of the class's build.
fn as_class_os(t: &Arc<InstanceType>, class: &NodeClassFacts) -> Option<Arc<InstanceType>> {
    match &class.windows_build {
        None => Some(t.clone()),
        Some(build) => as_windows(t, build).map(Arc::new),
    }
}

/// A catalog type (which describes the Linux node) as a Windows Server node of `build`, or
/// None when it cannot be one: not amd64 (EKS publishes no arm64 Windows image), or no
/// published Windows price: neither the cloud's ([`InstanceType::windows`], from the live
/// Price List) nor the embedded table's ([`ec2_windows`]): Adze will not price
/// Windows as Linux.
///
/// * labels: `kubernetes.io/os: windows` and `node.kubernetes.io/windows-build: <build>`;
/// * prices: every offering costs the Windows licence more (the cloud's, else
///   [`ec2_windows::licence_usd`]),
///   spot included, so on demand in us-east-1 is the published Windows price;
/// * pods: the primary interface's addresses ([`overhead::windows_max_pods`]), and the
///   overhead that follows from them; kubelet settings apply on top, as for Linux.
///
/// `run` (through [`instance_types`]) and `simulate` both take Windows types from here.
pub fn as_windows(t: &InstanceType, build: &str) -> Option<InstanceType> {
    // Neuron devices have Linux drivers only, whatever a price list says.
    if t.label(labels::ARCH) != Some("amd64") || t.capacity.get(crate::resources::NEURON) > 0 {
        return None;
    }
    let (licence, ipv4) = match t.windows {
        Some(w) => (w.licence_usd, w.primary_eni_ipv4),
        None => (
            ec2_windows::licence_usd(&t.name)?,
            ec2_windows::primary_eni_ipv4(&t.name)?,
        ),
    };
    let offerings = t
        .offerings
        .iter()
        .map(|o| Offering {
            price: ec2_windows::round_usd(o.price + licence),
            ..o.clone()
        })
        .collect();
    let mut capacity = t.capacity.clone();
    capacity.pods = overhead::windows_max_pods(ipv4);
    let vcpus = u32::try_from((capacity.cpu + 999) / 1000).unwrap_or(u32::MAX);
    let oh = overhead::overhead(
        vcpus,
        capacity.memory,
        capacity.pods,
        capacity.ephemeral_storage,
        &KubeletSettings::default(),
    );
    Some(
        t.reshaped(capacity, oh, offerings)
            .relabelled(&[(labels::OS, "windows"), (labels::WINDOWS_BUILD, build)]),
    )
}

/// Every type of `catalog` that can be a Windows node of `build`, as [`as_windows`] makes it.
pub fn windows_types(catalog: &[Arc<InstanceType>], build: &str) -> Vec<Arc<InstanceType>> {
    catalog
        .iter()
        .filter_map(|t| as_windows(t, build).map(Arc::new))
        .collect()
}

/// Whether an image with these requirements boots `t`: each requirement allows the type's
/// label (or its absence, for keys the type does not carry). The launch picks its image with
/// the same rule, so planning and launching agree.
pub fn image_fits(image: &Requirements, t: &InstanceType) -> bool {
    image.iter().all(|r| r.allows_label(t.label(&r.key)))
}

/// Whether `t` supports `efa_only` EFA-only interfaces: a class asking for none fits every
/// type; otherwise the catalog's EFA interface count must reach it (a type the catalog
/// records no EFA for does not fit).
pub fn efa_fits(t: &InstanceType, efa_only: u32) -> bool {
    efa_only == 0
        || t.label(labels::INSTANCE_EFA_COUNT)
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|n| n >= efa_only)
}

/// Whether `t` can be launched with Nitro Enclaves enabled (EC2 refuses the launch
/// otherwise). The cloud's answer when it gave one ([`InstanceType::nitro_enclaves`], from
/// DescribeInstanceTypes); else the rule of the Nitro Enclaves User Guide's requirements,
/// read from the type's labels: a Nitro (virtualized) type, Intel/AMD with at least 4 vCPUs
/// or Graviton with at least 2, not burstable (`t*`) nor `a1`, not bare metal (no hypervisor
/// label). A type whose labels leave any of this unknown does not fit: a launch EC2 would
/// refuse is worse than a type left out.
pub fn enclaves_fit(t: &InstanceType) -> bool {
    if let Some(known) = t.nitro_enclaves {
        return known;
    }
    if t.label(labels::INSTANCE_HYPERVISOR) != Some("nitro") {
        return false;
    }
    let family = t.label(labels::INSTANCE_FAMILY).unwrap_or_default();
    if family.is_empty() || family.starts_with('t') || family == "a1" {
        return false;
    }
    let Some(vcpus) = t
        .label(labels::INSTANCE_CPU)
        .and_then(|c| c.parse::<u32>().ok())
    else {
        return false;
    };
    match t.label(labels::ARCH) {
        Some("amd64") => vcpus >= 4,
        Some("arm64") => vcpus >= 2,
        _ => false,
    }
}

/// One type under `class`; None when no offering is left in the class's zones.
pub fn reshape(
    t: &InstanceType,
    class: &NodeClassFacts,
) -> Result<Option<InstanceType>, KubeletExprError> {
    let mut offerings: Vec<_> = t
        .offerings
        .iter()
        .filter(|o| class.zones.contains(&o.zone))
        .map(|o| {
            let mut o = o.clone();
            if o.zone_id.is_none() {
                o.zone_id = class.zone_ids.get(&o.zone).cloned();
            }
            o
        })
        .collect();
    offerings.extend(reserved_offerings(t, class));
    if offerings.is_empty() {
        return Ok(None);
    }
    let kubelet = kubelet_for(t, &class.kubelet)?;
    let vcpus = u32::try_from((t.capacity.cpu + 999) / 1000).unwrap_or(u32::MAX);
    let mut capacity = t.capacity.clone();
    capacity.pods = overhead::max_pods(t.capacity.pods, vcpus, &kubelet);
    if let Some(root) = class.root_volume {
        capacity.ephemeral_storage = root;
    }
    let local_nvme_gb = t
        .label(labels::INSTANCE_LOCAL_NVME)
        .and_then(|gb| gb.parse::<i64>().ok());
    if let (true, Some(gb)) = (class.instance_store_raid0, local_nvme_gb) {
        capacity.ephemeral_storage = gb * 1_000_000_000;
    }
    let oh = overhead::overhead(
        vcpus,
        capacity.memory,
        capacity.pods,
        capacity.ephemeral_storage,
        &kubelet,
    );
    Ok(Some(t.reshaped(capacity, oh, offerings)))
}

/// A `reserved` offering per reservation of `t` in one of the class's zones, priced from the
/// type's on-demand price there ([`reserved_price`]) so reserved capacity is used first. A
/// reservation with no slot left is offered as unavailable.
fn reserved_offerings(t: &InstanceType, class: &NodeClassFacts) -> Vec<Offering> {
    class
        .reservations
        .iter()
        .filter(|r| r.instance_type == t.name && class.zones.contains(&r.zone))
        .map(|r| {
            let on_demand = t
                .offerings
                .iter()
                .filter(|o| o.capacity_type == labels::CAPACITY_TYPE_ON_DEMAND)
                .min_by_key(|o| o.zone != r.zone)
                .map_or(0.0, |o| o.price);
            let zone_id = t
                .offerings
                .iter()
                .find(|o| o.zone == r.zone)
                .and_then(|o| o.zone_id.clone())
                .or_else(|| class.zone_ids.get(&r.zone).cloned());
            // A launch into the type's reservations in this zone failed lately (the catalog
            // carries that as an unavailable `reserved` offering without a reservation).
            let failed = t.offerings.iter().any(|o| {
                o.zone == r.zone
                    && o.capacity_type == labels::CAPACITY_TYPE_RESERVED
                    && o.reservation.is_none()
                    && !o.available
            });
            Offering {
                zone: r.zone.clone(),
                zone_id,
                capacity_type: labels::CAPACITY_TYPE_RESERVED.to_string(),
                price: reserved_price(on_demand),
                available: r.remaining > 0 && !failed,
                reservation: Some(Reservation {
                    id: r.id.clone(),
                    kind: r.kind.clone(),
                    remaining: r.remaining,
                    interruptible: r.interruptible,
                }),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;
    use crate::overhead::{MEMORY_AVAILABLE, NODEFS_AVAILABLE, Threshold};
    use crate::requirements::{Operator, Requirement};

    const MIB: i64 = 1 << 20;
    const GIB: i64 = 1 << 30;

    fn class() -> NodeClassFacts {
        NodeClassFacts {
            zones: BTreeSet::from(["us-east-1a".into(), "us-east-1b".into()]),
            images: vec![arch_image("amd64"), arch_image("arm64")],
            ..Default::default()
        }
    }

    fn arch_image(arch: &str) -> Requirements {
        Requirements::new().with(Requirement::single(labels::ARCH, arch))
    }

    fn m5_large(class: &NodeClassFacts) -> Arc<InstanceType> {
        let cat = catalog::embedded();
        instance_types(&cat, class)
            .unwrap()
            .into_iter()
            .find(|t| t.name == "m5.large")
            .expect("m5.large launchable")
    }

    fn raw_m5_large() -> Arc<InstanceType> {
        catalog::embedded()
            .into_iter()
            .find(|t| t.name == "m5.large")
            .unwrap()
    }

    #[test]
    fn subnet_zone_ids_label_the_offerings_of_a_catalog_without_them() {
        let mut c = class();
        c.zone_ids = BTreeMap::from([("us-east-1a".into(), "use1-az4".into())]);
        let t = m5_large(&c);
        let ids: BTreeMap<&str, Option<&str>> = t
            .offerings
            .iter()
            .map(|o| (o.zone.as_str(), o.zone_id.as_deref()))
            .collect();
        assert_eq!(ids["us-east-1a"], Some("use1-az4"));
        assert_eq!(ids["us-east-1b"], None, "no subnet said");
        assert_eq!(t.label(labels::ZONE_ID), Some("use1-az4"));
        assert_eq!(raw_m5_large().label(labels::ZONE_ID), None);
    }

    #[test]
    fn a_class_with_nitro_enclaves_plans_only_types_that_can_run_them() {
        let cat = catalog::embedded();
        let all = instance_types(&cat, &class()).unwrap();
        let mut c = class();
        c.nitro_enclaves = true;
        let enclave: Vec<String> = instance_types(&cat, &c)
            .unwrap()
            .iter()
            .map(|t| t.name.clone())
            .collect();
        assert!(!enclave.is_empty() && enclave.len() < all.len());
        // Intel/AMD from 4 vCPUs, Graviton from 2; not burstable, not bare metal.
        for yes in ["m5.xlarge", "c6i.2xlarge", "m6g.large"] {
            assert!(enclave.iter().any(|n| n == yes), "{yes} runs enclaves");
        }
        for no in ["m5.large", "t3.xlarge", "m5.metal"] {
            assert!(all.iter().any(|t| t.name == no), "{no} in the catalog");
            assert!(!enclave.iter().any(|n| n == no), "{no} cannot run enclaves");
        }
        // The cloud's answer overrides the rule, both ways.
        let m5_large = raw_m5_large();
        assert!(!enclaves_fit(&m5_large));
        assert!(enclaves_fit(
            &(*m5_large).clone().with_nitro_enclaves(Some(true))
        ));
        let m5_xl = cat.iter().find(|t| t.name == "m5.xlarge").unwrap();
        assert!(enclaves_fit(m5_xl));
        assert!(!enclaves_fit(
            &(**m5_xl).clone().with_nitro_enclaves(Some(false))
        ));
    }

    #[test]
    fn a_class_with_efa_only_interfaces_plans_only_types_with_that_many_efa_interfaces() {
        let cat = catalog::embedded();
        let all = instance_types(&cat, &class()).unwrap();
        let mut c = class();
        c.efa_only_interfaces = 1;
        let efa = instance_types(&cat, &c).unwrap();
        assert!(!efa.is_empty(), "the catalog has EFA types");
        assert!(efa.len() < all.len());
        assert!(
            efa.iter()
                .all(|t| t.label(labels::INSTANCE_EFA_COUNT) == Some("1")),
            "the embedded catalog's EFA types have one EFA interface each"
        );
        assert!(efa.iter().any(|t| t.name == "c6i.32xlarge"));
        assert!(
            !efa.iter().any(|t| t.name == "m5.large"),
            "no EFA on m5.large"
        );
        // Two EFA-only interfaces need a type with two: none in the embedded catalog.
        c.efa_only_interfaces = 2;
        assert_eq!(
            instance_types(&cat, &c).unwrap(),
            Vec::<Arc<InstanceType>>::new()
        );
        let one = efa.iter().find(|t| t.name == "c6i.32xlarge").unwrap();
        assert!(efa_fits(one, 0) && efa_fits(one, 1) && !efa_fits(one, 2));
    }

    #[test]
    fn zones_without_a_subnet_have_no_offerings() {
        let mut c = class();
        c.zones = BTreeSet::from(["us-east-1b".into()]);
        let cat = catalog::embedded();
        let types = instance_types(&cat, &c).unwrap();
        assert!(!types.is_empty());
        assert!(
            types
                .iter()
                .flat_map(|t| &t.offerings)
                .all(|o| o.zone == "us-east-1b")
        );
        let zone = types[0].requirements.get(labels::ZONE).unwrap();
        assert!(zone.allows("us-east-1b") && !zone.allows("us-east-1a"));
        c.zones = BTreeSet::from(["eu-west-1a".into()]);
        assert!(
            instance_types(&cat, &c).unwrap().is_empty(),
            "no zone, no type"
        );
    }

    fn windows_class() -> NodeClassFacts {
        let image = arch_image("amd64")
            .with(Requirement::single(labels::OS, "windows"))
            .with(Requirement::single(labels::WINDOWS_BUILD, "10.0.20348"));
        NodeClassFacts {
            images: vec![image],
            windows_build: Some("10.0.20348".into()),
            ..class()
        }
    }

    #[test]
    fn a_windows_class_makes_windows_nodes_of_amd64_types_only() {
        let cat = catalog::embedded();
        let types = instance_types(&cat, &windows_class()).unwrap();
        assert!(types.iter().any(|t| t.name == "m5.large"));
        assert!(
            !types.iter().any(|t| t.name == "m7g.large"),
            "no arm64 Windows"
        );
        for t in &types {
            assert_eq!(t.label(labels::OS), Some("windows"), "{}", t.name);
            assert_eq!(t.label(labels::WINDOWS_BUILD), Some("10.0.20348"));
            assert_eq!(t.label(labels::ARCH), Some("amd64"));
        }
        // The same catalog under a Linux class stays Linux, and a Windows image boots nothing there.
        let linux = instance_types(&cat, &class()).unwrap();
        assert!(linux.iter().all(|t| t.label(labels::OS) == Some("linux")));
        assert!(
            linux
                .iter()
                .all(|t| t.label(labels::WINDOWS_BUILD).is_none())
        );
        let mut mismatched = class();
        mismatched.images = windows_class().images;
        assert!(instance_types(&cat, &mismatched).unwrap().is_empty());
    }

    #[test]
    fn a_windows_m5_large_costs_the_published_windows_price_on_demand_and_the_licence_more_on_spot()
    {
        let linux = m5_large(&class());
        let windows = m5_large(&windows_class());
        let price = |t: &InstanceType, ct: &str| {
            t.offerings
                .iter()
                .find(|o| o.capacity_type == ct && o.zone == "us-east-1a")
                .unwrap()
                .price
        };
        assert_eq!(price(&linux, "on-demand"), 0.096);
        assert_eq!(
            price(&windows, "on-demand"),
            0.188,
            "published Windows price"
        );
        // The licence (2 vCPUs × $0.046) is not discounted on spot.
        let spot_gap = price(&windows, "spot") - price(&linux, "spot");
        assert!((spot_gap - 0.092).abs() < 1e-9, "{spot_gap}");
        assert_eq!(windows.offerings.len(), linux.offerings.len());
    }

    #[test]
    fn a_windows_node_runs_the_primary_interfaces_pods_with_the_overhead_they_imply() {
        let linux = m5_large(&class());
        let windows = m5_large(&windows_class());
        assert_eq!(linux.capacity.pods, 29, "3 ENIs x (10 - 1) + 2");
        assert_eq!(
            windows.capacity.pods, 9,
            "one ENI of 10 addresses, less the node's own"
        );
        assert_eq!(
            windows.overhead.kube_reserved.memory,
            overhead::kube_reserved_memory(9)
        );
        assert_eq!(
            windows.overhead.kube_reserved.cpu,
            linux.overhead.kube_reserved.cpu
        );
        assert_eq!(windows.capacity.cpu, linux.capacity.cpu);
        assert_eq!(windows.capacity.memory, linux.capacity.memory);
        assert!(
            windows.allocatable().memory > linux.allocatable().memory,
            "fewer pods, less reserved"
        );
        // maxPods still overrides, as on Linux.
        let mut c = windows_class();
        c.kubelet.max_pods = Some(4);
        assert_eq!(m5_large(&c).capacity.pods, 4);
    }

    #[test]
    fn types_without_a_windows_price_are_not_offered_to_a_windows_class() {
        let cat = catalog::embedded();
        let names: BTreeSet<String> = instance_types(&cat, &windows_class())
            .unwrap()
            .iter()
            .map(|t| t.name.clone())
            .collect();
        assert!(names.contains("g4dn.xlarge") && names.contains("m5.large"));
        for absent in [
            "inf2.xlarge",
            "trn1.2xlarge",
            "m5.metal",
            "c6g.large",
            "t3.medium",
        ] {
            assert!(!names.contains(absent), "{absent}");
        }
        // A custom catalog's type with no EC2 name has no Windows price either.
        let custom = crate::catalog::CatalogEntry {
            name: "small".into(),
            cpu_milli: 2000,
            memory_bytes: 4 * GIB,
            pods: 29,
            arch: "amd64".into(),
            gpus: 0,
            labels: Default::default(),
            offerings: vec![],
        }
        .into_instance_type();
        assert!(as_windows(&custom, "10.0.20348").is_none());
    }

    #[test]
    fn a_windows_reservation_is_priced_from_the_windows_on_demand_price() {
        let mut c = windows_class();
        c.reservations = vec![ReservationFacts {
            id: "cr-1".into(),
            instance_type: "m5.large".into(),
            zone: "us-east-1a".into(),
            kind: labels::RESERVATION_TYPE_DEFAULT.into(),
            remaining: 1,
            interruptible: false,
        }];
        let t = m5_large(&c);
        let reserved = t
            .offerings
            .iter()
            .find(|o| o.capacity_type == labels::CAPACITY_TYPE_RESERVED)
            .unwrap();
        assert_eq!(reserved.price, reserved_price(0.188));
    }

    #[test]
    fn a_windows_class_with_arm64_images_only_has_no_types() {
        let mut c = windows_class();
        c.images = vec![arch_image("arm64").with(Requirement::single(labels::OS, "windows"))];
        assert!(instance_types(&catalog::embedded(), &c).unwrap().is_empty());
    }

    #[test]
    fn arm64_types_are_dropped_when_images_are_only_x86_64() {
        let mut c = class();
        c.images = vec![arch_image("amd64")];
        let cat = catalog::embedded();
        let types = instance_types(&cat, &c).unwrap();
        assert!(types.iter().all(|t| t.label(labels::ARCH) == Some("amd64")));
        assert!(types.iter().any(|t| t.name == "m5.large"));
        assert!(!types.iter().any(|t| t.name == "m7g.large"));
        c.images.clear();
        assert!(
            instance_types(&cat, &c).unwrap().is_empty(),
            "no image, no type"
        );
    }

    #[test]
    fn gpu_types_need_an_image_for_their_gpu_and_standard_images_refuse_them() {
        let standard = arch_image("amd64").with(
            Requirement::new(
                labels::INSTANCE_GPU_COUNT,
                Operator::DoesNotExist,
                &[] as &[&str],
            )
            .unwrap(),
        );
        let nvidia = arch_image("amd64").with(Requirement::single(
            labels::INSTANCE_GPU_MANUFACTURER,
            "nvidia",
        ));
        let cat = catalog::embedded();
        let mut c = class();
        c.images = vec![standard.clone()];
        let names = |c: &NodeClassFacts| -> Vec<String> {
            instance_types(&cat, c)
                .unwrap()
                .iter()
                .map(|t| t.name.clone())
                .collect()
        };
        let only_standard = names(&c);
        assert!(only_standard.contains(&"m5.large".to_string()));
        assert!(!only_standard.contains(&"g5.xlarge".to_string()));
        c.images = vec![nvidia];
        let only_nvidia = names(&c);
        assert!(only_nvidia.contains(&"g5.xlarge".to_string()));
        assert!(!only_nvidia.contains(&"m5.large".to_string()));
    }

    #[test]
    fn a_class_without_settings_keeps_the_catalogs_shape() {
        let raw = raw_m5_large();
        let t = m5_large(&class());
        assert_eq!(t.capacity, raw.capacity);
        assert_eq!(t.allocatable(), raw.allocatable());
    }

    #[test]
    fn max_pods_changes_pods_and_kube_reserved_memory() {
        let raw = raw_m5_large();
        let mut c = class();
        c.kubelet.max_pods = Some(110);
        let t = m5_large(&c);
        assert_eq!(t.capacity.pods, 110);
        // 11 MiB per pod more kube-reserved: (110 − 29) × 11 MiB less allocatable memory.
        assert_eq!(
            raw.allocatable().memory - t.allocatable().memory,
            81 * 11 * MIB
        );
        c.kubelet.pods_per_core = Some(4);
        assert_eq!(m5_large(&c).capacity.pods, 8, "4 per core × 2 vCPU");
    }

    fn expr(source: &str) -> kubelet_expr::Expr {
        kubelet_expr::Expr::compile(source).unwrap()
    }

    #[test]
    fn kubelet_expressions_size_each_type_by_its_own_facts() {
        let mut c = class();
        // m5.large: 3 ENIs of 10 addresses (29 pods by default); m5.4xlarge: 8 of 30 (234).
        c.kubelet.max_pods_expr = Some(expr("min(110, default_enis * (ips_per_eni - 1))"));
        c.kubelet.kube_reserved_expr = BTreeMap::from([
            ("memory".to_string(), expr("11 * max_pods + 255")),
            ("cpu".to_string(), expr("max(60, vcpus * 30)")),
            ("pid".to_string(), expr("max_pods * 10")),
        ]);
        c.kubelet.system_reserved_expr =
            BTreeMap::from([("memory".to_string(), expr("memory_mib / 64"))]);
        let types = instance_types(&catalog::embedded(), &c).unwrap();
        let get = |name: &str| types.iter().find(|t| t.name == name).unwrap().clone();
        let (small, big) = (get("m5.large"), get("m5.4xlarge"));
        assert_eq!(small.capacity.pods, 27, "3 × 9");
        assert_eq!(big.capacity.pods, 110, "min(110, 8 × 29)");
        assert_eq!(small.overhead.kube_reserved.memory, (11 * 27 + 255) * MIB);
        assert_eq!(big.overhead.kube_reserved.memory, (11 * 110 + 255) * MIB);
        assert_eq!(small.overhead.kube_reserved.cpu, 60);
        assert_eq!(big.overhead.kube_reserved.cpu, 480);
        assert_eq!(small.overhead.system_reserved.memory, 128 * MIB);
        assert_eq!(big.overhead.system_reserved.memory, 1024 * MIB);
        // The reservations see maxPods after podsPerCore.
        c.kubelet.pods_per_core = Some(5);
        let small = m5_large(&c);
        assert_eq!(small.capacity.pods, 10);
        assert_eq!(small.overhead.kube_reserved.memory, (11 * 10 + 255) * MIB);
    }

    #[test]
    fn a_kubelet_expression_without_a_value_for_a_type_stops_the_class() {
        let mut c = class();
        c.kubelet.kube_reserved_expr =
            BTreeMap::from([("cpu".to_string(), expr("vcpus * 100 - 300"))]);
        let err = instance_types(&catalog::embedded(), &c).unwrap_err();
        assert_eq!(err.field, "kubeReserved[cpu]");
        assert!(err.message.contains("may not be negative"), "{err}");
        assert!(
            err.to_string()
                .starts_with("spec.kubelet.kubeReserved[cpu] on "),
            "{err}"
        );
        let mut c = class();
        c.kubelet.max_pods_expr = Some(expr("100 / (vcpus - 2)"));
        let err = instance_types(&catalog::embedded(), &c).unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.message.as_str()),
            ("maxPods", "/ by zero")
        );
        c.kubelet.max_pods_expr = Some(expr("4294967296"));
        let err = instance_types(&catalog::embedded(), &c).unwrap_err();
        assert!(err.message.contains("between 0 and 2147483647"), "{err}");
        // A custom catalog type has no network facts: an expression reading them fails.
        let mut c = class();
        c.kubelet.max_pods_expr = Some(expr("default_enis * 2"));
        let custom = Arc::new(raw_m5_large().as_ref().clone().with_network(None));
        let err = instance_types(std::slice::from_ref(&custom), &c).unwrap_err();
        assert!(err.message.contains("no network facts"), "{err}");
        c.kubelet.max_pods_expr = Some(expr("vcpus * 8"));
        assert_eq!(instance_types(&[custom], &c).unwrap()[0].capacity.pods, 16);
    }

    #[test]
    fn kube_reserved_and_eviction_hard_change_allocatable_by_their_amounts() {
        let raw = raw_m5_large();
        let mut c = class();
        c.kubelet.kube_reserved = BTreeMap::from([("cpu".into(), 270)]);
        c.kubelet.system_reserved = BTreeMap::from([("memory".into(), 200 * MIB)]);
        c.kubelet.eviction_hard = vec![
            (MEMORY_AVAILABLE.into(), Threshold::Bytes(300 * MIB)),
            (NODEFS_AVAILABLE.into(), Threshold::Percent(20.0)),
        ];
        let t = m5_large(&c);
        assert_eq!(raw.allocatable().cpu - t.allocatable().cpu, 270 - 70);
        assert_eq!(
            raw.allocatable().memory - t.allocatable().memory,
            200 * MIB + (300 - 100) * MIB
        );
        // nodefs: 20% instead of 10% of the 20 GiB root volume, each as the kubelet rounds it.
        assert_eq!(
            raw.allocatable().ephemeral_storage - t.allocatable().ephemeral_storage,
            Threshold::Percent(20.0).of(20 * GIB) - Threshold::Percent(10.0).of(20 * GIB)
        );
        assert_eq!(
            raw.allocatable().ephemeral_storage - t.allocatable().ephemeral_storage,
            2 * GIB + 32
        );
    }

    #[test]
    fn eviction_soft_above_hard_holds_back_more() {
        let mut c = class();
        c.kubelet.eviction_hard = vec![(MEMORY_AVAILABLE.into(), Threshold::Bytes(100 * MIB))];
        let hard_only = m5_large(&c);
        c.kubelet.eviction_soft = vec![(MEMORY_AVAILABLE.into(), Threshold::Bytes(GIB))];
        let with_soft = m5_large(&c);
        assert_eq!(
            hard_only.allocatable().memory - with_soft.allocatable().memory,
            GIB - 100 * MIB
        );
    }

    #[test]
    fn raid0_makes_the_local_nvme_total_the_ephemeral_capacity() {
        let raw = raw_m5_large();
        let mut with_nvme = (*raw).clone();
        with_nvme
            .requirements
            .add(Requirement::single(labels::INSTANCE_LOCAL_NVME, "75"));
        let mut c = class();
        c.root_volume = Some(40 * GIB);
        c.instance_store_raid0 = true;
        let t = reshape(&with_nvme, &c).unwrap().unwrap();
        assert_eq!(t.capacity.ephemeral_storage, 75_000_000_000);
        let no_nvme = reshape(&raw, &c).unwrap().unwrap();
        assert_eq!(
            no_nvme.capacity.ephemeral_storage,
            40 * GIB,
            "root volume without disks"
        );
        c.instance_store_raid0 = false;
        assert_eq!(
            reshape(&with_nvme, &c)
                .unwrap()
                .unwrap()
                .capacity
                .ephemeral_storage,
            40 * GIB
        );
    }

    #[test]
    fn root_volume_size_is_ephemeral_capacity() {
        let mut c = class();
        c.root_volume = Some(100 * GIB);
        let t = m5_large(&c);
        assert_eq!(t.capacity.ephemeral_storage, 100 * GIB);
        // Less 1 GiB kube-reserved and the 10% nodefs threshold (float32 0.1 of 100 GiB, as
        // the kubelet computes it: 160 bytes over 10 GiB).
        assert_eq!(
            t.allocatable().ephemeral_storage,
            100 * GIB - GIB - 10 * GIB - 160
        );
    }
}
