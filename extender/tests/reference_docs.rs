//! docs/reference/metrics.md's extender section is what the extender's registry serves.
//! Fails when the page is stale; `ADZE_REGENERATE_DOCS=1` (docs/reference/generate.sh)
//! rewrites it instead.

use std::path::Path;

#[test]
fn extender_metrics_reference_is_current() {
    let text = adze_extender::server::Metrics::default().render((0, 0, 0), true);
    adze_cli::reference::sync_section(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/reference/metrics.md"),
        "adze-extender metrics",
        &adze_cli::reference::metrics_markdown(&text),
    );
}
