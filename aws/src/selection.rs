//! Which pools (instance type × subnet × capacity type) a NodeClaim may launch into, and what a
//! CreateFleet error says about them. Pure: claim, catalog and subnets in, candidates out.

use std::collections::BTreeMap;
use std::sync::Arc;

use adze_api::NodeClaim;
use adze_api::ec2nodeclass::Subnet;
use adze_scheduling::instance_type::Reservation;
use adze_scheduling::{InstanceType, Operator, Requirement, Requirements, Resources, labels};

/// One launchable pool.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub instance_type: Arc<InstanceType>,
    pub subnet_id: String,
    pub zone: String,
    /// The subnet's zone ID, when DescribeSubnets reported it.
    pub zone_id: Option<String>,
    pub capacity_type: String,
    pub price: f64,
    /// The reservation a `reserved` candidate launches into.
    pub reservation: Option<Reservation>,
}

/// The claim's requirements in the scheduler's form; bad entries are errors naming the field.
pub fn claim_requirements(claim: &NodeClaim) -> Result<Requirements, String> {
    let mut reqs = Requirements::new();
    for (i, r) in claim.spec.requirements.iter().enumerate() {
        let op = Operator::parse(r.operator.as_str())
            .ok_or_else(|| format!("spec.requirements[{i}].operator: unknown {:?}", r.operator))?;
        // minValues travels with the requirement: a retry or a truncated override list must
        // still offer the fleet that many distinct values.
        let req = Requirement::new(&r.key, op, &r.values)
            .map_err(|e| format!("spec.requirements[{i}]: {e}"))?
            .with_min_values(r.min_values);
        reqs.add(req);
    }
    Ok(reqs)
}

/// The claim's resource requests.
pub fn claim_requests(claim: &NodeClaim) -> Result<Resources, String> {
    Resources::from_quantities(
        claim
            .spec
            .resources
            .requests
            .iter()
            .map(|(k, v)| (k.as_str(), v.0.as_str())),
    )
    .map_err(|e| format!("spec.resources.requests: {e}"))
}

/// Every available pool the claim allows, cheapest first, restricted to one capacity type:
/// reserved when the claim allows a reservation with a slot (and then one reservation type,
/// as CreateFleet launches into ODCRs or Capacity Blocks, not both), else spot when the claim
/// allows it and some spot pool qualifies, else on-demand.
pub fn candidates(
    reqs: &Requirements,
    requests: &Resources,
    catalog: &[Arc<InstanceType>],
    subnets: &[Subnet],
) -> Vec<Candidate> {
    let zone_req = reqs.get(labels::ZONE);
    let zone_id_req = reqs.get(labels::ZONE_ID);
    let ct_req = reqs.get(labels::CAPACITY_TYPE);
    let rid_req = reqs.get(labels::CAPACITY_RESERVATION_ID);
    let rtype_req = reqs.get(labels::CAPACITY_RESERVATION_TYPE);
    let rint_req = reqs.get(labels::CAPACITY_RESERVATION_INTERRUPTIBLE);
    let mut out = Vec::new();
    for t in catalog {
        let type_ok = reqs.iter().all(|r| {
            if labels::OFFERING_KEYS.contains(&r.key.as_str()) {
                return true;
            }
            match t.requirements.get(&r.key) {
                Some(tr) => tr.compatible(r),
                // Labels the type does not define (nodepool, custom) come from the claim.
                None => true,
            }
        });
        if !type_ok || !requests.fits_in(t.allocatable()) {
            continue;
        }
        for o in t.offerings.iter().filter(|o| o.available) {
            let res = o.reservation.as_ref();
            if zone_req.is_some_and(|z| !z.allows(&o.zone))
                || ct_req.is_some_and(|c| !c.allows(&o.capacity_type))
                || rid_req.is_some_and(|r| !r.allows_label(res.map(|r| r.id.as_str())))
                || rtype_req.is_some_and(|r| !r.allows_label(res.map(|r| r.kind.as_str())))
                || rint_req.is_some_and(|r| !r.allows_label(res.map(|r| r.interruptible_label())))
                || res.is_some_and(|r| r.remaining == 0)
            {
                continue;
            }
            // The zone ID is the subnet's own (DescribeSubnets' AvailabilityZoneId).
            let id_ok =
                |s: &&Subnet| zone_id_req.is_none_or(|r| r.allows_label(s.zone_id.as_deref()));
            for s in subnets.iter().filter(|s| s.zone == o.zone).filter(id_ok) {
                out.push(Candidate {
                    instance_type: t.clone(),
                    subnet_id: s.id.clone(),
                    zone: o.zone.clone(),
                    zone_id: s.zone_id.clone(),
                    capacity_type: o.capacity_type.clone(),
                    price: o.price,
                    reservation: o.reservation.clone(),
                });
            }
        }
    }
    out.sort_by(|a, b| {
        a.price
            .total_cmp(&b.price)
            .then_with(|| a.instance_type.name.cmp(&b.instance_type.name))
            .then_with(|| a.subnet_id.cmp(&b.subnet_id))
    });
    let has = |ct: &str| out.iter().any(|c| c.capacity_type == ct);
    let chosen = if has(labels::CAPACITY_TYPE_RESERVED) {
        labels::CAPACITY_TYPE_RESERVED
    } else if has(labels::CAPACITY_TYPE_SPOT) {
        labels::CAPACITY_TYPE_SPOT
    } else {
        labels::CAPACITY_TYPE_ON_DEMAND
    };
    out.retain(|c| c.capacity_type == chosen);
    // The cheapest candidate's reservation type decides; the others go.
    let kind = out
        .first()
        .and_then(|c| c.reservation.as_ref())
        .map(|r| r.kind.clone());
    out.retain(|c| c.reservation.as_ref().map(|r| &r.kind) == kind.as_ref());
    out
}

