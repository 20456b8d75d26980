//! Drift of one NodeClaim, Karpenter v1's meaning (the rules are in
//! [`adze_scheduling::disruption::drift`]; this module applies them to the API objects).
//!
//! Every new NodeClaim is stamped with two hashes, each with the version of the hashing that
//! made it ([`stamp`]):
//! - [`NODEPOOL_HASH`]: the NodePool template's **static** fields: labels, annotations,
//!   taints, startup taints, `nodeClassRef`, and the two fields copied onto the claim's spec
//!   (`expireAfter`, `terminationGracePeriod`: Karpenter v1 documents that changing the
//!   pool's `expireAfter` drifts existing claims, whose own copy does not change). Not
//!   `requirements`: they drift by compatibility with the node's labels. Not the pool's
//!   behavioural fields (`weight`, `limits`, `disruption`), which are outside the template.
//! - [`EC2NODECLASS_HASH`]: the EC2NodeClass's static fields: everything in its spec but the
//!   subnet, security group and AMI selector terms. Those drift dynamically: the cloud
//!   provider compares the instance's subnet, security groups and image with the ones the
//!   class resolves to now (`CloudProvider::is_drifted`).
//!
//! The hashes are FNV-1a over the fields' JSON (maps sorted, taints as a set, absent and
//! empty alike), the same in every process. A release that changes which fields are hashed,
//! or adds one that always serializes, raises the version; claims stamped with another
//! version are re-stamped, not replaced ([`check`]).

use std::collections::BTreeMap;

use adze_api::{EC2NodeClass, NodeClaim, NodePool, conditions};
use adze_scheduling::Requirements;
use adze_scheduling::disruption::drift::{self as rules, DriftReason, HashCheck, Stamp};
use serde::Serialize;

use crate::provisioning::snapshot::claim_conditions;

pub const NODEPOOL_HASH: &str = "adze.sh/nodepool-hash";
pub const NODEPOOL_HASH_VERSION: &str = "adze.sh/nodepool-hash-version";
pub const EC2NODECLASS_HASH: &str = "adze.sh/ec2nodeclass-hash";
pub const EC2NODECLASS_HASH_VERSION: &str = "adze.sh/ec2nodeclass-hash-version";

/// v1 was the hash of the whole template (requirements included) that claims made before
/// versions existed carry, with no version annotation.
pub const CURRENT_NODEPOOL_HASH_VERSION: &str = "v2";
pub const CURRENT_EC2NODECLASS_HASH_VERSION: &str = "v1";

fn fnv(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Taints as a set: their order in the NodePool does not matter to a node.
fn taint_set<T: Serialize>(taints: &[T]) -> Vec<String> {
    let mut out: Vec<String> = taints
        .iter()
        .map(|t| serde_json::to_string(t).expect("taint serializes"))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The hash of `pool`'s static template fields, as the annotation value.
pub fn template_hash(pool: &NodePool) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Static<'a> {
        labels: &'a BTreeMap<String, String>,
        annotations: &'a BTreeMap<String, String>,
        taints: Vec<String>,
        startup_taints: Vec<String>,
        node_class_ref: &'a adze_api::node_class_ref::NodeClassRef,
        expire_after: &'a adze_api::duration::DurationOrNever,
        #[serde(skip_serializing_if = "Option::is_none")]
        termination_grace_period: &'a Option<adze_api::duration::GoDuration>,
    }
    let t = &pool.spec.template;
    let fields = Static {
        labels: &t.metadata.labels,
        annotations: &t.metadata.annotations,
        taints: taint_set(&t.spec.taints),
        startup_taints: taint_set(&t.spec.startup_taints),
        node_class_ref: &t.spec.node_class_ref,
        expire_after: &t.spec.expire_after,
        termination_grace_period: &t.spec.termination_grace_period,
    };
    fnv(&serde_json::to_string(&fields).expect("template serializes"))
}

/// Selector terms: what the class resolves (subnets, security groups, images) drifts by the
/// resolved values, not by the terms' text.
const DYNAMIC_CLASS_FIELDS: [&str; 3] = [
    "subnetSelectorTerms",
    "securityGroupSelectorTerms",
    "amiSelectorTerms",
];

