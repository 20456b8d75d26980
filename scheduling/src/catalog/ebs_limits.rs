//! How many EBS volumes the EBS CSI driver will let a node of a type attach, worked out before
//! the node exists, so a new NodeClaim is not planned with more volumes than its node can take
//! (kube-scheduler would leave the rest pending once the driver's CSINode count is in).
//!
//! Facts, from the EC2 User Guide page "Amazon EBS volume limits for Amazon EC2 instances",
//! the instance-store table of the EC2 Instance Types guide, and the arithmetic the EBS CSI
//! driver applies when it reports a node's `allocatable.count`:
//!
//! * **Shared limit (most Nitro types):** 28 attachment slots, shared by EBS volumes
//!   (the root volume included), network interfaces and NVMe instance-store volumes. AWS's
//!   published per-type maximum (`EbsInfo.MaximumEbsAttachments`) also takes one slot per GPU
//!   or Neuron device (g4dn.xlarge: 28 − 1 ENI − 1 disk − 1 GPU = 25).
//! * **Dedicated limit** (m7i, m7a, c7i, c7a, r7i, r7a, r7iz): EBS volumes only, by size:
//!   32 up to 12xlarge, 48 at 16xlarge, 64 at 24xlarge, 88 at 32xlarge, 128 at 48xlarge,
//!   31 on metal-16xl/24xl (the driver's figure; AWS lists 39), 79 on metal-32xl/48xl.
//! * **Xen types** (p3 here): 39 volumes, not shared with network interfaces.
//! * **Bare metal (shared):** the driver does not take the primary interface off.
//! * **g5.48xlarge:** AWS caps it at 9 EBS attachments.
//! * **g6:** AWS now lists a dedicated limit, but EBS CSI driver releases that predate that
//!   report the shared figure (without taking the GPUs off); Adze uses that lower figure.
//!
//! The count the driver reports is that limit less what is attached at boot: the root volume
//! always, and on shared Nitro types the primary network interface and every NVMe
//! instance-store disk. Adze takes off GPUs and Neuron devices too, as AWS's published
//! maximum does (some driver versions do not: a count lower than the driver's costs at most
//! an extra node, a higher one leaves pods pending). The VPC CNI attaches more interfaces as
//! pods arrive; the driver reads the count once at start, so those are not taken off here
//! either. A node class whose block device mappings add data volumes is not accounted for.
//!
//! Only the EBS CSI driver ([`crate::volumes::EBS_CSI_DRIVER`]) is limited: other drivers
//! (EFS, FSx, ...) attach nothing to the instance.

use super::ec2_data::{self, Ec2Type};

/// Attachment slots Nitro types share among EBS volumes, interfaces and instance store.
pub const NITRO_SHARED_SLOTS: u32 = 28;
/// EBS volumes a Xen type attaches (the driver's figure).
pub const XEN_VOLUMES: u32 = 39;

/// The families with a dedicated EBS limit that depends only on size.
const DEDICATED_FAMILIES: &[&str] = &["m7i", "m7a", "c7i", "c7a", "r7i", "r7a", "r7iz"];

/// Families with a dedicated limit the EBS CSI driver may not know: counted as shared, their
/// accelerators not taken off (the lower of the two figures).
const DEDICATED_UNKNOWN_TO_DRIVER: &[&str] = &["g6"];

/// Types AWS caps below the shared slots: (type, EBS attachments including the root volume).
const CAPPED: &[(&str, u32)] = &[("g5.48xlarge", 9)];