/// The value a candidate gives `key`: its zone and capacity type are its own, the rest are
/// its instance type's labels.
fn value_of<'a>(c: &'a Candidate, key: &str) -> Option<&'a str> {
    match key {
        labels::ZONE => Some(&c.zone),
        labels::ZONE_ID => c.zone_id.as_deref(),
        labels::CAPACITY_TYPE => Some(&c.capacity_type),
        labels::CAPACITY_RESERVATION_ID => c.reservation.as_ref().map(|r| r.id.as_str()),
        labels::CAPACITY_RESERVATION_TYPE => c.reservation.as_ref().map(|r| r.kind.as_str()),
        labels::CAPACITY_RESERVATION_INTERRUPTIBLE => {
            c.reservation.as_ref().map(|r| r.interruptible_label())
        }
        _ => c.instance_type.label(key),
    }
}

/// At most `max` of `cands` (cheapest first) for one CreateFleet, keeping for every requirement
/// with `minValues` that many distinct values among them, cheapest first. Errors, naming the
/// requirement, when the candidates left cannot meet a `minValues` at all (capacity errors
/// ruled the others out): launching fewer would break the diversity the NodePool asked for.
pub fn pick_overrides(
    reqs: &Requirements,
    cands: &[Candidate],
    max: usize,
) -> Result<Vec<Candidate>, String> {
    let mins: Vec<(&str, usize)> = reqs
        .iter()
        .filter_map(|r| Some((r.key.as_str(), r.min_values? as usize)))
        .collect();
    for (key, min) in &mins {
        let distinct: std::collections::BTreeSet<&str> =
            cands.iter().filter_map(|c| value_of(c, key)).collect();
        if distinct.len() < *min {
            return Err(format!(
                "requirement {key} has minValues {min}, but only {} distinct values are launchable ({})",
                distinct.len(),
                distinct.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    if cands.len() <= max {
        return Ok(cands.to_vec());
    }
    let mut chosen = vec![false; cands.len()];
    for (key, min) in &mins {
        let mut seen: std::collections::BTreeSet<&str> = cands
            .iter()
            .zip(&chosen)
            .filter(|(_, c)| **c)
            .filter_map(|(c, _)| value_of(c, key))
            .collect();
        for (i, c) in cands.iter().enumerate() {
            if seen.len() >= *min {
                break;
            }
            if let Some(v) = value_of(c, key).filter(|v| !seen.contains(v)) {
                seen.insert(v);
                chosen[i] = true;
            }
        }
    }
    let mut room = max.saturating_sub(chosen.iter().filter(|c| **c).count());
    for c in chosen.iter_mut().filter(|c| !**c) {
        if room == 0 {
            break;
        }
        *c = true;
        room -= 1;
    }
    Ok(cands
        .iter()
        .zip(chosen)
        .filter(|(_, c)| *c)
        .map(|(c, _)| c.clone())
        .collect())
}

/// Fleet error codes that mean "this pool cannot be had now; try others". Quotas (vCPU, spot
/// instance count) count: the same request would fail again until they are raised, so the
/// pools are kept out of planning like an exhausted pool.
pub fn is_capacity_error(code: &str) -> bool {
    matches!(
        code,
        "InsufficientInstanceCapacity"
            // A targeted capacity reservation with no slot left (or no longer active).
            | "ReservationCapacityExceeded"
            | "InsufficientCapacity"
            | "VcpuLimitExceeded"
            | "InstanceLimitExceeded"
            | "MaxSpotInstanceCountExceeded"
            | "UnfulfillableCapacity"
            | "SpotMaxPriceTooLow"
            | "Unsupported"
            | "InsufficientFreeAddressesInSubnet"
    ) || code.starts_with("Unsupported")
}

/// One entry of CreateFleet's `Errors`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetError {
    pub instance_type: Option<String>,
    pub subnet_id: Option<String>,
    pub code: String,
    pub message: String,
}

/// The pools (type, zone, capacity type) the errors rule out. An error without an instance
/// type or subnet rules out every candidate it could be about.
pub fn ruled_out(errors: &[FleetError], tried: &[Candidate]) -> Vec<(String, String, String)> {
    let mut out: BTreeMap<(String, String, String), ()> = BTreeMap::new();
    for e in errors.iter().filter(|e| is_capacity_error(&e.code)) {
        for c in tried {
            let type_match = e
                .instance_type
                .as_deref()
                .is_none_or(|t| t == c.instance_type.name);
            let subnet_match = e.subnet_id.as_deref().is_none_or(|s| s == c.subnet_id);
            if type_match && subnet_match {
                out.insert(
                    (
                        c.instance_type.name.clone(),
                        c.zone.clone(),
                        c.capacity_type.clone(),
                    ),
                    (),
                );
            }
        }
    }
    out.into_keys().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use adze_api::Operator as ApiOp;
    use adze_api::Requirement as ApiReq;
    use std::collections::BTreeSet;

    fn claim(reqs: Vec<ApiReq>) -> NodeClaim {
        let mut c: NodeClaim = serde_json::from_value(serde_json::json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c1"},
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"},
                     "resources": {"requests": {"cpu": "1500m", "memory": "1Gi"}}}
        }))
        .unwrap();
        c.spec.requirements = reqs;
        c
    }

    fn subnets() -> Vec<Subnet> {
        ["us-east-1a", "us-east-1b"]
            .iter()
            .enumerate()
            .map(|(i, z)| Subnet {
                id: format!("subnet-{i}"),
                zone: z.to_string(),
                zone_id: None,
            })
            .collect()
    }

    #[test]
    fn a_zone_id_requirement_keeps_only_subnets_in_that_zone_id() {
        let c = claim(vec![
            ApiReq::new(labels::INSTANCE_TYPE, ApiOp::In, &["m5.large"]),
            ApiReq::new(labels::ZONE_ID, ApiOp::In, &["use1-az2"]),
        ]);
        let mut subs = subnets();
        subs[0].zone_id = Some("use1-az6".into());
        subs[1].zone_id = Some("use1-az2".into());
        let cands = candidates(
            &claim_requirements(&c).unwrap(),
            &claim_requests(&c).unwrap(),
            &adze_scheduling::catalog::embedded(),
            &subs,
        );
        assert!(!cands.is_empty());
        for c in &cands {
            assert_eq!(
                (c.zone.as_str(), c.zone_id.as_deref()),
                ("us-east-1b", Some("use1-az2"))
            );
            assert_eq!(value_of(c, labels::ZONE_ID), Some("use1-az2"));
        }
    }

    #[test]
    fn claim_gets_every_fitting_pool_in_its_subnets_cheapest_first() {
        let c = claim(vec![
            ApiReq::new(
                labels::INSTANCE_TYPE,
                ApiOp::In,
                &["m5.large", "c5.large", "m5.xlarge", "t3.micro"],
            ),
            ApiReq::new(labels::CAPACITY_TYPE, ApiOp::In, &["on-demand"]),
        ]);
        let reqs = claim_requirements(&c).unwrap();
        let requests = claim_requests(&c).unwrap();
        let cands = candidates(
            &reqs,
            &requests,
            &adze_scheduling::catalog::embedded(),
            &subnets(),
        );
        let names: Vec<&str> = cands
            .iter()
            .map(|c| c.instance_type.name.as_str())
            .collect();
        // t3.micro is too small for 1.5 cores; us-east-1c has no subnet.
        assert_eq!(
            names,
            [
                "c5.large",
                "c5.large",
                "m5.large",
                "m5.large",
                "m5.xlarge",
                "m5.xlarge"
            ]
        );
        assert!(
            cands
                .iter()
                .all(|c| c.capacity_type == "on-demand" && c.zone != "us-east-1c")
        );
    }

    #[test]
    fn spot_is_preferred_when_allowed() {
        let c = claim(vec![ApiReq::new(
            labels::INSTANCE_TYPE,
            ApiOp::In,
            &["m5.large"],
        )]);
        let cands = candidates(
            &claim_requirements(&c).unwrap(),
            &Resources::default(),
            &adze_scheduling::catalog::embedded(),
            &subnets(),
        );
        assert_eq!(cands.len(), 2);
        assert!(cands.iter().all(|c| c.capacity_type == "spot"));
    }

    #[test]
    fn min_values_survive_truncation_and_retries() {
        let c = claim(vec![
            ApiReq::new(
                labels::INSTANCE_TYPE,
                ApiOp::In,
                &["m5.large", "c5.large", "m5.xlarge", "c5.xlarge", "r5.large"],
            )
            .with_min_values(3),
            ApiReq::new(labels::CAPACITY_TYPE, ApiOp::In, &["on-demand"]),
        ]);
        let reqs = claim_requirements(&c).unwrap();
        assert_eq!(reqs.get(labels::INSTANCE_TYPE).unwrap().min_values, Some(3));
        let cands = candidates(
            &reqs,
            &Resources::default(),
            &adze_scheduling::catalog::embedded(),
            &subnets(),
        );
        // Two subnets per type: the 3 cheapest overrides would be 2 types only.
        let picked = pick_overrides(&reqs, &cands, 3).unwrap();
        assert_eq!(picked.len(), 3);
        let types: BTreeSet<&str> = picked
            .iter()
            .map(|c| c.instance_type.name.as_str())
            .collect();
        assert_eq!(types.len(), 3, "{types:?}");
        // Capacity errors left two types: the launch must not go ahead with fewer than 3.
        let left: Vec<Candidate> = cands
            .iter()
            .filter(|c| ["c5.large", "m5.large"].contains(&c.instance_type.name.as_str()))
            .cloned()
            .collect();
        let err = pick_overrides(&reqs, &left, 100).unwrap_err();
        assert!(
            err.contains("node.kubernetes.io/instance-type has minValues 3"),
            "{err}"
        );
        // Without minValues, plain cheapest-first truncation.
        let plain = claim_requirements(&claim(vec![])).unwrap();
        assert_eq!(
            pick_overrides(&plain, &cands, 2).unwrap(),
            cands[..2].to_vec()
        );
    }

    #[test]
    fn quota_errors_rule_out_the_pools_like_capacity_errors() {
        assert!(is_capacity_error("VcpuLimitExceeded"));
        assert!(is_capacity_error("MaxSpotInstanceCountExceeded"));
        assert!(!is_capacity_error("UnauthorizedOperation"));
        assert!(!is_capacity_error("InvalidAMIID.NotFound"));
    }

    #[test]
    fn capacity_errors_rule_out_exactly_their_pool() {
        let c = claim(vec![ApiReq::new(
            labels::INSTANCE_TYPE,
            ApiOp::In,
            &["m5.large", "c5.large"],
        )]);
        let cands = candidates(
            &claim_requirements(&c).unwrap(),
            &Resources::default(),
            &adze_scheduling::catalog::embedded(),
            &subnets(),
        );
        let errors = vec![
            FleetError {
                instance_type: Some("c5.large".into()),
                subnet_id: Some("subnet-0".into()),
                code: "InsufficientInstanceCapacity".into(),
                message: String::new(),
            },
            FleetError {
                instance_type: Some("m5.large".into()),
                subnet_id: None,
                code: "InvalidParameterValue".into(),
                message: String::new(),
            },
        ];
        assert_eq!(
            ruled_out(&errors, &cands),
            [(
                "c5.large".to_string(),
                "us-east-1a".to_string(),
                "spot".to_string()
            )]
        );
    }
}
