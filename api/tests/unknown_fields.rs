//! Fields a NodePool, EC2NodeClass, NodeOverlay, NodeClaim or CapacityBuffer carries that its
//! CRD schema does not declare are refused at their path (or, stripping, taken out and named).

mod common;

use adze_api::validation::{
    UNKNOWN_FIELDS_SHOWN, check_unknown_fields, strip_unknown_fields, unknown_fields,
};
use common::fixture_json;
use serde_json::{Value, json};

fn paths(kind: &str, object: &Value) -> Vec<String> {
    unknown_fields(kind, object)
        .into_iter()
        .map(|e| e.path)
        .collect()
}

#[test]
fn the_fixtures_have_no_unknown_fields() {
    for (kind, fixture) in [
        ("NodePool", "nodepool.yaml"),
        ("EC2NodeClass", "ec2nodeclass.yaml"),
        ("NodeOverlay", "nodeoverlay.yaml"),
        ("NodeClaim", "nodeclaim.yaml"),
    ] {
        let object = fixture_json(fixture);
        assert_eq!(paths(kind, &object), Vec::<String>::new(), "{fixture}");
    }
}

#[test]
fn a_nodepool_field_not_in_the_schema_is_refused_at_its_path() {
    let mut pool = fixture_json("nodepool.yaml");
    pool["spec"]["template2"] = json!({"spec": {}});
    pool["spec"]["template"]["spec"]["requirments"] = json!([]);
    pool["spec"]["template"]["spec"]["requirements"][1]["valeus"] = json!(["x"]);
    pool["bogus"] = json!(1);
    let mut got = paths("NodePool", &pool);
    got.sort();
    assert_eq!(
        got,
        [
            "bogus",
            "spec.template.spec.requirements[1].valeus",
            "spec.template.spec.requirments",
            "spec.template2",
        ]
    );
    let err = check_unknown_fields("NodePool", &pool).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("NodePool \"general-purpose\" is invalid:"),
        "{text}"
    );
    assert!(
        text.contains("\n  - spec.template2: unknown field (known here: "),
        "{text}"
    );
    // The known names at the misspelling's level point at the right one.
    let at = err
        .errors
        .iter()
        .find(|e| e.path == "spec.template.spec.requirments")
        .unwrap();
    assert!(at.message.contains("requirements"), "{}", at.message);
}

#[test]
fn map_keys_are_not_field_names() {
    let mut pool = fixture_json("nodepool.yaml");
    pool["metadata"]["labels"] = json!({"any.example.com/key": "v"});
    pool["metadata"]["annotations"] = json!({"lables": "v"});
    pool["spec"]["template"]["metadata"]["labels"]["any.example.com/key"] = json!("v");
    pool["spec"]["limits"] = json!({"nvidia.com/gpu": "4", "cpu": "100"});
    assert_eq!(paths("NodePool", &pool), Vec::<String>::new());
    // The template's metadata is Adze's own type, checked like any other field.
    pool["spec"]["template"]["metadata"]["name"] = json!("x");
    assert_eq!(paths("NodePool", &pool), ["spec.template.metadata.name"]);
}

#[test]
fn every_kind_is_checked() {
    let mut class = fixture_json("ec2nodeclass.yaml");
    class["spec"]["subnetSelectorTerms"][0]["tagz"] = json!({});
    assert_eq!(
        paths("EC2NodeClass", &class),
        ["spec.subnetSelectorTerms[0].tagz"]
    );
    let mut overlay = fixture_json("nodeoverlay.yaml");
    overlay["spec"]["wieght"] = json!(3);
    assert_eq!(paths("NodeOverlay", &overlay), ["spec.wieght"]);
    let mut claim = fixture_json("nodeclaim.yaml");
    claim["spec"]["kubelet"] = json!({"maxPods": 10});
    claim["status"]["bogus"] = json!("x");
    let mut got = paths("NodeClaim", &claim);
    got.sort();
    assert_eq!(got, ["spec.kubelet", "status.bogus"]);
    let buffer = json!({
        "apiVersion": "autoscaling.x-k8s.io/v1alpha1",
        "kind": "CapacityBuffer",
        "metadata": {"name": "b", "namespace": "default"},
        "spec": {"replicas": 2, "podTemplateRef": {"name": "t", "nme": "u"}, "replica": 3},
    });
    let mut got = paths("CapacityBuffer", &buffer);
    got.sort();
    assert_eq!(got, ["spec.podTemplateRef.nme", "spec.replica"]);
    // A kind without a CRD schema has only its metadata checked here.
    assert!(paths("Pod", &json!({"spec": {"x": 1}})).is_empty());
    assert_eq!(
        paths("Pod", &json!({"metadata": {"name": "p", "nmae": "q"}})),
        ["metadata.nmae"]
    );
}

