//! Delete-first drift of a node in a full capacity reservation (with
//! [`super::Options::terminate_first_drift`]).
//!
//! A NodePool that may only launch `reserved` capacity cannot stage a replacement while every
//! reservation its template offers is full: replace-first would wait forever. The drifted
//! node's own reservation slot is what the replacement needs, so drift deletes the node first
//! and provisioning refills the freed slot. This applies only when:
//!
//! - the template allows no other capacity type its types are offered in (a fallback, even
//!   one unavailable for now, is waited for instead, as replace-first does);
//! - every reservation the template offers is out of slots (one with room takes the
//!   replacement first);
//! - the node is `reserved` capacity in one of those reservations (a node of another
//!   capacity type, or of a reservation the template no longer offers, frees nothing the
//!   replacement could use);
//! - that reservation is only full, not failing for another reason (a recent failed launch
//!   into the type's reservations in that zone: freeing a slot would not fix it).
//!
//! Static pools and ordinary drift share this rule; ordinary drift also requires that the
//! node's pods fit once the freed slot is counted (never more than that one slot).

use std::sync::Arc;

use crate::instance_type::{InstanceType, Offering};
use crate::labels;
use crate::node::ExistingNode;
use crate::nodepool::NodePool;

/// Whether drift may delete `node` of `pool` first, and if so the reservation it frees.
pub fn frees_its_slot(pool: &NodePool, node: &ExistingNode) -> Result<String, String> {
    let label = |key: &str| {
        node.requirements
            .get(key)
            .and_then(|r| r.single_value())
            .map(str::to_string)
    };
    let offered: Vec<(&InstanceType, &Offering)> = pool
        .instance_types
        .iter()
        .filter(|t| {
            pool.requirements
                .get(labels::INSTANCE_TYPE)
                .is_none_or(|r| r.allows(&t.name))
        })
        .flat_map(|t| t.offerings.iter().map(move |o| (t.as_ref(), o)))
        .filter(|(_, o)| o.allowed_by(&pool.requirements))
        .collect();
    if offered
        .iter()
        .any(|(_, o)| o.capacity_type != labels::CAPACITY_TYPE_RESERVED)
    {
        return Err(format!(
            "NodePool {} may launch capacity other than its reservations, so it replaces first",
            pool.name
        ));
    }
    let reservations = || {
        offered
            .iter()
            .filter_map(|(t, o)| Some((*t, o, o.reservation.as_ref()?)))
    };
    if reservations().any(|(_, o, r)| o.available && r.remaining > 0) {
        return Err(format!(
            "a capacity reservation of NodePool {} has room for a replacement",
            pool.name
        ));
    }
    let full = || {
        format!(
            "the capacity reservations of NodePool {} are full and this node frees no slot of them",
            pool.name
        )
    };
    if label(labels::CAPACITY_TYPE).as_deref() != Some(labels::CAPACITY_TYPE_RESERVED) {
        return Err(full());
    }
    let Some(id) = label(labels::CAPACITY_RESERVATION_ID) else {
        return Err(full());
    };
    let Some((t, o, _)) = reservations().find(|(_, _, r)| r.id == id) else {
        return Err(full());
    };
    if failed(t, &o.zone) {
        return Err(format!(
            "capacity reservation {id} is unavailable for more than being full; freeing a slot would not help"
        ));
    }
    Ok(id)
}

/// A launch into `t`'s reservations in `zone` failed lately (the catalog's unavailable
/// `reserved` offering without a reservation).
fn failed(t: &InstanceType, zone: &str) -> bool {
    t.offerings.iter().any(|o| {
        o.zone == zone
            && o.capacity_type == labels::CAPACITY_TYPE_RESERVED
            && o.reservation.is_none()
            && !o.available
    })
}

/// `pool` with one more slot in reservation `id`: the slot the drifted node gives back.
pub fn credited(pool: &NodePool, id: &str) -> NodePool {
    let mut pool = pool.clone();
    for t in &mut pool.instance_types {
        if !t
            .offerings
            .iter()
            .any(|o| o.reservation.as_ref().is_some_and(|r| r.id == id))
        {
            continue;
        }
        let t = Arc::make_mut(t);
        let zones: Vec<String> = t.offerings.iter().map(|o| o.zone.clone()).collect();
        let broken: Vec<bool> = zones.iter().map(|z| failed(t, z)).collect();
        for (o, broken) in t.offerings.iter_mut().zip(broken) {
            if let Some(r) = o.reservation.as_mut().filter(|r| r.id == id) {
                r.remaining = r.remaining.saturating_add(1);
                o.available = !broken;
            }
        }
        t.refresh_offering_requirements();
    }
    pool
}
