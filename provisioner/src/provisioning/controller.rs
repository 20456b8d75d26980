//! The provisioning controller (`run` only): batches pending pods, plans them on a snapshot
//! and creates NodeClaims.

use super::{batcher, leaving, snapshot};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use adze_api::{NodeClaim, NodePool};
use adze_scheduling::plan::NewClaim;
use adze_scheduling::{Options, labels, schedule};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};

use crate::events::{Note, Recorder};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

use crate::cloud::{CloudProvider, UnavailableOfferings};
use crate::state::ClusterState;
use crate::state::nomination::{self, Nomination};
use batcher::Batcher;
use futures::StreamExt;
use snapshot::Verdict;

/// NodeClaim creates one pass keeps in flight at once.
const CREATE_CONCURRENCY: usize = 16;

pub const FIELD_MANAGER: &str = "adze-provisioner";
pub const TERMINATION_FINALIZER: &str = "adze.sh/termination";

#[derive(Debug, Clone)]
pub struct Settings {
    pub batch_idle: Duration,
    pub batch_max: Duration,
    pub max_instance_types: usize,
    pub policies: crate::rules::Policies,
    /// Pods left pending are tried again this often even when nothing new arrived.
    pub retry: Duration,
}

/// The NodeClaim for a planned claim. `uids` maps "namespace/name" to the pod's uid.
/// `karpenter_labels`: its labels (which its node gets) include Karpenter's keys beside
/// Adze's. `class`: the pool's node class when classes are watched, whose static-field hash
/// the claim carries for drift (as it carries the pool's).
pub fn claim_object(
    c: &NewClaim,
    pool: &NodePool,
    class: Option<&adze_api::EC2NodeClass>,
    uids: &BTreeMap<String, String>,
    karpenter_labels: bool,
) -> NodeClaim {
    let template = &pool.spec.template.spec;
    let requirements: Vec<_> = c
        .requirements
        .iter()
        .flat_map(|r| {
            r.to_terms().into_iter().map(move |(op, values)| {
                json!({"key": r.key, "operator": op.as_str(), "values": values, "minValues": r.min_values})
            })
        })
        .collect();
    let taint = |t: &adze_scheduling::Taint| {
        if t.value.is_empty() {
            json!({"key": t.key, "effect": t.effect.as_str()})
        } else {
            json!({"key": t.key, "value": t.value, "effect": t.effect.as_str()})
        }
    };
    // Pods without a uid are CapacityBuffer placeholders (never created): the claim is
    // launched for them but nominates only real pods.
    let pods: Vec<Nomination> = c
        .pods
        .iter()
        .filter_map(|key| {
            let (ns, name) = key.split_once('/').unwrap_or(("default", key));
            Some(Nomination {
                namespace: ns.into(),
                name: name.into(),
                uid: uids.get(key)?.clone(),
            })
        })
        .collect();
    let mut claim_labels = c.labels.clone();
    claim_labels.insert(labels::NODEPOOL.into(), c.nodepool.clone());
    if karpenter_labels {
        claim_labels = labels::with_karpenter_aliases(&claim_labels);
    }
    let mut annotations = pool.spec.template.metadata.annotations.clone();
    annotations.insert(labels::NOMINATED_PODS.into(), nomination::encode(&pods));
    annotations.extend(crate::disruption::drift::stamp(pool, class));
    let uid = pool.metadata.uid.clone().unwrap_or_default();
    let mut spec = json!({
        "requirements": requirements,
        "resources": {"requests": c.requests.to_quantities()},
        "taints": c.taints.iter().map(taint).collect::<Vec<_>>(),
        "startupTaints": c.startup_taints.iter().map(taint).collect::<Vec<_>>(),
        "nodeClassRef": template.node_class_ref,
        "expireAfter": template.expire_after,
    });
    if let Some(g) = &template.termination_grace_period {
        spec["terminationGracePeriod"] = json!(g);
    }
    let mut claim: NodeClaim = serde_json::from_value(json!({
        "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
        "metadata": {
            "name": c.name, "labels": claim_labels, "annotations": annotations,
            "finalizers": [TERMINATION_FINALIZER],
        },
        "spec": spec,
    }))
    .expect("nodeclaim object");
    if !uid.is_empty() {
        claim.metadata.owner_references = Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                api_version: "adze.sh/v1".into(),
                kind: "NodePool".into(),
                name: c.nodepool.clone(),
                uid,
                block_owner_deletion: Some(true),
                controller: None,
            },
        ]);
    }
    claim
}

