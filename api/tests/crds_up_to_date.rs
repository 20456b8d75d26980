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

/// The CapacityBuffer CRD, and the chart's copy its template reads.
#[test]
fn committed_capacity_buffer_crd_matches_the_types() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let crd = crds::capacity_buffer();
    let name = crds::file_name(&crd);
    assert_eq!(name, "autoscaling.x-k8s.io_capacitybuffers.yaml");
    for dir in [crds::CAPACITY_BUFFER_DIR, crds::CAPACITY_BUFFER_CHART_COPY] {
        let committed = std::fs::read_to_string(root.join(dir).join(&name)).unwrap_or_default();
        assert!(
            committed == crds::to_yaml(&crd),
            "{dir}/{name} is stale or missing; regenerate it from the workspace root with:\n  {}",
            crds::REGENERATE_CAPACITY_BUFFER_COMMAND
        );
    }
}

/// What a user of Karpenter's CRD or Cluster Autoscaler's expects of it: the same group,
/// version, names, scope and status subresource, so objects written for either are read here.
#[test]
fn the_capacity_buffer_crd_has_the_upstream_names() {
    let crd = serde_json::to_value(crds::capacity_buffer()).unwrap();
    let spec = &crd["spec"];
    assert_eq!(
        crd["metadata"]["name"],
        "capacitybuffers.autoscaling.x-k8s.io"
    );
    assert_eq!(spec["group"], "autoscaling.x-k8s.io");
    assert_eq!(spec["scope"], "Namespaced");
    assert_eq!(spec["names"]["kind"], "CapacityBuffer");
    assert_eq!(spec["names"]["plural"], "capacitybuffers");
    assert_eq!(spec["names"]["shortNames"][0], "cb");
    let v = &spec["versions"][0];
    assert_eq!(v["name"], "v1alpha1");
    assert!(v["subresources"]["status"].is_object());
    let props = &v["schema"]["openAPIV3Schema"]["properties"];
    let spec_fields: Vec<&str> = props["spec"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        spec_fields,
        [
            "limits",
            "percentage",
            "podTemplateRef",
            "provisioningStrategy",
            "replicas",
            "scalableRef"
        ]
    );
    let status_fields: Vec<&str> = props["status"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        status_fields,
        [
            "conditions",
            "podTemplateGeneration",
            "podTemplateRef",
            "provisioningStrategy",
            "replicas"
        ]
    );
}
