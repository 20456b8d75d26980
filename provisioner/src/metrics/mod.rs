//! Prometheus metrics: a small registry (counters, gauges, histograms with labels) rendered in
//! the text exposition format, and the provisioner's own metrics. Any controller adds its own
//! with [`registry()`]`.counter(...)` etc. once, then records through the returned handle.
//! One process-wide registry so controllers need no extra plumbing to record.

pub mod server;

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex, OnceLock};

/// Label values, in the order of the metric's label names.
type Key = Vec<String>;

struct Meta {
    name: String,
    help: String,
    labels: Vec<String>,
}

impl Meta {
    fn key(&self, values: &[&str]) -> Key {
        debug_assert_eq!(values.len(), self.labels.len(), "labels of {}", self.name);
        values.iter().map(|v| v.to_string()).collect()
    }

    fn label_text(&self, key: &[String], extra: Option<(&str, &str)>) -> String {
        let mut parts: Vec<String> = self
            .labels
            .iter()
            .zip(key)
            .map(|(n, v)| format!("{n}=\"{}\"", escape(v)))
            .collect();
        if let Some((n, v)) = extra {
            parts.push(format!("{n}=\"{v}\""));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("{{{}}}", parts.join(","))
        }
    }

    fn header(&self, out: &mut String, kind: &str) {
        let _ = writeln!(out, "# HELP {} {}", self.name, self.help);
        let _ = writeln!(out, "# TYPE {} {kind}", self.name);
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn number(v: f64) -> String {
    if v == f64::INFINITY {
        "+Inf".into()
    } else {
        format!("{v}")
    }
}

/// A value per label set that only goes up.
pub struct Counter {
    meta: Meta,
    values: Mutex<BTreeMap<Key, f64>>,
}

impl Counter {
    pub fn inc(&self, labels: &[&str]) {
        self.add(labels, 1.0);
    }

    pub fn add(&self, labels: &[&str], v: f64) {
        *self
            .values
            .lock()
            .unwrap()
            .entry(self.meta.key(labels))
            .or_default() += v;
    }

    pub fn get(&self, labels: &[&str]) -> f64 {
        let key = self.meta.key(labels);
        self.values
            .lock()
            .unwrap()
            .get(&key)
            .copied()
            .unwrap_or(0.0)
    }
}

/// A value per label set that is set to the current level.
pub struct Gauge {
    meta: Meta,
    values: Mutex<BTreeMap<Key, f64>>,
}

impl Gauge {
    pub fn set(&self, labels: &[&str], v: f64) {
        self.values.lock().unwrap().insert(self.meta.key(labels), v);
    }

    pub fn get(&self, labels: &[&str]) -> f64 {
        let key = self.meta.key(labels);
        self.values
            .lock()
            .unwrap()
            .get(&key)
            .copied()
            .unwrap_or(0.0)
    }

    /// Replaces every label set at once, so series for what no longer exists disappear.
    pub fn set_all<'a>(&self, values: impl IntoIterator<Item = (Vec<&'a str>, f64)>) {
        let fresh: BTreeMap<Key, f64> = values
            .into_iter()
            .map(|(labels, v)| (self.meta.key(&labels), v))
            .collect();
        *self.values.lock().unwrap() = fresh;
    }
}

#[derive(Clone, Default)]
struct Buckets {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

/// Observations per label set, counted into cumulative buckets (upper bounds, seconds etc.).
pub struct Histogram {
    meta: Meta,
    bounds: Vec<f64>,
    values: Mutex<BTreeMap<Key, Buckets>>,
}

impl Histogram {
    pub fn observe(&self, labels: &[&str], v: f64) {
        let mut values = self.values.lock().unwrap();
        let b = values
            .entry(self.meta.key(labels))
            .or_insert_with(|| Buckets {
                counts: vec![0; self.bounds.len()],
                ..Buckets::default()
            });
        for (i, bound) in self.bounds.iter().enumerate() {
            if v <= *bound {
                b.counts[i] += 1;
            }
        }
        b.sum += v;
        b.count += 1;
    }

    pub fn count(&self, labels: &[&str]) -> u64 {
        let key = self.meta.key(labels);
        self.values.lock().unwrap().get(&key).map_or(0, |b| b.count)
    }
}

enum Metric {
    Counter(Arc<Counter>),
    Gauge(Arc<Gauge>),
    Histogram(Arc<Histogram>),
}

/// The metrics of one process, rendered together on `/metrics`.
#[derive(Default)]
pub struct Registry {
    metrics: Mutex<Vec<Metric>>,
}

fn meta(name: &str, help: &str, labels: &[&str]) -> Meta {
    Meta {
        name: name.into(),
        help: help.into(),
        labels: labels.iter().map(|l| l.to_string()).collect(),
    }
}

impl Registry {
    pub fn counter(&self, name: &str, help: &str, labels: &[&str]) -> Arc<Counter> {
        let c = Arc::new(Counter {
            meta: meta(name, help, labels),
            values: Mutex::default(),
        });
        self.metrics
            .lock()
            .unwrap()
            .push(Metric::Counter(c.clone()));
        c
    }