#[test]
fn metadata_is_checked_against_object_meta() {
    for kind in adze_api::validation::SCHEMA_KINDS {
        let mut object = json!({"metadata": {"name": "a", "lables": {"x": "y"}}, "spec": {}});
        object["metadata"]["nmae"] = json!("x");
        let errors = unknown_fields(kind, &object);
        let got: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert!(got.contains(&"metadata.lables"), "{kind}: {got:?}");
        assert!(got.contains(&"metadata.nmae"), "{kind}: {got:?}");
        let lables = errors.iter().find(|e| e.path == "metadata.lables").unwrap();
        assert!(lables.message.contains("labels"), "{}", lables.message);
    }
    // Every ObjectMeta field is known, and so are the fields of an owner reference.
    let mut pool = fixture_json("nodepool.yaml");
    pool["metadata"] = json!({
        "name": "a", "generateName": "a-", "namespace": "n", "labels": {"a": "b"},
        "annotations": {"a": "b"}, "uid": "u", "resourceVersion": "1", "generation": 2,
        "creationTimestamp": "2026-01-01T00:00:00Z", "deletionTimestamp": null,
        "deletionGracePeriodSeconds": 30, "finalizers": ["f"], "selfLink": "/x",
        "managedFields": [{"manager": "m", "operation": "Apply", "apiVersion": "v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"anything": {}}},
            "time": "2026-01-01T00:00:00Z", "subresource": ""}],
        "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "o", "uid": "u",
            "controller": true, "blockOwnerDeletion": true}],
    });
    assert_eq!(paths("NodePool", &pool), Vec::<String>::new());
    pool["metadata"]["ownerReferences"][0]["contoller"] = json!(true);
    assert_eq!(
        paths("NodePool", &pool),
        ["metadata.ownerReferences[0].contoller"]
    );
    // Stripping (a cluster read) takes them out and names them.
    pool["metadata"]["lables"] = json!({"x": "y"});
    let removed = strip_unknown_fields("NodePool", &mut pool);
    let removed: Vec<&str> = removed.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        removed,
        ["metadata.lables", "metadata.ownerReferences[0].contoller"]
    );
    assert!(pool["metadata"].get("lables").is_none());
    assert_eq!(paths("NodePool", &pool), Vec::<String>::new());
}

#[test]
fn dropped_fields_names_what_a_typed_reading_lost() {
    use adze_api::validation::dropped_fields;
    let read = json!({"a": 1, "b": {"c": 2, "d": null, "e": [{"f": 1, "g": 2}]}, "h": null});
    let kept = json!({"a": 1, "b": {"c": 2, "e": [{"f": 1}]}});
    let got: Vec<String> = dropped_fields(&read, &kept)
        .into_iter()
        .map(|e| e.path)
        .collect();
    assert_eq!(got, ["b.e[0].g"]);
}

#[test]
fn a_flood_of_unknown_fields_is_reported_briefly() {
    let mut pool = fixture_json("nodepool.yaml");
    let long = "k".repeat(10_000);
    pool["spec"][&long] = json!(1);
    for i in 0..100 {
        pool["spec"][format!("extra{i:03}")] = json!(i);
    }
    let errors = unknown_fields("NodePool", &pool);
    assert_eq!(errors.len(), UNKNOWN_FIELDS_SHOWN + 1);
    let last = errors.last().unwrap();
    assert_eq!(
        last.message,
        format!(
            "{} more unknown field(s) not listed",
            101 - UNKNOWN_FIELDS_SHOWN
        )
    );
    let text = check_unknown_fields("NodePool", &pool)
        .unwrap_err()
        .to_string();
    assert!(text.len() < 20_000, "{} bytes", text.len());
    assert!(!text.contains(&long));
}

#[test]
fn stripping_takes_out_what_checking_reports() {
    let mut claim = fixture_json("nodeclaim.yaml");
    let clean = claim.clone();
    claim["spec"]["kubelet"] = json!({"maxPods": 10});
    claim["spec"]["requirements"][0]["minValuez"] = json!(2);
    let mut removed = strip_unknown_fields("NodeClaim", &mut claim);
    removed.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        removed,
        [
            ("spec.kubelet".to_string(), json!({"maxPods": 10})),
            ("spec.requirements[0].minValuez".to_string(), json!(2)),
        ]
    );
    assert_eq!(claim, clean);
    assert!(strip_unknown_fields("NodeClaim", &mut claim).is_empty());
}
