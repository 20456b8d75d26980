//! `run --vpa-predictions`: lists the cluster's VerticalPodAutoscalers every
//! [`READ_INTERVAL`] and hands the latest list to the disruption controller, which plans the
//! pods it moves with their recommendation ([`adze_scheduling::vpa`] is the rule,
//! [`super::vpa`] reads the objects; this only lists).
//!
//! A list, not a watch: the VPA API is a CRD many clusters do not install, and a watch of an
//! API that is not served fails and must be restarted by hand. When the list answers 404
//! (the CRD is absent) that is said once at info, no VPA is used and the list is tried again
//! after [`ABSENT_RETRY`]; `run` never fails for it. Any other failure (403 without the
//! chart's `provisioner.vpaPredictions` RBAC, a timeout) is logged and the last list is kept.
//! Karpenter's prediction controller behaves alike (a polling list every 30 s, a minute's
//! wait while the CRD is absent).
//!
//! The disruption controller waits for the first reading, whatever it came to, before its
//! first pass, so nothing is decided on current requests just because the list had not been
//! read yet.

use std::sync::Arc;
use std::time::Duration;

use adze_scheduling::vpa::Vpa;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use tokio::sync::watch;

use super::vpa::{API_VERSION, ListCache, read_list};

/// How often the VPAs are listed while the API is served.
pub const READ_INTERVAL: Duration = Duration::from_secs(30);
/// How long to wait before listing again when the API is not served.
pub const ABSENT_RETRY: Duration = Duration::from_secs(60);
/// VPAs per list request (a continue token fetches the rest).
const PAGE_SIZE: u32 = 500;

/// The latest VPAs read: `None` until the first reading, then the list that reading (or a
/// later one) kept.
pub type VpaFeed = watch::Receiver<Option<Arc<Vec<Vpa>>>>;

/// What one reading came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reading {
    /// Listed: this many VPAs kept, this many left out as unreadable.
    Read { vpas: usize, unreadable: usize },
    /// The API is not served (404): no VPAs.
    Absent,
    /// The list failed otherwise; the last list is kept.
    Failed(String),
}

impl Reading {
    /// When to list again after this reading.
    pub fn next_in(&self) -> Duration {
        match self {
            Reading::Absent => ABSENT_RETRY,
            _ => READ_INTERVAL,
        }
    }
}

/// The `autoscaling.k8s.io/v1` VerticalPodAutoscaler resource.
pub fn resource() -> ApiResource {
    ApiResource {
        group: "autoscaling.k8s.io".into(),
        version: "v1".into(),
        api_version: API_VERSION.into(),
        kind: "VerticalPodAutoscaler".into(),
        plural: "verticalpodautoscalers".into(),
    }
}

pub struct VpaReader {
    api: Api<DynamicObject>,
    feed: watch::Sender<Option<Arc<Vec<Vpa>>>>,
    cache: ListCache,
    /// The last reading found the API absent (said once, until it is served again).
    absent: bool,
}

/// A reader listing VPAs cluster-wide through `client`, and the feed it publishes to.
pub fn reader(client: Client) -> (VpaReader, VpaFeed) {
    let (feed, rx) = watch::channel(None);
    let reader = VpaReader {
        api: Api::all_with(client, &resource()),
        feed,
        cache: ListCache::default(),
        absent: false,
    };
    (reader, rx)
}

impl VpaReader {
    pub async fn run(mut self) {
        tracing::info!(
            interval_s = READ_INTERVAL.as_secs(),
            "VPA predictions: listing VerticalPodAutoscalers (autoscaling.k8s.io/v1)"
        );
        loop {
            let reading = self.read().await;
            tokio::time::sleep(reading.next_in()).await;
        }
    }