/// An event about a pod.
pub fn pod_event(pod: &Pod, type_: &str, reason: &str, message: &str) -> Note {
    let about = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: pod.metadata.name.clone(),
        namespace: Some(
            pod.metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into()),
        ),
        uid: pod.metadata.uid.clone(),
        resource_version: None,
        field_path: None,
    };
    Note::new(about, type_, reason, message)
}

pub struct Provisioner {
    pub client: Client,
    pub state: ClusterState,
    pub cloud: Arc<dyn CloudProvider>,
    pub unavailable: UnavailableOfferings,
    pub settings: Settings,
    pub recorder: Recorder,
}

/// What one provisioning pass did.
#[derive(Debug, Default)]
pub struct Outcome {
    pub created: Vec<String>,
    pub nominated: usize,
    pub unschedulable: usize,
    /// Pending pods this pass saw and did not launch for (on existing capacity or unplaceable),
    /// uid → kube-scheduler's verdict on each as the pass saw it
    /// ([`snapshot::unplaced_demand`]).
    pub left_pending: BTreeMap<String, Verdict>,
}

impl Provisioner {
    /// Watches pending pods and provisions when a batch window closes. Never returns.
    pub async fn run(self) {
        let mut batcher = Batcher::new(self.settings.batch_idle, self.settings.batch_max);
        // Pending uids the last pass decided about, with kube-scheduler's verdict as the pass
        // saw it; a pod outside this map, newly confirmed or refused anew opens a window
        // ([`snapshot::is_news`]).
        let mut handled: BTreeMap<String, Verdict> = BTreeMap::new();
        let mut last_pass = Instant::now();
        // When the open window opened (for its length in the pass timing).
        let mut window_opened: Option<Instant> = None;
        // Interrupted claims just handed to termination (deleted), until the watch shows it.
        let mut drained: BTreeSet<String> = BTreeSet::new();
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = Instant::now();
            let objects = self.state.objects();
            let demand = snapshot::unplaced_demand(&objects);
            let now_unix = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64);
            let interrupted = leaving::interrupted_without_agent(&objects, &demand, now_unix);
            // Forget claims the watch shows deleted: a later claim may reuse the name.
            drained.retain(|n| interrupted.contains(n));
            for name in interrupted {
                if !drained.contains(&name) && self.drain_interrupted(&name).await {
                    drained.insert(name);
                }
            }
            crate::metrics::provisioner()
                .pods_pending
                .set(demand.len() as i64);
            if opens_window(&demand, &handled) {
                if !batcher.is_open() {
                    tracing::debug!(pending = demand.len(), "batch window opened");
                    window_opened = Some(now);
                }
                batcher.add(now);
                // The coming pass plans every pending pod with what it shows then, so a
                // verdict kube-scheduler writes while the window is open is no news: only
                // what a pass left pending may reopen a window (else kube-scheduler's
                // stream of Unschedulable writes during a burst would hold it open to max).
                handled.extend(demand.into_keys().map(|u| (u, Verdict::absorbed())));
            } else if (!demand.is_empty() || !objects.buffers.capacitybuffers.is_empty())
                && !batcher.is_open()
                && now.duration_since(last_pass) >= self.settings.retry
            {
                tracing::debug!(
                    pending = demand.len(),
                    retry_s = self.settings.retry.as_secs_f64(),
                    "batch window opened: periodic retry of pods left pending"
                );
                window_opened = Some(now);
                batcher.add(now);
            }
            if !batcher.take_if_closed(now) {
                continue;
            }
            last_pass = Instant::now();
            if let Some(opened) = window_opened.take() {
                tracing::debug!(
                    window_ms = last_pass.duration_since(opened).as_millis() as u64,
                    "batch window closed; provisioning pass starts"
                );
            }
            match self.provision().await {
                Ok(outcome) => handled = outcome.left_pending,
                Err(e) => {
                    tracing::error!(error = %format!("{e:#}"), "provisioning failed; retrying");
                    handled.clear();
                }
            }
        }
    }

    /// Hands an interrupted NodeClaim without a node agent to termination: deleting it taints
    /// the node, evicts its pods under their PDBs and terminates the instance.
    async fn drain_interrupted(&self, name: &str) -> bool {
        let claims: Api<NodeClaim> = Api::all(self.client.clone());
        match claims.delete(name, &Default::default()).await {
            Ok(_) => {
                tracing::info!(
                    nodeclaim = name,
                    "interrupted and no node agent on its node: replacement launched, draining"
                );
                true
            }
            Err(e) => {
                tracing::warn!(nodeclaim = name, error = %e, "deleting interrupted NodeClaim");
                false
            }
        }
    }

    /// One pass: snapshot, schedule, create claims, emit events.
    pub async fn provision(&self) -> anyhow::Result<Outcome> {
        let start = Instant::now();
        let catalog = self.unavailable.apply(&self.cloud.instance_types(), start);
        let objects = self.state.objects();
        let built = snapshot::build(&objects, &catalog);
        let snapshot_ms = start.elapsed().as_millis() as u64;
        for p in &built.problems {
            tracing::warn!(problem = %p, "object left out of scheduling");
        }
        let mut outcome = Outcome::default();
        let pods: BTreeMap<String, Arc<Pod>> = objects
            .pods
            .iter()
            .map(|p| {
                (
                    format!(
                        "{}/{}",
                        p.metadata.namespace.as_deref().unwrap_or("default"),
                        p.metadata.name.as_deref().unwrap_or_default()
                    ),
                    p.clone(),
                )
            })
            .collect();
        let mut events = Vec::new();
        // Left out before scheduling (their volumes cannot be placed yet): said once per pass,
        // like the plan's unschedulable pods.
        for u in &built.unschedulable {
            outcome.unschedulable += 1;
            if let Some(p) = pods.get(&u.pod) {
                tracing::info!(pod = %u.pod, reason = %u.reason, "pod cannot be scheduled");
                events.push(pod_event(p, "Warning", "FailedScheduling", &u.reason));
            }
        }
        if built.snapshot.pending.is_empty() {
            let demand = snapshot::unplaced_demand(&objects);
            outcome.left_pending = left_pending(built.pending_uids.values(), &demand);
            self.send_events(events);
            tracing::debug!(snapshot_ms, "provisioning pass timing: nothing to plan");
            return Ok(outcome);
        }
        let mut options = Options {
            max_instance_types: self.settings.max_instance_types,
            reserved_names: built.reserved_names.clone(),
            name_seed: fresh_name_seed(),
            ..Options::default()
        };
        self.settings.policies.apply(&mut options);
        let decide_start = Instant::now();
        let plan = schedule(&built.snapshot, &options);
        let decide_ms = decide_start.elapsed().as_millis() as u64;
        let launch_start = Instant::now();
        crate::metrics::provisioner()
            .scheduling_duration
            .observe(start.elapsed().as_secs_f64());
        tracing::info!(
            pending = built.snapshot.pending.len(),
            nodeclaims = plan.new_claims.len(),
            on_existing = plan.existing.iter().map(|e| e.pods.len()).sum::<usize>(),
            unschedulable = plan.unschedulable.len(),
            price_per_hour = plan.total_price_per_hour,
            elapsed_ms = start.elapsed().as_millis() as u64,
            "scheduled batch"
        );
        let claims: Api<NodeClaim> = Api::all(self.client.clone());
        // Pods of claims that could not be created: retried on the next pass.
        let mut failed: BTreeSet<String> = BTreeSet::new();
        let objs: Vec<(&NewClaim, NodeClaim)> = plan
            .new_claims
            .iter()
            .filter_map(|c| {
                let pool = objects
                    .nodepools
                    .iter()
                    .find(|p| p.metadata.name.as_deref() == Some(&c.nodepool))?;
                let class = crate::disruption::drift::class_named(
                    &pool.spec.template.spec.node_class_ref,
                    objects.nodeclasses.as_deref(),
                );
                let obj = claim_object(
                    c,
                    pool,
                    class,
                    &built.pending_uids,
                    objects.karpenter_labels,
                );
                Some((c, obj))
            })
            .collect();
        // Several creates in flight: one after another, a 67-claim burst spent 1.2 s here
        // (one API round trip each) before the last claim could start launching. `buffered`
        // keeps the plan's order for the log and the outcome.
        let created: Vec<_> = futures::stream::iter(objs)
            .map(|(c, obj)| {
                let claims = claims.clone();
                async move { (c, claims.create(&PostParams::default(), &obj).await) }
            })
            .buffered(CREATE_CONCURRENCY)
            .collect()
            .await;
        for (c, result) in created {
            match result {
                Ok(_) => {
                    tracing::info!(
                        nodeclaim = %c.name, nodepool = %c.nodepool, instance_type = %c.instance_type,
                        zone = %c.zone, capacity_type = %c.capacity_type, pods = c.pods.len(),
                        price_per_hour = c.price_per_hour, "created nodeclaim"
                    );
                    outcome.created.push(c.name.clone());
                    crate::metrics::provisioner()
                        .nodeclaims_created
                        .get_or_create(&crate::metrics::nodepool(&c.nodepool))
                        .inc();
                    for key in &c.pods {
                        if let Some(p) = pods.get(key) {
                            outcome.nominated += 1;
                            events.push(pod_event(
                                p,
                                "Normal",
                                "Nominated",
                                &format!("Pod should schedule on: nodeclaim/{}", c.name),
                            ));
                        }
                    }
                }
                Err(e) => {
                    tracing::error!(nodeclaim = %c.name, error = %e, "creating nodeclaim failed");
                    failed.extend(c.pods.iter().cloned());
                }
            }
        }
        // Pods placed on the spare room of in-flight claims join those claims' nominations,
        // so they count as covered (no retry launches for them) and the extender holds
        // their room.
        // A pod already nominated elsewhere (its claim initialised, the scheduler has not
        // bound it yet) keeps that nomination: never nominate a pod to two claims.
        let already = nomination::by_uid(objects.claims.iter().map(|c| c.as_ref()));
        let mut extended: Vec<(String, Vec<String>)> = Vec::new();
        for e in plan.existing.iter().filter(|e| e.in_flight) {
            let Some(claim) = objects
                .claims
                .iter()
                .find(|c| c.metadata.name.as_deref() == Some(&e.node))
            else {
                continue;
            };
            let add: Vec<Nomination> = e
                .pods
                .iter()
                .filter_map(|key| {
                    let (ns, name) = key.split_once('/')?;
                    Some(Nomination {
                        namespace: ns.into(),
                        name: name.into(),
                        uid: built.pending_uids.get(key)?.clone(),
                    })
                })
                .filter(|n| !already.contains_key(&n.uid))
                .collect();
            let Some(all) = nomination::extend(&nomination::of_claim(claim), &add) else {
                continue;
            };
            // No resourceVersion: only provisioning writes this key, one pass at a time, from
            // a cache that already shows its previous writes; status updates must not conflict.
            let patch = json!({"metadata": {
                "annotations": {labels::NOMINATED_PODS: nomination::encode(&all)},
            }});
            match claims
                .patch(&e.node, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    tracing::info!(nodeclaim = %e.node, pods = add.len(), "pods nominated to the spare room of an in-flight nodeclaim");
                    for key in &e.pods {
                        if let Some(p) = pods.get(key) {
                            outcome.nominated += 1;
                            events.push(pod_event(
                                p,
                                "Normal",
                                "Nominated",
                                &format!("Pod should schedule on: nodeclaim/{}", e.node),
                            ));
                        }
                    }
                    extended.push((e.node.clone(), add.into_iter().map(|n| n.uid).collect()));
                }
                // Gone: the pods stay pending and the next pass places them again.
                Err(err) => {
                    tracing::warn!(nodeclaim = %e.node, error = %err, "nominating pods to an in-flight nodeclaim failed");
                    failed.extend(e.pods.iter().cloned());
                }
            }
        }
        for u in &plan.unschedulable {
            outcome.unschedulable += 1;
            if let Some(p) = pods.get(&u.pod) {
                tracing::info!(pod = %u.pod, reason = %u.reason, "pod cannot be scheduled");
                events.push(pod_event(p, "Warning", "FailedScheduling", &u.reason));
            }
        }
        let placed_on_new: BTreeSet<&str> = plan
            .new_claims
            .iter()
            .flat_map(|c| c.pods.iter().map(String::as_str))
            .chain(
                plan.existing
                    .iter()
                    .filter(|e| e.in_flight)
                    .flat_map(|e| e.pods.iter().map(String::as_str)),
            )
            .collect();
        let demand = snapshot::unplaced_demand(&objects);
        outcome.left_pending = left_pending(
            built
                .pending_uids
                .iter()
                .filter(|(k, _)| !placed_on_new.contains(k.as_str()) && !failed.contains(*k))
                .map(|(_, u)| u),
            &demand,
        );
        let launch_ms = launch_start.elapsed().as_millis() as u64;
        let watch_start = Instant::now();
        // The next pass must see the claims just created, or it would launch for their pods again.
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let seen: BTreeSet<String> = self
                .state
                .claims
                .state()
                .iter()
                .filter_map(|c| c.metadata.name.clone())
                .collect();
            let nominated =
                nomination::by_uid(self.state.claims.state().iter().map(|c| c.as_ref()));
            let extensions_seen = extended
                .iter()
                .all(|(claim, uids)| uids.iter().all(|u| nominated.get(u) == Some(claim)));
            if outcome.created.iter().all(|n| seen.contains(n)) && extensions_seen {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.send_events(events);
        tracing::debug!(
            snapshot_ms,
            decide_ms,
            launch_ms,
            watch_ms = watch_start.elapsed().as_millis() as u64,
            total_ms = start.elapsed().as_millis() as u64,
            created = outcome.created.len(),
            "provisioning pass timing: snapshot (objects to placement input), decision \
             (placement), launch (NodeClaim creates and nominations), watch (until the watch \
             shows them)"
        );
        Ok(outcome)
    }

    /// Records events in the background: a slow apiserver must not hold up the next pass.
    fn send_events(&self, events: Vec<Note>) {
        for ev in events {
            self.recorder.send(ev);
        }
    }
}