    pub fn gauge(&self, name: &str, help: &str, labels: &[&str]) -> Arc<Gauge> {
        let g = Arc::new(Gauge {
            meta: meta(name, help, labels),
            values: Mutex::default(),
        });
        self.metrics.lock().unwrap().push(Metric::Gauge(g.clone()));
        g
    }

    /// `bounds` are the buckets' upper bounds, ascending; `+Inf` is added.
    pub fn histogram(
        &self,
        name: &str,
        help: &str,
        labels: &[&str],
        bounds: &[f64],
    ) -> Arc<Histogram> {
        let mut bounds = bounds.to_vec();
        bounds.push(f64::INFINITY);
        let h = Arc::new(Histogram {
            meta: meta(name, help, labels),
            bounds,
            values: Mutex::default(),
        });
        self.metrics
            .lock()
            .unwrap()
            .push(Metric::Histogram(h.clone()));
        h
    }

    /// The Prometheus text exposition format (version 0.0.4).
    pub fn render(&self) -> String {
        let mut out = String::new();
        for m in self.metrics.lock().unwrap().iter() {
            match m {
                Metric::Counter(c) => {
                    c.meta.header(&mut out, "counter");
                    for (k, v) in c.values.lock().unwrap().iter() {
                        let _ = writeln!(
                            out,
                            "{}{} {}",
                            c.meta.name,
                            c.meta.label_text(k, None),
                            number(*v)
                        );
                    }
                }
                Metric::Gauge(g) => {
                    g.meta.header(&mut out, "gauge");
                    for (k, v) in g.values.lock().unwrap().iter() {
                        let _ = writeln!(
                            out,
                            "{}{} {}",
                            g.meta.name,
                            g.meta.label_text(k, None),
                            number(*v)
                        );
                    }
                }
                Metric::Histogram(h) => {
                    h.meta.header(&mut out, "histogram");
                    for (k, b) in h.values.lock().unwrap().iter() {
                        for (bound, count) in h.bounds.iter().zip(&b.counts) {
                            let le = number(*bound);
                            let labels = h.meta.label_text(k, Some(("le", &le)));
                            let _ = writeln!(out, "{}_bucket{labels} {count}", h.meta.name);
                        }
                        let labels = h.meta.label_text(k, None);
                        let _ = writeln!(out, "{}_sum{labels} {}", h.meta.name, number(b.sum));
                        let _ = writeln!(out, "{}_count{labels} {}", h.meta.name, b.count);
                    }
                }
            }
        }
        out
    }
}

/// The process-wide registry `/metrics` serves.
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Registry::default)
}

/// The provisioner's metrics (names prefixed `adze_`).
pub struct Provisioner {
    /// Pending pods that no node or in-flight NodeClaim holds, as of the last pass.
    pub pods_pending: Arc<Gauge>,
    /// One provisioning pass: snapshot + scheduling core, seconds.
    pub scheduling_duration: Arc<Histogram>,
    pub nodeclaims_created: Arc<Counter>,
    pub nodeclaims_launched: Arc<Counter>,
    pub nodeclaims_registered: Arc<Counter>,
    pub nodeclaims_initialized: Arc<Counter>,
    /// Deleted by Adze, by reason (registration_timeout, insufficient_capacity, instance_gone, ...).
    pub nodeclaims_terminated: Arc<Counter>,
    /// Failed cloud calls by operation (create, delete, get, list).
    pub cloud_errors: Arc<Counter>,
    /// 1 while this replica holds the leader lease.
    pub leader: Arc<Gauge>,
    /// USD per hour of each offering the cloud provider reports (type × zone × capacity type).
    pub offering_price: Arc<Gauge>,
    /// Interruption queue messages by what became of them (malformed, acted, ...).
    pub interruption_messages: Arc<Counter>,
}

pub fn provisioner() -> &'static Provisioner {
    static METRICS: OnceLock<Provisioner> = OnceLock::new();
    METRICS.get_or_init(|| {
        let r = registry();
        let claims = |what: &str| {
            r.counter(
                &format!("adze_nodeclaims_{what}_total"),
                &format!("NodeClaims {what}, by NodePool."),
                &["nodepool"],
            )
        };
        Provisioner {
            pods_pending: r.gauge(
                "adze_pods_pending",
                "Pending pods no node or in-flight NodeClaim holds, at the last provisioning pass.",
                &[],
            ),
            scheduling_duration: r.histogram(
                "adze_scheduling_duration_seconds",
                "Time to snapshot the cluster and run the scheduling core for one batch.",
                &[],
                &[
                    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                ],
            ),
            nodeclaims_created: claims("created"),
            nodeclaims_launched: claims("launched"),
            nodeclaims_registered: claims("registered"),
            nodeclaims_initialized: claims("initialized"),
            nodeclaims_terminated: r.counter(
                "adze_nodeclaims_terminated_total",
                "NodeClaims Adze deleted, by reason.",
                &["reason"],
            ),
            cloud_errors: r.counter(
                "adze_cloudprovider_errors_total",
                "Failed cloud provider calls, by operation and error.",
                &["op", "error"],
            ),
            leader: r.gauge(
                "adze_leader",
                "1 while this replica holds the leader lease, else 0.",
                &[],
            ),
            offering_price: r.gauge(
                "adze_cloudprovider_offering_price_dollars",
                "Hourly price of each offering (instance type, zone, capacity type) as the cloud provider prices it for scheduling.",
                &["instance_type", "zone", "capacity_type"],
            ),
            interruption_messages: r.counter(
                "adze_interruption_messages_total",
                "Interruption queue (SQS) messages by result: acted, no_action, malformed (logged and deleted), failed (left for a retry).",
                &["result"],
            ),
        }
    })
}