/// The hash of `class`'s static fields, as the annotation value.
pub fn class_hash(class: &EC2NodeClass) -> String {
    let mut spec = serde_json::to_value(&class.spec).expect("class serializes");
    if let Some(o) = spec.as_object_mut() {
        for f in DYNAMIC_CLASS_FIELDS {
            o.remove(f);
        }
    }
    fnv(&spec.to_string())
}

/// The EC2NodeClass `r` names, among `classes` (`None` when classes are not watched).
pub fn class_named<'a>(
    r: &adze_api::NodeClassRef,
    classes: Option<&'a [std::sync::Arc<EC2NodeClass>]>,
) -> Option<&'a EC2NodeClass> {
    if !r.is_ec2() {
        return None;
    }
    classes?
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some(r.name.as_str()))
        .map(|c| c.as_ref())
}

/// The annotations a new NodeClaim of `pool` (of node class `class`, when known) carries.
pub fn stamp(pool: &NodePool, class: Option<&EC2NodeClass>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::from([
        (NODEPOOL_HASH.to_string(), template_hash(pool)),
        (
            NODEPOOL_HASH_VERSION.to_string(),
            CURRENT_NODEPOOL_HASH_VERSION.to_string(),
        ),
    ]);
    if let Some(c) = class {
        out.insert(EC2NODECLASS_HASH.into(), class_hash(c));
        out.insert(
            EC2NODECLASS_HASH_VERSION.into(),
            CURRENT_EC2NODECLASS_HASH_VERSION.into(),
        );
    }
    out
}

fn annotation<'a>(claim: &'a NodeClaim, key: &str) -> Option<&'a str> {
    claim
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// Whether the claim's `Drifted` condition already names `reason` (as its reason, or in its
/// message when several reasons hold).
pub fn drifted_already(claim: &NodeClaim, reason: DriftReason) -> bool {
    conditions::find(claim_conditions(claim), conditions::nodeclaim::DRIFTED).is_some_and(|c| {
        c.status == "True" && (c.reason == reason.as_str() || c.message.contains(reason.as_str()))
    })
}

/// The claim's stamp `hash_key`/`version_key` against `current` (of `version`).
pub fn check(
    claim: &NodeClaim,
    hash_key: &str,
    version_key: &str,
    current: &str,
    version: &str,
    reason: DriftReason,
) -> HashCheck {
    let stamp = annotation(claim, hash_key).map(|hash| Stamp {
        hash,
        version: annotation(claim, version_key).unwrap_or(""),
    });
    rules::check_hash(
        stamp,
        Stamp {
            hash: current,
            version,
        },
        drifted_already(claim, reason),
    )
}

/// One NodeClaim's drift, and the annotations to re-stamp.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaimDrift {
    /// Empty when not drifted; the first names the `Drifted` condition's reason.
    pub reasons: Vec<DriftReason>,
    /// "NodePoolDrifted: …; RequirementsDrifted: …", for the condition's message.
    pub message: String,
    /// Hash annotations to write: a stamp of another version (or none) replaced by the
    /// current one.
    pub restamp: BTreeMap<String, String>,
}

impl ClaimDrift {
    pub fn drifted(&self) -> bool {
        !self.reasons.is_empty()
    }
}

/// What the controller knows about one NodeClaim when it judges drift.
pub struct Subject<'a> {
    pub claim: &'a NodeClaim,
    /// Its NodePool, when it still exists.
    pub pool: Option<&'a NodePool>,
    /// Its node class, when classes are watched and it exists.
    pub class: Option<&'a EC2NodeClass>,
    /// The pool's requirements as placement reads them, when the pool converts.
    pub requirements: Option<&'a Requirements>,
    /// The Node's labels.
    pub node_labels: &'a BTreeMap<String, String>,
    /// The cloud provider reports the instance's image, subnet or security groups are no
    /// longer among the class's.
    pub cloud_drifted: bool,
    /// Its node cannot run every DaemonSet it should beside its pods, and why
    /// ([`adze_scheduling::late_daemons::misfits`]).
    pub daemon_misfit: Option<&'a str>,
}

