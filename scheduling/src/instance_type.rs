//! Instance types: what a new node could be, where, at what price.

use std::collections::BTreeMap;

use crate::labels;
use crate::overhead::Overhead;
use crate::requirements::{Requirement, Requirements};
use crate::resources::Resources;

/// One place and purchase option for an instance type.
#[derive(Debug, Clone, PartialEq)]
pub struct Offering {
    pub zone: String,
    /// The zone's ID (`use1-az1`) when the cloud reported it; a node launched here carries it
    /// as [`labels::ZONE_ID`].
    pub zone_id: Option<String>,
    pub capacity_type: String,
    /// USD per hour.
    pub price: f64,
    /// False while the cloud reports no capacity here (or a launch just failed here).
    pub available: bool,
    /// Set on `reserved` offerings: the capacity reservation a launch here goes into.
    pub reservation: Option<Reservation>,
}

/// A capacity reservation (an ODCR or a Capacity Block) behind a `reserved` offering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    pub id: String,
    /// [`labels::RESERVATION_TYPE_DEFAULT`] or [`labels::RESERVATION_TYPE_CAPACITY_BLOCK`].
    pub kind: String,
    /// Instances that can still be launched into it; placement never plans more claims into
    /// it than this, less the in-flight claims already headed there.
    pub remaining: u32,
    /// EC2 may reclaim its capacity with a two-minute warning (an interruptible reservation);
    /// [`labels::CAPACITY_RESERVATION_INTERRUPTIBLE`] on its nodes.
    pub interruptible: bool,
}

impl Reservation {
    /// The value of [`labels::CAPACITY_RESERVATION_INTERRUPTIBLE`] on its nodes.
    pub fn interruptible_label(&self) -> &'static str {
        labels::interruptible_value(self.interruptible)
    }
}

fn reservation_id(o: &Offering) -> Option<&str> {
    o.reservation.as_ref().map(|r| r.id.as_str())
}

/// What a reserved slot is priced at: already paid for, so below every on-demand and spot
/// offering, yet still ordered by the type's on-demand price so a small reserved type is
/// preferred to a big one when both fit.
pub fn reserved_price(on_demand: f64) -> f64 {
    on_demand / 1_000_000.0
}

impl Offering {
    /// Whether `reqs` allow this offering's zone, zone ID and capacity type (availability is
    /// not checked). An offering without a zone ID meets a zone-ID requirement only as an
    /// absent label would (`NotIn`, `DoesNotExist`).
    pub fn allowed_by(&self, reqs: &Requirements) -> bool {
        OfferingReqs::of(reqs).allow(self)
    }
}

/// The requirements an offering is checked against, looked up once for all of a type's
/// offerings (placement checks hundreds of types per claim).
struct OfferingReqs<'r> {
    zone: Option<&'r Requirement>,
    capacity_type: Option<&'r Requirement>,
    zone_id: Option<&'r Requirement>,
    reservation_id: Option<&'r Requirement>,
    reservation_type: Option<&'r Requirement>,
    reservation_interruptible: Option<&'r Requirement>,
}

impl<'r> OfferingReqs<'r> {
    fn of(reqs: &'r Requirements) -> Self {
        OfferingReqs {
            zone: reqs.get(labels::ZONE),
            capacity_type: reqs.get(labels::CAPACITY_TYPE),
            zone_id: reqs.get(labels::ZONE_ID),
            reservation_id: reqs.get(labels::CAPACITY_RESERVATION_ID),
            reservation_type: reqs.get(labels::CAPACITY_RESERVATION_TYPE),
            reservation_interruptible: reqs.get(labels::CAPACITY_RESERVATION_INTERRUPTIBLE),
        }
    }

