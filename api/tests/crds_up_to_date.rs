//! The committed CRDs under manifests/crds/ match what the Rust types generate.

use std::path::PathBuf;

use adze_api::crds;

#[test]
fn committed_crds_match_the_types() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../manifests/crds");
    let mut stale = Vec::new();
    for crd in crds::all() {
        let name = crds::file_name(&crd);
        let committed = std::fs::read_to_string(dir.join(&name)).unwrap_or_default();
        if committed != crds::to_yaml(&crd) {
            stale.push(format!("manifests/crds/{name}"));
        }
    }
    assert!(
        stale.is_empty(),
        "stale or missing CRDs: {}\nregenerate them from the workspace root with:\n  {}",
        stale.join(", "),
        crds::REGENERATE_COMMAND
    );
}