/// Brings `counter` up to the absolute counts a loop keeps elsewhere (the AWS crate counts with
/// atomics and knows nothing of this registry).
pub fn catch_up(counter: &Counter, totals: &[(&str, u64)]) {
    for (label, total) in totals {
        let behind = *total as f64 - counter.get(&[label]);
        if behind > 0.0 {
            counter.add(&[label], behind);
        }
    }
}

/// Publishes the price of every offering of `types` (the cloud provider's current catalog).
pub fn record_offering_prices(gauge: &Gauge, types: &[Arc<adze_scheduling::InstanceType>]) {
    gauge.set_all(types.iter().flat_map(|t| {
        t.offerings.iter().map(|o| {
            (
                vec![t.name.as_str(), o.zone.as_str(), o.capacity_type.as_str()],
                o.price,
            )
        })
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catch_up_adds_only_what_is_new_and_never_goes_down() {
        let r = Registry::default();
        let c = r.counter("msgs", "Messages.", &["result"]);
        catch_up(&c, &[("malformed", 2), ("acted", 0)]);
        catch_up(&c, &[("malformed", 3), ("acted", 1)]);
        assert_eq!(c.get(&["malformed"]), 3.0);
        assert_eq!(c.get(&["acted"]), 1.0);
        catch_up(&c, &[("malformed", 1)]);
        assert_eq!(c.get(&["malformed"]), 3.0, "a counter never goes down");
    }

    #[test]
    fn offering_prices_are_published_per_type_zone_and_capacity_type_and_replaced() {
        let r = Registry::default();
        let g = r.gauge(
            "price",
            "Price.",
            &["instance_type", "zone", "capacity_type"],
        );
        let catalog = adze_scheduling::catalog::embedded();
        let m5: Vec<_> = catalog
            .iter()
            .filter(|t| t.name == "m5.large")
            .cloned()
            .collect();
        assert_eq!(m5.len(), 1);
        record_offering_prices(&g, &m5);
        let od = m5[0]
            .offerings
            .iter()
            .find(|o| o.capacity_type == "on-demand")
            .unwrap();
        assert_eq!(g.get(&["m5.large", &od.zone, "on-demand"]), od.price);
        let text = r.render();
        let series = text.lines().filter(|l| l.starts_with("price{")).count();
        assert_eq!(series, m5[0].offerings.len(), "{text}");
        record_offering_prices(&g, &[]);
        assert!(!r.render().contains("price{"), "stale prices are dropped");
    }

    #[test]
    fn renders_counters_gauges_and_cumulative_histogram_buckets() {
        let r = Registry::default();
        let c = r.counter("x_total", "Things.", &["op"]);
        c.inc(&["create"]);
        c.add(&["create"], 2.0);
        c.inc(&["de\"lete"]);
        let g = r.gauge("up", "Up.", &[]);
        g.set(&[], 1.0);
        let h = r.histogram("d_seconds", "Duration.", &[], &[0.1, 1.0]);
        h.observe(&[], 0.05);
        h.observe(&[], 0.5);
        h.observe(&[], 5.0);
        let text = r.render();
        assert!(text.contains("# TYPE x_total counter\n"), "{text}");
        assert!(text.contains("x_total{op=\"create\"} 3\n"), "{text}");
        assert!(text.contains("x_total{op=\"de\\\"lete\"} 1\n"), "{text}");
        assert!(text.contains("up 1\n"), "{text}");
        assert!(text.contains("d_seconds_bucket{le=\"0.1\"} 1\n"), "{text}");
        assert!(text.contains("d_seconds_bucket{le=\"1\"} 2\n"), "{text}");
        assert!(text.contains("d_seconds_bucket{le=\"+Inf\"} 3\n"), "{text}");
        assert!(text.contains("d_seconds_count 3\n"), "{text}");
        assert!(text.contains("d_seconds_sum 5.55\n"), "{text}");
        assert_eq!(h.count(&[]), 3);
        assert_eq!(c.get(&["create"]), 3.0);
    }
}
