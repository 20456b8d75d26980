//! CSI volume attach limits, as kube-scheduler's NodeVolumeLimits plugin enforces them: a
//! node's CSINode says how many volumes each CSI driver may attach there
//! (`spec.drivers[].allocatable.count`), and a pod whose claims would take a driver past its
//! count does not fit the node.
//!
//! * A pod's volumes are its claims with the driver each resolves to ([`PodVolumes`]), made
//!   by the adapters from PVCs, PVs and StorageClasses. Volumes of no CSI driver (NFS,
//!   emptyDir, hostPath, a claim that resolves to nothing) are not listed: they count nothing.
//! * A claim counts once per node, however many of the node's pods use it.
//! * Only the claims a pod adds to a node count against it: a pod whose claims are all
//!   attached there already fits, even on a node past its count.
//! * A driver the node lists no count for is unlimited, as in Karpenter. New and in-flight
//!   NodeClaims have no CSINode yet: the EBS CSI driver ([`EBS_CSI_DRIVER`]) is held there to
//!   the count it will report for the claim's instance type
//!   ([`crate::InstanceType::ebs_attach_limit`]); other drivers are unlimited.
//!
//! Pods without volumes cost nothing: an empty [`PodVolumes`] holds no allocation, and nodes
//! without limits keep no [`Attached`] state.

use std::collections::{BTreeMap, BTreeSet};

/// The EBS CSI driver's name: the one driver whose attach limit is known per instance type
/// before a node exists.
pub const EBS_CSI_DRIVER: &str = "ebs.csi.aws.com";

/// One volume a pod attaches: the CSI driver and the claim ("namespace/name").
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AttachedVolume {
    pub driver: String,
    pub claim: String,
}

/// A pod's attached volumes, sorted by driver then claim, each once.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct PodVolumes(Vec<AttachedVolume>);

impl PodVolumes {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &AttachedVolume> {
        self.0.iter()
    }

    /// The claims of `driver` the pod attaches, each once.
    pub fn claims_of<'a>(&'a self, driver: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |a| a.driver == driver)
            .map(|a| a.claim.as_str())
    }
}

impl FromIterator<AttachedVolume> for PodVolumes {
    fn from_iter<I: IntoIterator<Item = AttachedVolume>>(iter: I) -> Self {
        let mut v: Vec<AttachedVolume> = iter.into_iter().collect();
        v.sort();
        v.dedup();
        PodVolumes(v)
    }
}

/// Per CSI driver, how many volumes a node may attach (its CSINode's counts).
pub type VolumeLimits = BTreeMap<String, u32>;

/// What a node with limits has attached, for its limited drivers only.
#[derive(Debug, Clone, Default)]
pub struct Attached {
    by_driver: BTreeMap<String, BTreeSet<String>>,
}

/// A driver a pod would take past a node's count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitExceeded {
    pub driver: String,
    pub attached: usize,
    pub adding: usize,
    pub limit: u32,
}

impl std::fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CSI driver {} has {} of {} volumes attached and the pod adds {}",
            self.driver, self.attached, self.limit, self.adding
        )
    }
}

impl Attached {
    /// Checks `pod` against `limits`, given what is attached already.
    pub fn fits(&self, limits: &VolumeLimits, pod: &PodVolumes) -> Result<(), LimitExceeded> {
        let mut i = 0;
        let v = &pod.0;
        // Sorted by driver: each run of one driver is counted once.
        while i < v.len() {
            let driver = &v[i].driver;
            let mut end = i;
            while end < v.len() && v[end].driver == *driver {
                end += 1;
            }
            if let Some(&limit) = limits.get(driver) {
                let on_node = self.by_driver.get(driver);
                let adding = v[i..end]
                    .iter()
                    .filter(|a| !on_node.is_some_and(|s| s.contains(&a.claim)))
                    .count();
                let attached = on_node.map_or(0, BTreeSet::len);
                let cap = usize::try_from(limit).unwrap_or(usize::MAX);
                if adding > 0 && attached.saturating_add(adding) > cap {
                    return Err(LimitExceeded {
                        driver: driver.clone(),
                        attached,
                        adding,
                        limit,
                    });
                }
            }
            i = end;
        }
        Ok(())
    }