/// NVMe instance-store disks of the catalog's types that have more than one
/// (`InstanceStorageInfo.Disks[].Count`); every other type with instance store has one.
#[rustfmt::skip]
const MULTI_DISK: &[(&str, u32)] = &[
    ("c5d.12xlarge", 2), ("c5d.18xlarge", 2), ("c5d.24xlarge", 4), ("c5d.metal", 4),
    ("m5d.4xlarge", 2), ("m5d.8xlarge", 2), ("m5d.12xlarge", 2), ("m5d.16xlarge", 4),
    ("m5d.24xlarge", 4), ("m5d.metal", 4),
    ("r5d.4xlarge", 2), ("r5d.8xlarge", 2), ("r5d.12xlarge", 2), ("r5d.16xlarge", 4),
    ("r5d.24xlarge", 4), ("r5d.metal", 4),
    ("c6id.12xlarge", 2), ("c6id.16xlarge", 2), ("c6id.24xlarge", 4), ("c6id.32xlarge", 4),
    ("c6id.metal", 4),
    ("m6id.12xlarge", 2), ("m6id.16xlarge", 2), ("m6id.24xlarge", 4), ("m6id.32xlarge", 4),
    ("m6id.metal", 4),
    ("r6id.12xlarge", 2), ("r6id.16xlarge", 2), ("r6id.24xlarge", 4), ("r6id.32xlarge", 4),
    ("r6id.metal", 4),
    ("c6gd.12xlarge", 2), ("c6gd.16xlarge", 2), ("c6gd.metal", 2),
    ("m6gd.12xlarge", 2), ("m6gd.16xlarge", 2), ("m6gd.metal", 2),
    ("r6gd.12xlarge", 2), ("r6gd.16xlarge", 2), ("r6gd.metal", 2),
    ("c7gd.12xlarge", 2), ("c7gd.16xlarge", 2), ("c7gd.metal", 2),
    ("m7gd.12xlarge", 2), ("m7gd.16xlarge", 2), ("m7gd.metal", 2),
    ("r7gd.12xlarge", 2), ("r7gd.16xlarge", 2), ("r7gd.metal", 2),
    ("i4i.8xlarge", 2), ("i4i.12xlarge", 3), ("i4i.16xlarge", 4), ("i4i.24xlarge", 6),
    ("i4i.32xlarge", 8), ("i4i.metal", 8),
    ("g5.48xlarge", 2),
    ("g6.8xlarge", 2), ("g6.12xlarge", 4), ("g6.16xlarge", 2), ("g6.24xlarge", 4),
    ("g6.48xlarge", 8),
];

/// What the rule needs to know about a type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttachFacts<'a> {
    pub name: &'a str,
    /// "nitro", "xen", or "" for bare metal (as `DescribeInstanceTypes` reports it).
    pub hypervisor: &'a str,
    /// NVMe instance-store disks.
    pub nvme_disks: u32,
    /// GPUs and Neuron devices: each takes a shared slot.
    pub accelerators: u32,
}

/// The dedicated EBS limit of `name`, if its family has one.
fn dedicated(name: &str) -> Option<u32> {
    if !DEDICATED_FAMILIES.contains(&ec2_data::family(name)) {
        return None;
    }
    Some(match ec2_data::size(name) {
        "16xlarge" => 48,
        "24xlarge" => 64,
        "32xlarge" => 88,
        "48xlarge" => 128,
        "metal-16xl" | "metal-24xl" => 31,
        "metal-32xl" | "metal-48xl" => 79,
        _ => 32,
    })
}

/// The `allocatable.count` the EBS CSI driver reports on a fresh node of the type: EBS volumes
/// pods may attach, the root volume already taken off. Never below 1 (the driver's floor).
pub fn csi_attach_count(f: &AttachFacts<'_>) -> u32 {
    const ROOT: u32 = 1;
    let limit = if let Some(d) = dedicated(f.name) {
        d
    } else if f.hypervisor == "xen" {
        XEN_VOLUMES
    } else if let Some(&(_, cap)) = CAPPED.iter().find(|(n, _)| *n == f.name) {
        // The cap already leaves out the interfaces and accelerators.
        cap.saturating_sub(f.nvme_disks)
    } else {
        let primary_eni = u32::from(!ec2_data::is_metal(f.name));
        let accelerators = if DEDICATED_UNKNOWN_TO_DRIVER.contains(&ec2_data::family(f.name)) {
            0
        } else {
            f.accelerators
        };
        NITRO_SHARED_SLOTS
            .saturating_sub(primary_eni)
            .saturating_sub(f.nvme_disks)
            .saturating_sub(accelerators)
    };
    limit.saturating_sub(ROOT).max(1)
}

