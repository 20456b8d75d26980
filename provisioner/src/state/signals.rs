//! The extender's "fails everywhere" signal (extender/src/signal.rs): core/v1 Events with
//! reason [`FAILED_EVERY_NODE_REASON`] from [`EXTENDER_COMPONENT`], watched by those two
//! fields (both field selectors of core/v1 Events since long before 1.20), kept as the pod
//! UIDs they name, each with the Event's namespace: a pod counts only when both match, since an
//! Event can only be created in the namespace of the object it names (the apiserver checks),
//! so whoever may create Events in one namespace cannot signal a pod of another by its UID.
//! A signalled pod counts as pending without waiting for kube-scheduler's
//! `PodScheduled=False/Unschedulable` condition; when no Event comes (extender down, Event
//! lost, RBAC missing), the condition still does and nothing else changes.
//!
//! Bounded: the apiserver deletes Events after its `--event-ttl` and the watch removes them
//! here; beyond [`CAP`] UIDs the oldest are forgotten first (their condition has long come).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, RwLock};

use adze_scheduling::labels::{EXTENDER_COMPONENT, FAILED_EVERY_NODE_REASON};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Event;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};

/// Most pod UIDs held; ~100 bytes each.
pub const CAP: usize = 50_000;

/// The field selector of the watch.
pub fn field_selector() -> String {
    format!("reason={FAILED_EVERY_NODE_REASON},source={EXTENDER_COMPONENT}")
}

/// The pod (UID, namespace) an Event signals, if it is the extender's Event about a pod of its
/// own namespace (the apiserver requires that for namespaced objects; checked again here).
pub fn signalled_uid(e: &Event) -> Option<(String, String)> {
    let o = &e.involved_object;
    let from_extender = e.reason.as_deref() == Some(FAILED_EVERY_NODE_REASON)
        && e.source.as_ref().and_then(|s| s.component.as_deref()) == Some(EXTENDER_COMPONENT);
    (from_extender
        && o.kind.as_deref() == Some("Pod")
        && o.namespace.is_some()
        && o.namespace == e.metadata.namespace)
        .then(|| o.uid.clone().zip(o.namespace.clone()))
        .flatten()
        .filter(|(u, _)| !u.is_empty())
}

/// Pod UIDs (→ namespace) the extender found no node for, oldest first out beyond [`CAP`].
#[derive(Debug, Default)]
pub struct Uids {
    set: Arc<HashMap<String, String>>,
    order: VecDeque<String>,
}

impl Uids {
    pub fn insert(&mut self, (uid, namespace): (String, String)) {
        if self.set.contains_key(&uid) {
            return;
        }
        Arc::make_mut(&mut self.set).insert(uid.clone(), namespace);
        self.order.push_back(uid);
        while self.set.len() > CAP {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            Arc::make_mut(&mut self.set).remove(&old);
        }
        // Removed UIDs linger in `order`; keep it within twice the set.
        if self.order.len() > CAP.saturating_mul(2) {
            let set = &self.set;
            self.order.retain(|u| set.contains_key(u));
        }
    }

    pub fn remove(&mut self, uid: &str) {
        if self.set.contains_key(uid) {
            Arc::make_mut(&mut self.set).remove(uid);
        }
    }

    /// The set as it is now; cheap (shared until the next change).
    pub fn snapshot(&self) -> Arc<HashMap<String, String>> {
        self.set.clone()
    }

    pub fn len(&self) -> usize {
        self.set.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }
}

/// The watched set, shared with [`super::ClusterState`].
#[derive(Debug, Clone, Default)]
pub struct FailedEveryNode {
    uids: Arc<RwLock<Uids>>,
}

impl FailedEveryNode {
    pub fn snapshot(&self) -> Arc<HashMap<String, String>> {
        self.uids.read().map(|u| u.snapshot()).unwrap_or_default()
    }

    /// Applies one watch event; a relist (Init … InitDone) replaces the whole set.
    pub fn apply(&self, ev: watcher::Event<Event>, relist: &mut Option<Uids>) {
        let Ok(mut uids) = self.uids.write() else {
            return;
        };
        match ev {
            watcher::Event::Init => *relist = Some(Uids::default()),
            watcher::Event::InitApply(e) => {
                if let Some(u) = signalled_uid(&e) {
                    relist.get_or_insert_with(Uids::default).insert(u);
                }
            }
            watcher::Event::InitDone => {
                if let Some(fresh) = relist.take() {
                    *uids = fresh;
                }
            }
            watcher::Event::Apply(e) => {
                if let Some(u) = signalled_uid(&e) {
                    uids.insert(u);
                }
            }
            watcher::Event::Delete(e) => {
                if let Some((u, _)) = signalled_uid(&e) {
                    uids.remove(&u);
                }
            }
        }
    }

