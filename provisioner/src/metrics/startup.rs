//! `adze_pods_startup_duration_seconds`: for every pod created while this replica leads (on
//! any node, whether or not Adze launched capacity for it), the time from its creation to its
//! `Ready` condition turning True, read from the pod watch. Pods that existed before, and pods
//! that never become Ready (failed, or Jobs that finish first), are not observed; each pod is
//! observed once, at its first Ready.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use crate::state::ClusterState;

/// Which pods have been observed; pure, so a test drives it with pods it builds.
pub struct Tracker {
    /// Unix seconds: pods created before this are not observed.
    since: i64,
    observed: HashSet<String>,
}

/// Seconds from `p`'s creation to its first Ready, when it is Ready.
fn startup_seconds(p: &Pod) -> Option<(i64, i64)> {
    let created = p.metadata.creation_timestamp.as_ref()?.0.as_second();
    let ready = p
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready" && c.status == "True")?;
    let at = ready.last_transition_time.as_ref()?.0.as_second();
    Some((created, at))
}

impl Tracker {
    pub fn new(since: i64) -> Self {
        Tracker {
            since,
            observed: HashSet::new(),
        }
    }

    /// The startup durations of pods that became Ready since the last call; forgets pods
    /// that are gone.
    pub fn pass(&mut self, pods: &[Arc<Pod>]) -> Vec<f64> {
        let mut out = Vec::new();
        let mut live = HashSet::with_capacity(self.observed.len());
        for p in pods {
            let Some(uid) = p.metadata.uid.as_deref() else {
                continue;
            };
            if self.observed.contains(uid) {
                live.insert(uid.to_string());
                continue;
            }
            if let Some((created, ready)) = startup_seconds(p)
                && created >= self.since
            {
                out.push((ready - created).max(0) as f64);
                live.insert(uid.to_string());
            }
        }
        self.observed = live;
        out
    }
}

/// Observes the pod watch every `interval`. Never returns.
pub async fn run(state: ClusterState, interval: Duration) {
    let since = k8s_openapi::jiff::Timestamp::now().as_second();
    let mut tracker = Tracker::new(since);
    let histogram = &super::provisioner().pod_startup;
    loop {
        for seconds in tracker.pass(&state.pods.state()) {
            histogram.observe(seconds);
        }
        tokio::time::sleep(interval).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(uid: &str, created: &str, ready_at: Option<&str>) -> Arc<Pod> {
        let mut v = json!({
            "metadata": {"name": uid, "namespace": "ns", "uid": uid, "creationTimestamp": created},
            "status": {"conditions": [{"type": "PodScheduled", "status": "True"}]},
        });
        if let Some(at) = ready_at {
            v["status"]["conditions"] =
                json!([{"type": "Ready", "status": "True", "lastTransitionTime": at}]);
        }
        Arc::new(serde_json::from_value(v).unwrap())
    }

    #[test]
    fn a_pod_created_since_start_is_observed_once_from_creation_to_ready() {
        let since = k8s_openapi::jiff::Timestamp::from_second(1_800_000_000)
            .unwrap()
            .as_second();
        let mut t = Tracker::new(since);
        let old = pod("old", "2020-01-01T00:00:00Z", Some("2020-01-01T00:00:05Z"));
        let created = "2027-01-15T08:00:00Z";
        let waiting = pod("new", created, None);
        assert!(t.pass(&[old.clone(), waiting]).is_empty());
        let ready = pod("new", created, Some("2027-01-15T08:01:30Z"));
        assert_eq!(t.pass(&[old.clone(), ready.clone()]), [90.0]);
        assert!(t.pass(&[old, ready]).is_empty(), "observed once");
    }

    #[test]
    fn observations_reach_the_histogram() {
        let count = || {
            crate::metrics::render()
                .lines()
                .find_map(|l| l.strip_prefix("adze_pods_startup_duration_seconds_count "))
                .map(|n| n.parse::<u64>().unwrap())
                .unwrap()
        };
        let before = count();
        crate::metrics::provisioner().pod_startup.observe(42.0);
        assert_eq!(count(), before + 1);
    }
}
