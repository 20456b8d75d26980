//! What the provisioner, the extender and the agent share about `/metrics`, on top of
//! `prometheus-client`:
//!
//! - [`add`] registers a metric under the name PromQL sees (`adze_..._total` for a counter;
//!   the library appends `_total` itself, so it is stripped here) and lists its family
//!   (`# HELP`/`# TYPE`) even before the first sample, as the dashboard checks expect;
//! - [`build_info`] registers `adze_build_info{version}` = 1;
//! - [`render`] writes the OpenMetrics text served with [`CONTENT_TYPE`];
//! - [`families`] reads an exposition back into family names, for tests and inventories.

use std::collections::BTreeMap;
use std::fmt::Debug;

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

pub use prometheus_client;

/// The `Content-Type` of [`render`]'s text; Prometheus 2.x and later parse it as OpenMetrics.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A metric whose family is encoded even with no sample yet. `prometheus-client` leaves an
/// empty [`Family`] out altogether; a family that is listed but empty tells a scrape (and
/// `charts/ci/metrics-used.py`) that the binary serves it.
#[derive(Debug)]
struct Listed<M>(M);

impl<M: EncodeMetric> EncodeMetric for Listed<M> {
    fn encode(&self, encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        self.0.encode(encoder)
    }

    fn metric_type(&self) -> MetricType {
        self.0.metric_type()
    }
}

/// Registers `metric` as `name` and hands it back for recording. `name` is the name PromQL
/// selects: a counter's ends in `_total` (the library adds that suffix, so it is taken off
/// here). `help` is one sentence; its full stop is the library's.
pub fn add<M>(registry: &mut Registry, name: &str, help: &str, metric: M) -> M
where
    M: EncodeMetric + Clone + Debug + Send + Sync + 'static,
{
    let name = match metric.metric_type() {
        MetricType::Counter => name
            .strip_suffix("_total")
            .unwrap_or_else(|| panic!("counter {name} must end in _total")),
        _ => name,
    };
    registry.register(name, help.trim_end_matches('.'), Listed(metric.clone()));
    metric
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: String,
}

/// `adze_build_info{version}` = 1: the binary's version (the workspace's `CARGO_PKG_VERSION`).
pub fn build_info(registry: &mut Registry) {
    let info: Family<BuildLabels, Gauge> = add(
        registry,
        "adze_build_info",
        "A metric with a constant 1 value labelled by the version Adze was built from.",
        Family::default(),
    );
    info.get_or_create(&BuildLabels {
        version: env!("CARGO_PKG_VERSION").into(),
    })
    .set(1);
}

/// The registry's OpenMetrics text, `# EOF` included.
pub fn render(registry: &Registry) -> String {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, registry)
        .expect("writing to a String cannot fail");
    out
}

/// The families an exposition lists, by the name PromQL selects (a counter's with `_total`,
/// whether the text is OpenMetrics or the 0.0.4 format), with their type and help text.
pub fn families(text: &str) -> BTreeMap<String, (String, String)> {
    let mut types = BTreeMap::new();
    let mut helps = BTreeMap::new();
    for line in text.lines() {
        let mut words = line.splitn(4, ' ');
        let (Some("#"), Some(kind), Some(name)) = (words.next(), words.next(), words.next()) else {
            continue;
        };
        let rest = words.next().unwrap_or_default().to_string();
        match kind {
            "TYPE" => types.insert(name.to_string(), rest),
            "HELP" => helps.insert(name.to_string(), rest),
            _ => None,
        };
    }
    types
        .into_iter()
        .map(|(name, kind)| {
            let help = helps.remove(&name).unwrap_or_default();
            let name = if kind == "counter" && !name.ends_with("_total") {
                format!("{name}_total")
            } else {
                name
            };
            (name, (kind, help))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::metrics::counter::Counter;

    #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
    struct Op {
        op: String,
    }

    #[test]
    fn counters_keep_their_total_name_and_empty_families_are_still_listed() {
        let mut r = Registry::default();
        let calls: Family<Op, Counter> = add(
            &mut r,
            "x_calls_total",
            "Calls, by operation.",
            Family::default(),
        );
        let up: Gauge = add(&mut r, "x_up", "Up.", Gauge::default());
        up.set(1);
        let text = render(&r);
        assert!(
            text.contains("# HELP x_calls Calls, by operation.\n"),
            "{text}"
        );
        assert!(text.contains("# TYPE x_calls counter\n"), "{text}");
        assert!(!text.contains("x_calls_total{"), "no sample yet: {text}");
        assert!(text.contains("x_up 1\n"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
        calls.get_or_create(&Op { op: "get".into() }).inc();
        assert!(render(&r).contains("x_calls_total{op=\"get\"} 1\n"));
        let f = families(&render(&r));
        assert_eq!(
            f.keys().collect::<Vec<_>>(),
            ["x_calls_total", "x_up"],
            "{f:?}"
        );
        assert_eq!(
            f["x_calls_total"],
            ("counter".into(), "Calls, by operation.".into())
        );
    }

    #[test]
    fn families_reads_the_old_text_format_the_same_way() {
        let old = "# HELP x_calls_total Calls, by operation.\n# TYPE x_calls_total counter\n";
        let new = "# HELP x_calls Calls, by operation.\n# TYPE x_calls counter\n# EOF\n";
        assert_eq!(families(old), families(new));
    }

    #[test]
    #[should_panic(expected = "must end in _total")]
    fn a_counter_named_without_total_is_refused() {
        add(
            &mut Registry::default(),
            "x_calls",
            "Calls.",
            Counter::<u64>::default(),
        );
    }

    #[test]
    fn build_info_is_one_labelled_by_version() {
        let mut r = Registry::default();
        build_info(&mut r);
        let text = render(&r);
        let want = format!(
            "adze_build_info{{version=\"{}\"}} 1\n",
            env!("CARGO_PKG_VERSION")
        );
        assert!(text.contains(&want), "{text}");
        assert!(text.contains("# TYPE adze_build_info gauge\n"), "{text}");
    }
}