/// [`check`] one stamped hash; when the claim's stamp is from another hash version, the
/// current hash and version go into `restamp` instead of counting as drift.
fn check_or_restamp(
    claim: &NodeClaim,
    [hash_key, version_key]: [&str; 2],
    current: String,
    version: &str,
    reason: DriftReason,
    restamp: &mut BTreeMap<String, String>,
) -> HashCheck {
    let c = check(claim, hash_key, version_key, &current, version, reason);
    if c == HashCheck::Restamp {
        restamp.insert(hash_key.into(), current);
        restamp.insert(version_key.into(), version.into());
    }
    c
}

/// Judges `s`: static hashes, requirement compatibility and the cloud's resolved values.
pub fn evaluate(s: &Subject<'_>) -> ClaimDrift {
    let mut out = ClaimDrift::default();
    let mut details: Vec<String> = Vec::new();
    let pool_check = s.pool.map_or(HashCheck::Matches, |pool| {
        check_or_restamp(
            s.claim,
            [NODEPOOL_HASH, NODEPOOL_HASH_VERSION],
            template_hash(pool),
            CURRENT_NODEPOOL_HASH_VERSION,
            DriftReason::NodePool,
            &mut out.restamp,
        )
    });
    let class_check = s.class.map_or(HashCheck::Matches, |class| {
        check_or_restamp(
            s.claim,
            [EC2NODECLASS_HASH, EC2NODECLASS_HASH_VERSION],
            class_hash(class),
            CURRENT_EC2NODECLASS_HASH_VERSION,
            DriftReason::NodeClass,
            &mut out.restamp,
        )
    });
    let unmet = s
        .requirements
        .and_then(|r| rules::unmet_requirement(r, s.node_labels));
    out.reasons = rules::reasons(
        pool_check,
        class_check,
        s.cloud_drifted,
        unmet.as_deref(),
        s.daemon_misfit,
    );
    for r in &out.reasons {
        let what = match r {
            DriftReason::NodePool => {
                "the NodePool's template changed since the node was made".to_string()
            }
            DriftReason::NodeClass => {
                let mut parts = Vec::new();
                if class_check == HashCheck::Drifted {
                    parts.push("the EC2NodeClass's static fields changed");
                }
                if s.cloud_drifted {
                    parts.push("the instance's image, subnet or security groups are no longer the EC2NodeClass's");
                }
                parts.join(", and ")
            }
            DriftReason::Requirements => unmet.clone().unwrap_or_default(),
            DriftReason::DaemonSets => s.daemon_misfit.unwrap_or_default().to_string(),
        };
        details.push(format!("{r}: {what}"));
    }
    out.message = details.join("; ");
    out
}

/// The `Disrupting` condition's reason on a drifted node kept because its replacement failed:
/// what [`drift_failures`] reads back after a restart.
pub const DRIFT_REPLACEMENT_FAILED: &str = "DriftReplacementFailed";

/// The failed drift replacements the cluster still shows, for
/// [`adze_scheduling::disruption::drift_backoff::DriftBackoff::rebuild`]: each NodeClaim (not being deleted) whose
/// `Disrupting` condition is False for [`DRIFT_REPLACEMENT_FAILED`], as (its NodePool, when
/// the condition turned, why). A claim drift takes again is marked `Disrupting` anew, so
/// each claim tells of its last failure only.
pub fn drift_failures<'a>(
    claims: impl IntoIterator<Item = &'a NodeClaim>,
) -> Vec<(String, i64, String)> {
    claims
        .into_iter()
        .filter(|c| c.metadata.deletion_timestamp.is_none())
        .filter_map(|c| {
            let cond = conditions::find(claim_conditions(c), conditions::nodeclaim::DISRUPTING)?;
            (cond.status == "False" && cond.reason == DRIFT_REPLACEMENT_FAILED).then(|| {
                let pool = (c.metadata.labels.as_ref())
                    .and_then(|l| l.get(adze_scheduling::labels::NODEPOOL));
                (
                    pool.cloned().unwrap_or_default(),
                    cond.last_transition_time.0.as_second(),
                    cond.message.clone(),
                )
            })
        })
        .filter(|(pool, _, _)| !pool.is_empty())
        .collect()
}

