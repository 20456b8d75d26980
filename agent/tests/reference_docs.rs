//! docs/reference/metrics.md's agent section is what the agent's registry serves.
//! Fails when the page is stale; `ADZE_REGENERATE_DOCS=1` (docs/reference/generate.sh)
//! rewrites it instead.

use std::path::Path;

#[test]
fn agent_metrics_reference_is_current() {
    let text = adze_agent::status::Stats::default().render();
    adze_cli::reference::sync_section(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/reference/metrics.md"),
        "adze-agent metrics",
        &adze_cli::reference::metrics_markdown(&text),
    );
}