/// Whether any pod pending now holds news for provisioning ([`snapshot::is_news`], the
/// rule itself), `handled` being what the last pass saw.
fn opens_window(demand: &BTreeMap<String, Verdict>, handled: &BTreeMap<String, Verdict>) -> bool {
    demand
        .iter()
        .any(|(uid, now)| snapshot::is_news(now, handled.get(uid)))
}

/// The uids a pass leaves pending, each with kube-scheduler's verdict as the pass saw it (a
/// pod the pass planned that is no longer unplaced demand: absorbed).
fn left_pending<'a>(
    uids: impl Iterator<Item = &'a String>,
    demand: &BTreeMap<String, Verdict>,
) -> BTreeMap<String, Verdict> {
    uids.map(|u| {
        (
            u.clone(),
            demand.get(u).cloned().unwrap_or_else(Verdict::absorbed),
        )
    })
    .collect()
}

/// A random seed for new NodeClaim names ([`Options::name_seed`]): a claim deleted a minute
/// ago must not lend its name to the next one.
pub(crate) fn fresh_name_seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use adze_scheduling::{Requirement, Requirements, Resources};

    #[test]
    fn window_opens_for_new_pods_and_for_pods_kube_scheduler_newly_turned_down() {
        let refused = |message: &str| Verdict {
            confirmed: true,
            refusal: Some(snapshot::Refusal {
                message: Some(message.into()),
                last_transition: Some("2026-12-03T06:00:00Z".into()),
            }),
        };
        let unconfirmed = Verdict::default();
        let m = |v: &[(&str, &Verdict)]| -> BTreeMap<String, Verdict> {
            v.iter()
                .map(|(u, c)| (u.to_string(), (*c).clone()))
                .collect()
        };
        assert!(!opens_window(&m(&[]), &m(&[])));
        assert!(
            opens_window(&m(&[("a", &unconfirmed)]), &m(&[])),
            "a fresh pod"
        );
        assert!(!opens_window(
            &m(&[("a", &unconfirmed)]),
            &m(&[("a", &unconfirmed)])
        ));
        assert!(
            opens_window(&m(&[("a", &refused("0/3"))]), &m(&[("a", &unconfirmed)])),
            "left on existing room, then kube-scheduler found none"
        );
        assert!(!opens_window(
            &m(&[("a", &refused("0/3"))]),
            &m(&[("a", &refused("0/3"))])
        ));
        assert!(
            opens_window(&m(&[("a", &refused("0/2"))]), &m(&[("a", &refused("0/3"))])),
            "left pending refused, then refused again on a changed cluster"
        );
        assert!(
            !opens_window(
                &m(&[("a", &refused("0/2"))]),
                &m(&[("a", &Verdict::absorbed())])
            ),
            "rewritten while the window was open"
        );
        assert!(!opens_window(
            &m(&[("a", &unconfirmed)]),
            &m(&[("a", &refused("0/3"))])
        ));
        assert_eq!(
            left_pending(
                ["a".to_string(), "x".to_string()].iter(),
                &m(&[("a", &refused("0/3"))])
            ),
            m(&[("a", &refused("0/3")), ("x", &Verdict::absorbed())])
        );
    }

    #[test]
    fn claim_object_carries_plan_labels_nominations_and_finalizer() {
        let pool: NodePool = serde_json::from_value(json!({
            "apiVersion": "adze.sh/v1", "kind": "NodePool",
            "metadata": {"name": "default", "uid": "pool-uid"},
            "spec": {"template": {"spec": {"nodeClassRef":
                {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"}}}},
        }))
        .unwrap();
        let plan = NewClaim {
            name: "default-x1".into(),
            nodepool: "default".into(),
            instance_type: "m5.large".into(),
            instance_type_options: vec!["m5.large".into()],
            zone: "us-east-1a".into(),
            capacity_type: "on-demand".into(),
            price_per_hour: 0.096,
            labels: [(labels::ZONE.to_string(), "us-east-1a".to_string())].into(),
            taints: vec![],
            startup_taints: vec![],
            allocatable: Resources::new(1900, 7 << 30),
            requests: Resources::new(1000, 1 << 30),
            requirements: Requirements::new().with(Requirement::single(labels::ZONE, "us-east-1a")),
            pods: vec!["web/a".into(), "web/spare-buffer-0".into()],
        };
        let uids = [("web/a".to_string(), "u-a".to_string())].into();
        let c = claim_object(&plan, &pool, None, &uids, false);
        let l = c.metadata.labels.clone().unwrap();
        assert_eq!(l[labels::NODEPOOL], "default");
        assert_eq!(l[labels::ZONE], "us-east-1a");
        assert!(!l.contains_key("karpenter.sh/nodepool"));
        let with_karpenter = claim_object(&plan, &pool, None, &uids, true);
        let k = with_karpenter.metadata.labels.unwrap();
        assert_eq!(k["karpenter.sh/nodepool"], "default");
        assert_eq!(k[labels::NODEPOOL], "default");
        assert_eq!(
            nomination::of_claim(&c),
            vec![Nomination {
                namespace: "web".into(),
                name: "a".into(),
                uid: "u-a".into()
            }]
        );
        assert_eq!(
            c.metadata.finalizers,
            Some(vec![TERMINATION_FINALIZER.to_string()])
        );
        assert_eq!(c.spec.requirements[0].key, labels::ZONE);
        assert_eq!(c.spec.resources.requests["cpu"].0, "1");
        assert_eq!(c.metadata.owner_references.unwrap()[0].uid, "pool-uid");
    }
}