    /// Watches the extender's Events for as long as the process runs. Does not wait for the
    /// first list: the signal only speeds provisioning up.
    pub fn start(client: Client) -> FailedEveryNode {
        let me = FailedEveryNode::default();
        let api: Api<Event> = Api::all(client);
        let stream =
            watcher(api, watcher::Config::default().fields(&field_selector())).default_backoff();
        let shared = me.clone();
        tokio::spawn(async move {
            let mut relist = None;
            let mut stream = std::pin::pin!(stream);
            while let Some(ev) = stream.next().await {
                match ev {
                    Ok(ev) => shared.apply(ev, &mut relist),
                    Err(e) => tracing::warn!(error = %e, "watch error (extender Events)"),
                }
            }
        });
        me
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(ns: &str, pod_ns: &str, uid: &str, reason: &str, component: &str) -> Event {
        serde_json::from_value(json!({
            "metadata": {"name": format!("p.{uid}"), "namespace": ns},
            "involvedObject": {"kind": "Pod", "namespace": pod_ns, "name": "p", "uid": uid},
            "reason": reason, "source": {"component": component},
        }))
        .unwrap()
    }

    fn good(uid: &str) -> Event {
        event("a", "a", uid, FAILED_EVERY_NODE_REASON, EXTENDER_COMPONENT)
    }

    #[test]
    fn only_the_extenders_events_about_a_pod_of_their_namespace_count() {
        assert_eq!(signalled_uid(&good("u1")), Some(("u1".into(), "a".into())));
        let other_reason = event("a", "a", "u1", "FailedScheduling", EXTENDER_COMPONENT);
        let other_source = event(
            "a",
            "a",
            "u1",
            FAILED_EVERY_NODE_REASON,
            "default-scheduler",
        );
        let other_namespace = event("a", "b", "u1", FAILED_EVERY_NODE_REASON, EXTENDER_COMPONENT);
        let no_uid = good("");
        let mut node = good("u1");
        node.involved_object.kind = Some("Node".into());
        for e in [other_reason, other_source, other_namespace, no_uid, node] {
            assert_eq!(signalled_uid(&e), None, "{e:?}");
        }
        assert_eq!(
            field_selector(),
            "reason=FailedEveryNode,source=adze-extender"
        );
    }

    fn only(uid: &str) -> HashMap<String, String> {
        HashMap::from([(uid.to_string(), "a".to_string())])
    }

    #[test]
    fn watch_events_add_and_remove_and_a_relist_replaces_the_set() {
        let s = FailedEveryNode::default();
        let mut relist = None;
        s.apply(watcher::Event::Apply(good("u1")), &mut relist);
        s.apply(watcher::Event::Apply(good("u2")), &mut relist);
        let before = s.snapshot();
        s.apply(watcher::Event::Delete(good("u1")), &mut relist);
        assert_eq!(*s.snapshot(), only("u2"));
        assert_eq!(before.len(), 2, "a snapshot taken earlier does not change");
        s.apply(watcher::Event::Init, &mut relist);
        s.apply(watcher::Event::InitApply(good("u3")), &mut relist);
        assert!(
            s.snapshot().contains_key("u2"),
            "the old set serves until the list is done"
        );
        s.apply(watcher::Event::InitDone, &mut relist);
        assert_eq!(*s.snapshot(), only("u3"));
    }

    #[test]
    fn the_set_never_holds_more_than_cap_oldest_out_first() {
        let mut u = Uids::default();
        for i in 0..CAP + 10 {
            u.insert((format!("u{i}"), "a".into()));
            if i % 3 == 0 {
                u.remove(&format!("u{i}"));
            }
        }
        assert!(u.len() <= CAP);
        for i in 0..3 * CAP {
            u.insert((format!("v{i}"), "a".into()));
        }
        assert_eq!(u.len(), CAP);
        assert!(u.order.len() <= 2 * CAP);
        let set = u.snapshot();
        assert!(set.contains_key(&format!("v{}", 3 * CAP - 1)));
        assert!(!set.contains_key("v0"), "the oldest went first");
    }
}