    /// Records `pod`'s volumes of the limited drivers as attached.
    pub fn add(&mut self, limits: &VolumeLimits, pod: &PodVolumes) {
        for a in pod.iter() {
            if limits.contains_key(&a.driver) {
                let set = match self.by_driver.get_mut(&a.driver) {
                    Some(s) => s,
                    None => self.by_driver.entry(a.driver.clone()).or_default(),
                };
                if !set.contains(&a.claim) {
                    set.insert(a.claim.clone());
                }
            }
        }
    }

    /// How many volumes of `driver` are attached.
    pub fn count(&self, driver: &str) -> usize {
        self.by_driver.get(driver).map_or(0, BTreeSet::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vols(v: &[(&str, &str)]) -> PodVolumes {
        v.iter()
            .map(|(d, c)| AttachedVolume {
                driver: d.to_string(),
                claim: c.to_string(),
            })
            .collect()
    }

    fn limits(l: &[(&str, u32)]) -> VolumeLimits {
        l.iter().map(|(d, n)| (d.to_string(), *n)).collect()
    }

    #[test]
    fn a_driver_at_its_count_takes_no_new_volume() {
        let lim = limits(&[("ebs.csi.aws.com", 2)]);
        let mut on = Attached::default();
        on.add(
            &lim,
            &vols(&[("ebs.csi.aws.com", "a/1"), ("ebs.csi.aws.com", "a/2")]),
        );
        let err = on
            .fits(&lim, &vols(&[("ebs.csi.aws.com", "a/3")]))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "CSI driver ebs.csi.aws.com has 2 of 2 volumes attached and the pod adds 1"
        );
    }

    #[test]
    fn a_claim_already_attached_counts_once() {
        let lim = limits(&[("ebs.csi.aws.com", 1)]);
        let mut on = Attached::default();
        on.add(&lim, &vols(&[("ebs.csi.aws.com", "a/shared")]));
        let again = vols(&[("ebs.csi.aws.com", "a/shared")]);
        assert!(on.fits(&lim, &again).is_ok());
        on.add(&lim, &again);
        assert_eq!(on.count("ebs.csi.aws.com"), 1);
    }

    #[test]
    fn the_same_claim_twice_in_one_pod_is_one_volume() {
        let lim = limits(&[("d", 1)]);
        let pod = vols(&[("d", "a/x"), ("d", "a/x")]);
        assert_eq!(pod.len(), 1);
        assert!(Attached::default().fits(&lim, &pod).is_ok());
    }

    #[test]
    fn drivers_without_a_count_are_unlimited_and_not_tracked() {
        let lim = limits(&[("limited", 0)]);
        let mut on = Attached::default();
        let pod = vols(&[("other", "a/1"), ("other", "a/2")]);
        assert!(on.fits(&lim, &pod).is_ok());
        on.add(&lim, &pod);
        assert_eq!(on.count("other"), 0);
        assert!(on.fits(&lim, &vols(&[("limited", "a/3")])).is_err());
    }

    #[test]
    fn each_driver_is_held_to_its_own_count() {
        let lim = limits(&[("a", 1), ("b", 3)]);
        let pod = vols(&[("b", "n/1"), ("a", "n/2"), ("b", "n/3")]);
        assert!(Attached::default().fits(&lim, &pod).is_ok());
        let two_a = vols(&[("a", "n/1"), ("a", "n/2")]);
        let err = Attached::default().fits(&lim, &two_a).unwrap_err();
        assert_eq!((err.driver.as_str(), err.adding), ("a", 2));
    }

    #[test]
    fn a_node_past_its_count_still_takes_pods_adding_nothing_new() {
        let lim = limits(&[("d", 1)]);
        let mut on = Attached::default();
        on.add(&lim, &vols(&[("d", "n/1"), ("d", "n/2")]));
        assert!(on.fits(&lim, &vols(&[("d", "n/2")])).is_ok());
        assert!(on.fits(&lim, &PodVolumes::default()).is_ok());
    }
}