    fn allow(&self, o: &Offering) -> bool {
        self.zone.is_none_or(|r| r.allows(&o.zone))
            && self
                .capacity_type
                .is_none_or(|r| r.allows(&o.capacity_type))
            && self.zone_id.is_none_or(|r| match &o.zone_id {
                Some(id) => r.allows(id),
                None => r.allows_absent(),
            })
            && self
                .reservation_id
                .is_none_or(|r| r.allows_label(o.reservation.as_ref().map(|res| res.id.as_str())))
            && self
                .reservation_type
                .is_none_or(|r| r.allows_label(o.reservation.as_ref().map(|res| res.kind.as_str())))
            && self.reservation_interruptible.is_none_or(|r| {
                r.allows_label(o.reservation.as_ref().map(Reservation::interruptible_label))
            })
    }
}

/// A Windows Server (License Included) node of a type, as a live cloud describes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowsFacts {
    /// USD per hour above the type's Linux price: the Windows Server licence.
    pub licence_usd: f64,
    /// IPv4 addresses of the primary network interface (Windows pods take theirs from it).
    pub primary_eni_ipv4: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct InstanceType {
    pub name: String,
    /// The labels a node of this type carries, plus `zone` and `capacity-type` as the sets
    /// its available offerings span.
    pub requirements: Requirements,
    pub capacity: Resources,
    pub overhead: Overhead,
    pub offerings: Vec<Offering>,
    /// What a Windows node of this type needs beyond this Linux view, when the cloud
    /// published it (the live Price List's Windows price). None: the embedded tables apply
    /// ([`crate::catalog::ec2_windows`]).
    pub windows: Option<WindowsFacts>,
    /// How many EBS CSI volumes a node of this type can attach: the `allocatable.count` the
    /// EBS CSI driver ([`crate::volumes::EBS_CSI_DRIVER`]) will report in its CSINode, worked
    /// out before launch ([`crate::catalog::ebs_limits`]), so a new claim is not planned with
    /// more volumes than its node can attach. None: no limit known (a custom catalog).
    pub ebs_attach_limit: Option<u32>,
    /// Whether the type can run AWS Nitro Enclaves, as the cloud reported it
    /// (DescribeInstanceTypes' `NitroEnclavesSupport`). None: not reported; the embedded rule
    /// ([`crate::node_class::enclaves_fit`]) decides.
    pub nitro_enclaves: Option<bool>,
    /// The primary network card's interfaces and addresses, which kubelet expressions read
    /// (`default_enis`, `ips_per_eni`). None: not known (a custom catalog).
    pub network: Option<NetworkFacts>,
    allocatable: Resources,
}

/// A type's primary network card, as EC2 describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetworkFacts {
    pub default_enis: u32,
    pub ipv4_per_eni: u32,
}

impl InstanceType {
    /// `labels` are the type's own labels (arch, os, family, ...); the instance-type, zone
    /// and capacity-type labels are derived here from the name and offerings.
    pub fn new(
        name: &str,
        capacity: Resources,
        overhead: Overhead,
        labels_: BTreeMap<String, String>,
        offerings: Vec<Offering>,
    ) -> InstanceType {
        let mut requirements = Requirements::from_labels(&labels_);
        requirements.add(Requirement::single(labels::INSTANCE_TYPE, name));
        let mut it = InstanceType {
            name: name.to_string(),
            requirements,
            allocatable: capacity.minus(&overhead.total()),
            capacity,
            overhead,
            offerings,
            windows: None,
            ebs_attach_limit: None,
            nitro_enclaves: None,
            network: None,
        };
        it.refresh_offering_requirements();
        it
    }

    /// This type with the Windows facts the cloud publishes for it (see
    /// [`InstanceType::windows`]).
    pub fn with_windows(mut self, facts: WindowsFacts) -> Self {
        self.windows = Some(facts);
        self
    }

    /// This type with a known EBS attach limit (see [`InstanceType::ebs_attach_limit`]).
    pub fn with_ebs_attach_limit(mut self, limit: Option<u32>) -> Self {
        self.ebs_attach_limit = limit;
        self
    }

    /// This type with the cloud's answer to whether it runs Nitro Enclaves (see
    /// [`InstanceType::nitro_enclaves`]).
    pub fn with_nitro_enclaves(mut self, supported: Option<bool>) -> Self {
        self.nitro_enclaves = supported;
        self
    }