    /// Lists the VPAs once and publishes what is kept.
    #[tracing::instrument(skip(self))]
    pub async fn read(&mut self) -> Reading {
        let reading = match self.list().await {
            Ok(items) => {
                let listed = read_list(&items, &mut self.cache);
                for problem in &listed.new_problems {
                    tracing::warn!(%problem, "VPA predictions: VerticalPodAutoscaler left out");
                }
                if std::mem::take(&mut self.absent) {
                    tracing::info!("VPA predictions: the VerticalPodAutoscaler API is served now");
                }
                let reading = Reading::Read {
                    vpas: listed.vpas.len(),
                    unreadable: listed.unreadable,
                };
                self.feed.send_replace(Some(Arc::new(listed.vpas)));
                reading
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {
                if !std::mem::replace(&mut self.absent, true) {
                    tracing::info!(
                        retry_s = ABSENT_RETRY.as_secs(),
                        "VPA predictions: the cluster serves no VerticalPodAutoscaler API (autoscaling.k8s.io/v1); pods are planned with their current requests until it does"
                    );
                }
                self.cache = ListCache::default();
                self.feed.send_replace(Some(Arc::new(Vec::new())));
                Reading::Absent
            }
            Err(e) => {
                let error = e.to_string();
                tracing::warn!(
                    %error,
                    "VPA predictions: VerticalPodAutoscalers could not be listed (the provisioner needs list on verticalpodautoscalers.autoscaling.k8s.io: the chart's provisioner.vpaPredictions grants it); keeping the last list"
                );
                // The first reading is awaited by disruption: publish an empty list rather
                // than none, so a persistent failure does not hold disruption forever.
                self.feed.send_if_modified(|v| {
                    let first = v.is_none();
                    if first {
                        *v = Some(Arc::new(Vec::new()));
                    }
                    first
                });
                Reading::Failed(error)
            }
        };
        tracing::debug!(?reading, "VPA predictions: read VerticalPodAutoscalers");
        reading
    }

    /// Every VPA, page by page, as JSON.
    async fn list(&self) -> Result<Vec<serde_json::Value>, kube::Error> {
        let mut items = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut lp = ListParams::default().limit(PAGE_SIZE);
            if let Some(t) = &token {
                lp = lp.continue_token(t);
            }
            let page = self.api.list(&lp).await?;
            for o in &page.items {
                items.push(serde_json::to_value(o).map_err(kube::Error::SerdeError)?);
            }
            token = page.metadata.continue_.filter(|t| !t.is_empty());
            if token.is_none() {
                return Ok(items);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A stand-in apiserver on a local port: answers each request with the next scripted
    /// (status, body) and records the request line.
    async fn fake_apiserver(answers: Vec<(u16, String)>) -> (Client, Arc<Mutex<Vec<String>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            for (code, body) in answers {
                let (mut conn, _) = listener.accept().await.unwrap();
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = conn.read(&mut buf).await.unwrap();
                    if n == 0 {
                        break;
                    }
                    head.extend_from_slice(&buf[..n]);
                }
                let line = String::from_utf8_lossy(&head)
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_string();
                log.lock().unwrap().push(line);
                let kind = if body.starts_with('{') {
                    "application/json"
                } else {
                    "text/plain"
                };
                let reply = format!(
                    "HTTP/1.1 {code} X\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                conn.write_all(reply.as_bytes()).await.unwrap();
                conn.shutdown().await.unwrap();
            }
        });
        let config = kube::Config::new(format!("http://{addr}").parse().unwrap());
        (Client::try_from(config).unwrap(), seen)
    }

    fn list(items: serde_json::Value) -> String {
        json!({
            "apiVersion": API_VERSION, "kind": "VerticalPodAutoscalerList",
            "metadata": {"resourceVersion": "10"}, "items": items,
        })
        .to_string()
    }

    fn vpa(name: &str, mode: &str) -> serde_json::Value {
        json!({
            "apiVersion": API_VERSION, "kind": "VerticalPodAutoscaler",
            "metadata": {"name": name, "namespace": "shop", "resourceVersion": "5",
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                     "updatePolicy": {"updateMode": mode}},
            "status": {"recommendation": {"containerRecommendations": [
                {"containerName": "app", "target": {"cpu": "250m", "memory": "512Mi"}}]}},
        })
    }

    /// The API's own answer for a group it does not serve is a plain-text 404; then the CRD
    /// is installed and VPAs are listed (one unreadable, left out); then the identity loses
    /// its permission (403, the last list kept); then the CRD is removed again.
    #[tokio::test]
    async fn absent_api_is_no_vpas_and_no_error_then_lists_are_read_and_kept_through_a_failure() {
        let forbidden = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": "verticalpodautoscalers.autoscaling.k8s.io is forbidden", "reason": "Forbidden", "code": 403})
        .to_string();
        let (client, seen) = fake_apiserver(vec![
            (404, "404 page not found".into()),
            (
                200,
                list(json!([vpa("web", "Auto"), vpa("bad", "Sometimes")])),
            ),
            (403, forbidden),
            (404, "404 page not found".into()),
        ])
        .await;
        let (mut reader, feed) = reader(client);
        assert_eq!(
            *feed.borrow(),
            None,
            "nothing published before the first reading"
        );

        let r = reader.read().await;
        assert_eq!(r, Reading::Absent);
        assert_eq!(r.next_in(), ABSENT_RETRY);
        assert_eq!(feed.borrow().as_deref(), Some(&Vec::new()));

        let r = reader.read().await;
        assert_eq!(
            r,
            Reading::Read {
                vpas: 1,
                unreadable: 1
            }
        );
        assert_eq!(r.next_in(), READ_INTERVAL);
        let vpas = feed.borrow().clone().unwrap();
        assert_eq!(vpas.len(), 1);
        assert_eq!(vpas[0].name, "web");
        assert_eq!(vpas[0].targets["app"]["memory"], 512 << 20);

        let r = reader.read().await;
        assert!(
            matches!(&r, Reading::Failed(e) if e.contains("forbidden")),
            "{r:?}"
        );
        assert_eq!(
            feed.borrow().as_ref().map(|v| v.len()),
            Some(1),
            "the last list is kept"
        );

        assert_eq!(reader.read().await, Reading::Absent);
        assert_eq!(feed.borrow().as_deref(), Some(&Vec::new()));

        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 4);
        for line in &seen {
            assert!(
                line.starts_with("GET /apis/autoscaling.k8s.io/v1/verticalpodautoscalers?"),
                "cluster-wide list of the v1 API: {line}"
            );
        }
    }

    /// A first reading that fails still publishes (an empty list), so the disruption
    /// controller, which waits for the first reading, is not held by a missing permission.
    #[tokio::test]
    async fn a_failed_first_reading_publishes_no_vpas() {
        let (client, _) = fake_apiserver(vec![(500, "etcd is unhappy".into())]).await;
        let (mut reader, feed) = reader(client);
        assert!(matches!(reader.read().await, Reading::Failed(_)));
        assert_eq!(feed.borrow().as_deref(), Some(&Vec::new()));
    }
}