/// The drift backoff as the cluster shows it at `now` ([`drift_failures`]): what the
/// controller starts from after a restart and what `simulate --disruption` plans with.
pub fn backoff_from_claims<'a>(
    claims: impl IntoIterator<Item = &'a NodeClaim>,
    now: i64,
) -> adze_scheduling::disruption::drift_backoff::DriftBackoff {
    adze_scheduling::disruption::drift_backoff::DriftBackoff::rebuild(&drift_failures(claims), now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use adze_scheduling::{Operator, Requirement};
    use serde_json::json;

    fn pool(label: &str) -> NodePool {
        serde_json::from_value(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
            "spec": {"template": {"metadata": {"labels": {"v": label}}, "spec": {
                "nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                  "values": ["m5.large"]}],
                "taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoSchedule"}]}}},
        }))
        .unwrap()
    }

    fn class(ami: &str, user_data: &str) -> EC2NodeClass {
        serde_json::from_value(json!({
            "apiVersion": "aws.adze.sh/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
            "spec": {"subnetSelectorTerms": [{"tags": {"k": "v"}}],
                     "securityGroupSelectorTerms": [{"tags": {"k": "v"}}],
                     "amiSelectorTerms": [{"alias": ami}], "role": "r", "userData": user_data},
        }))
        .unwrap()
    }

    fn claim(annotations: BTreeMap<String, String>) -> NodeClaim {
        let mut c: NodeClaim = serde_json::from_value(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c"},
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}},
        }))
        .unwrap();
        c.metadata.annotations = Some(annotations);
        c
    }

    fn judge(
        c: &NodeClaim,
        p: &NodePool,
        k: Option<&EC2NodeClass>,
        reqs: Option<&Requirements>,
        labels: &BTreeMap<String, String>,
    ) -> ClaimDrift {
        evaluate(&Subject {
            claim: c,
            pool: Some(p),
            class: k,
            requirements: reqs,
            node_labels: labels,
            cloud_drifted: false,
            daemon_misfit: None,
        })
    }

    #[test]
    fn static_template_fields_drift_and_requirements_do_not_change_the_hash() {
        let v1 = pool("1");
        assert_eq!(template_hash(&v1), template_hash(&pool("1")));
        assert_ne!(template_hash(&v1), template_hash(&pool("2")));
        let mut edited = v1.clone();
        edited.spec.template.spec.requirements[0].values =
            vec!["m5.large".into(), "c5.large".into()];
        assert_eq!(template_hash(&v1), template_hash(&edited));
        let mut expiry = v1.clone();
        expiry.spec.template.spec.expire_after = serde_json::from_value(json!("24h")).unwrap();
        assert_ne!(template_hash(&v1), template_hash(&expiry));
        let c = claim(stamp(&v1, None));
        let none = BTreeMap::new();
        assert!(!judge(&c, &v1, None, None, &none).drifted());
        let d = judge(&c, &pool("2"), None, None, &none);
        assert_eq!(d.reasons, vec![DriftReason::NodePool]);
        assert!(d.message.starts_with("NodePoolDrifted: "), "{}", d.message);
        assert!(d.restamp.is_empty());
    }

    #[test]
    fn taint_order_limits_weight_and_disruption_do_not_drift() {
        let a = pool("1");
        let mut b = a.clone();
        b.spec.template.spec.taints.reverse();
        b.spec.limits.insert(
            "cpu".into(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("5".into()),
        );
        b.spec.weight = Some(10);
        b.spec.disruption.consolidate_after = serde_json::from_value(json!("Never")).unwrap();
        assert_eq!(template_hash(&a), template_hash(&b));
    }

    #[test]
    fn claims_from_another_hash_version_are_restamped_not_drifted() {
        let p = pool("2");
        // A claim made by an earlier release: the whole-template hash, no version annotation.
        let old = claim(BTreeMap::from([(
            NODEPOOL_HASH.to_string(),
            "0123456789abcdef".to_string(),
        )]));
        let d = judge(&old, &p, None, None, &BTreeMap::new());
        assert!(!d.drifted(), "{d:?}");
        assert_eq!(d.restamp, stamp(&p, None));
        // Once re-stamped, it is current.
        let restamped = claim(d.restamp.clone());
        assert_eq!(
            judge(&restamped, &p, None, None, &BTreeMap::new()),
            ClaimDrift::default()
        );
    }

    #[test]
    fn drifted_claim_keeps_its_stamp_across_a_version_change() {
        let p = pool("2");
        let mut old = claim(BTreeMap::from([
            (NODEPOOL_HASH.to_string(), "0123456789abcdef".to_string()),
            (NODEPOOL_HASH_VERSION.to_string(), "v1".to_string()),
        ]));
        old.status = Some(adze_api::NodeClaimStatus {
            conditions: vec![
                serde_json::from_value(serde_json::json!({
                    "type": conditions::nodeclaim::DRIFTED, "status": "True",
                    "reason": "NodePoolDrifted", "message": "x",
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}))
                .unwrap(),
            ],
            ..Default::default()
        });
        let d = judge(&old, &p, None, None, &BTreeMap::new());
        assert_eq!(d.reasons, vec![DriftReason::NodePool]);
        assert!(d.restamp.is_empty());
    }

    /// The kubelet tuning fields are static: changing one drifts the class's nodes, and a class
    /// that sets none hashes as it did before they existed (unset fields are not serialized).
    #[test]
    fn kubelet_tuning_fields_drift_and_leave_old_hashes_alone() {
        let plain = class("al2023@latest", "x");
        let mut with_empty_kubelet = plain.clone();
        with_empty_kubelet.spec.kubelet = Some(Default::default());
        assert_eq!(
            serde_json::to_value(&with_empty_kubelet.spec).unwrap()["kubelet"],
            json!({}),
            "no tuning field is written when unset"
        );
        let tuned = |f: fn(&mut adze_api::ec2nodeclass::KubeletConfiguration)| {
            let mut c = with_empty_kubelet.clone();
            f(c.spec.kubelet.as_mut().unwrap());
            class_hash(&c)
        };
        let base = class_hash(&with_empty_kubelet);
        for (name, hash) in [
            (
                "evictionMaxPodGracePeriod",
                tuned(|k| k.eviction_max_pod_grace_period = Some(60)),
            ),
            (
                "imageGCHighThresholdPercent",
                tuned(|k| k.image_gc_high_threshold_percent = Some(90)),
            ),
            (
                "imageGCLowThresholdPercent",
                tuned(|k| k.image_gc_low_threshold_percent = Some(50)),
            ),
            ("cpuCFSQuota", tuned(|k| k.cpu_cfs_quota = Some(false))),
        ] {
            assert_ne!(hash, base, "{name} is a static field");
        }
    }

    #[test]
    fn class_selector_terms_are_not_static_other_fields_are() {
        let a = class("al2023@latest", "x");
        assert_eq!(class_hash(&a), class_hash(&class("al2023@v20250101", "x")));
        assert_ne!(class_hash(&a), class_hash(&class("al2023@latest", "y")));
        let p = pool("1");
        let c = claim(stamp(&p, Some(&a)));
        let none = BTreeMap::new();
        assert!(!judge(&c, &p, Some(&class("al2023@v2", "x")), None, &none).drifted());
        let d = judge(&c, &p, Some(&class("al2023@latest", "y")), None, &none);
        assert_eq!(d.reasons, vec![DriftReason::NodeClass]);
        // A claim made before class hashes: stamped now, not drifted.
        let bare = claim(stamp(&p, None));
        let d = judge(&bare, &p, Some(&a), None, &none);
        assert!(!d.drifted());
        assert_eq!(d.restamp.get(EC2NODECLASS_HASH), Some(&class_hash(&a)));
    }

    #[test]
    fn requirements_drift_by_compatibility() {
        let p = pool("1");
        let c = claim(stamp(&p, None));
        let node: BTreeMap<String, String> = [(
            "node.kubernetes.io/instance-type".to_string(),
            "m5.large".to_string(),
        )]
        .into();
        let mut wide = Requirements::new();
        wide.add(
            Requirement::new(
                "node.kubernetes.io/instance-type",
                Operator::In,
                &["m5.large", "m5.2xlarge"],
            )
            .unwrap(),
        );
        assert!(!judge(&c, &p, None, Some(&wide), &node).drifted());
        let mut narrow = Requirements::new();
        narrow.add(Requirement::single(
            "node.kubernetes.io/instance-type",
            "m5.2xlarge",
        ));
        let d = judge(&c, &p, None, Some(&narrow), &node);
        assert_eq!(d.reasons, vec![DriftReason::Requirements]);
        assert!(d.message.contains("m5.large"), "{}", d.message);
    }
}