/// NVMe instance-store disks of a catalog row.
pub fn nvme_disks(t: &Ec2Type) -> u32 {
    if t.local_nvme_gb == 0 {
        return 0;
    }
    MULTI_DISK
        .iter()
        .find(|(n, _)| *n == t.name)
        .map_or(1, |(_, d)| *d)
}

/// [`csi_attach_count`] for a row of the embedded catalog.
pub fn for_ec2_type(t: &Ec2Type) -> u32 {
    let acc = ec2_data::accelerators(t);
    let accelerators = acc.gpu.as_ref().map_or(0, |g| g.0) + acc.neuron.as_ref().map_or(0, |n| n.0);
    csi_attach_count(&AttachFacts {
        name: t.name,
        hypervisor: t.hypervisor,
        nvme_disks: nvme_disks(t),
        accelerators,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(name: &str) -> u32 {
        for_ec2_type(ec2_data::find(name).expect(name))
    }

    #[test]
    fn an_ebs_only_nitro_type_has_28_slots_less_the_primary_interface_and_the_root_volume() {
        assert_eq!(count("m5.large"), 26);
        assert_eq!(count("c6g.16xlarge"), 26);
    }

    #[test]
    fn instance_store_disks_take_shared_slots() {
        assert_eq!(count("c5d.large"), 25);
        assert_eq!(count("c5d.24xlarge"), 22);
        assert_eq!(count("i4i.32xlarge"), 18);
        assert_eq!(count("i4i.12xlarge"), 23);
    }

    #[test]
    fn gpus_and_neuron_devices_take_shared_slots() {
        assert_eq!(count("g4dn.xlarge"), 24);
        assert_eq!(count("g5.12xlarge"), 21);
        assert_eq!(count("inf2.xlarge"), 25);
        assert_eq!(count("trn1.2xlarge"), 24);
    }

    #[test]
    fn dedicated_limits_follow_the_size() {
        assert_eq!(count("m7i.large"), 31);
        assert_eq!(count("c7i.16xlarge"), 47);
        assert_eq!(count("r7i.48xlarge"), 127);
        assert_eq!(count("m7i.metal-24xl"), 30);
    }

    #[test]
    fn g6_gets_the_shared_figure_older_drivers_report() {
        assert_eq!(count("g6.xlarge"), 25);
        assert_eq!(count("g6.48xlarge"), 18);
    }

    #[test]
    fn xen_metal_and_capped_types() {
        assert_eq!(count("p3.16xlarge"), 38);
        assert_eq!(count("c5.metal"), 27);
        assert_eq!(count("c5d.metal"), 23);
        assert_eq!(count("g5.48xlarge"), 6);
    }

    #[test]
    fn the_count_never_drops_below_one() {
        let f = AttachFacts {
            name: "x9.huge",
            hypervisor: "nitro",
            nvme_disks: 30,
            accelerators: 8,
        };
        assert_eq!(csi_attach_count(&f), 1);
    }

    #[test]
    fn every_multi_disk_row_names_a_catalog_type_with_instance_store() {
        for (name, disks) in MULTI_DISK {
            let t = ec2_data::find(name).unwrap_or_else(|| panic!("{name} not in the catalog"));
            assert!(t.local_nvme_gb > 0 && *disks > 1, "{name}");
        }
    }

    #[test]
    fn every_catalog_type_gets_a_count_and_the_instance_types_carry_it() {
        for t in ec2_data::TYPES {
            let n = for_ec2_type(t);
            assert!((1..=127).contains(&n), "{}: {n}", t.name);
            assert_eq!(
                super::super::ec2_instance_type(t).ebs_attach_limit,
                Some(n),
                "{}",
                t.name
            );
        }
    }
}