    /// This type with its network facts (see [`InstanceType::network`]).
    pub fn with_network(mut self, network: Option<NetworkFacts>) -> Self {
        self.network = network;
        self
    }

    /// This type with another shape and offerings (a node class's view of it): the labels stay,
    /// allocatable and the zone and capacity-type sets are derived again.
    pub fn reshaped(
        &self,
        capacity: Resources,
        overhead: Overhead,
        offerings: Vec<Offering>,
    ) -> Self {
        let mut it = InstanceType {
            name: self.name.clone(),
            requirements: self.requirements.clone(),
            allocatable: capacity.minus(&overhead.total()),
            capacity,
            overhead,
            offerings,
            windows: self.windows,
            ebs_attach_limit: self.ebs_attach_limit,
            nitro_enclaves: self.nitro_enclaves,
            network: self.network,
        };
        it.refresh_offering_requirements();
        it
    }

    /// This type with some labels set to other values (a Windows node class's view of a
    /// catalog type that describes the Linux node); shape and offerings stay.
    pub fn relabelled(&self, labels_: &[(&str, &str)]) -> Self {
        let mut it = self.clone();
        for (key, value) in labels_ {
            it.requirements.remove(key);
            it.requirements.add(Requirement::single(key, value));
        }
        it
    }

    /// Re-derives the zone, zone-ID and capacity-type sets after offerings change
    /// availability. Offerings without a zone ID add none (a catalog that knows no IDs gives
    /// its types no zone-ID label).
    pub fn refresh_offering_requirements(&mut self) {
        let avail = self.offerings.iter().filter(|o| o.available);
        let zones: Vec<String> = avail.clone().map(|o| o.zone.clone()).collect();
        let zone_ids: Vec<String> = avail.clone().filter_map(|o| o.zone_id.clone()).collect();
        let cts: Vec<String> = avail.map(|o| o.capacity_type.clone()).collect();
        self.requirements.remove(labels::ZONE);
        self.requirements.remove(labels::ZONE_ID);
        self.requirements.remove(labels::CAPACITY_TYPE);
        self.requirements
            .add(Requirement::any_of(labels::ZONE, zones));
        if self.offerings.iter().any(|o| o.zone_id.is_some()) {
            self.requirements
                .add(Requirement::any_of(labels::ZONE_ID, zone_ids));
        }
        self.requirements
            .add(Requirement::any_of(labels::CAPACITY_TYPE, cts));
    }

    pub fn allocatable(&self) -> &Resources {
        &self.allocatable
    }

    /// The cheapest available offering whose zone, zone ID and capacity type `reqs` allow.
    pub fn cheapest_offering(&self, reqs: &Requirements) -> Option<&Offering> {
        self.cheapest_offering_where(reqs, |_| true)
    }

    /// [`Self::cheapest_offering`] among the offerings `usable` keeps (placement leaves out
    /// reservations it has already planned full).
    pub fn cheapest_offering_where(
        &self,
        reqs: &Requirements,
        usable: impl Fn(&Offering) -> bool,
    ) -> Option<&Offering> {
        let allowed = OfferingReqs::of(reqs);
        self.offerings
            .iter()
            .filter(|o| o.available && allowed.allow(o) && usable(o))
            .min_by(|a, b| {
                a.price
                    .total_cmp(&b.price)
                    .then_with(|| a.zone.cmp(&b.zone))
                    .then_with(|| a.capacity_type.cmp(&b.capacity_type))
                    .then_with(|| reservation_id(a).cmp(&reservation_id(b)))
            })
    }

    /// Whether some available offering's zone, zone ID and capacity type `reqs` allow
    /// ([`Self::cheapest_offering`] without comparing prices).
    pub fn any_offering(&self, reqs: &Requirements) -> bool {
        let allowed = OfferingReqs::of(reqs);
        self.offerings
            .iter()
            .any(|o| o.available && allowed.allow(o))
    }

    /// The label value this type gives `key`, if it is single-valued.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.requirements.get(key).and_then(|r| r.single_value())
    }
}
