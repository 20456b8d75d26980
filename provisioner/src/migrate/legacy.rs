//! Karpenter's older API generations restated as Karpenter v1 objects, so that the v1 path
//! (and Adze's types) decide the rest.
//!
//! - `karpenter.sh/v1alpha5` Provisioner and `karpenter.k8s.aws/v1alpha1` AWSNodeTemplate
//!   (Karpenter up to v0.31), including a Provisioner's inline `spec.provider`;
//! - `karpenter.sh/v1beta1` NodePool and `karpenter.k8s.aws/v1beta1` EC2NodeClass (v0.32 to
//!   v0.37).
//!
//! The mappings follow Karpenter's published upgrade guides; where a field changed meaning
//! (defaults included) the v1 object states the old meaning explicitly, so the pool behaves
//! as it did. What has no v1 form is an action note naming the field.

use serde_json::{Map, Value, json};

use super::Notes;

/// A pool's kubelet settings, which Karpenter v1 (and Adze) keep on the node class.
#[derive(Debug, Clone)]
pub struct Kubelet {
    /// Where the settings were in the input object, for notes.
    pub field: String,
    /// The EC2NodeClass the pool launches with.
    pub class: String,
    pub value: Value,
}

/// What an older NodePool becomes.
pub struct Pool {
    /// A `karpenter.sh/v1` NodePool.
    pub pool: Value,
    pub kubelet: Option<Kubelet>,
    /// A `karpenter.k8s.aws/v1` EC2NodeClass made from a v1alpha5 inline `spec.provider`.
    pub class: Option<Value>,
}

fn take(spec: &mut Map<String, Value>, key: &str) -> Option<Value> {
    spec.remove(key).filter(|v| !v.is_null())
}

/// Seconds from an external number: a non-negative integer, else an action note.
fn seconds(v: &Value, field: &str, notes: &mut Notes) -> Option<String> {
    match v.as_u64() {
        Some(s) => Some(format!("{s}s")),
        None => {
            notes.action(
                field,
                format!("{v} is not a whole number of seconds; not carried over"),
            );
            None
        }
    }
}

fn not_a_map(v: &Value) -> String {
    format!("not a map; not carried over (was {})", super::short(v))
}

/// The `karpenter.k8s.aws/v1` EC2NodeClass reference for `name`.
fn class_ref(name: &str) -> Value {
    json!({"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": name})
}

/// `karpenter.sh/v1alpha5` Provisioner → `karpenter.sh/v1` NodePool (and the EC2NodeClass
/// of an inline provider).
pub fn provisioner(v: &Value, notes: &mut Notes) -> Pool {
    let name = v["metadata"]["name"]
        .as_str()
        .unwrap_or("<unnamed>")
        .to_string();
    let mut spec = v["spec"].as_object().cloned().unwrap_or_default();
    let mut template_meta = Map::new();
    let mut template_spec = Map::new();
    let mut disruption = Map::new();
    let mut out = Map::new();
    for (from, to) in [("labels", "labels"), ("annotations", "annotations")] {
        if let Some(x) = take(&mut spec, from) {
            template_meta.insert(to.into(), x);
        }
    }
    for key in ["requirements", "taints", "startupTaints"] {
        if let Some(x) = take(&mut spec, key) {
            template_spec.insert(key.into(), x);
        }
    }
    if let Some(limits) = take(&mut spec, "limits") {
        if !limits.is_object() {
            notes.action("spec.limits", not_a_map(&limits));
        }
        let mut limits = limits.as_object().cloned().unwrap_or_default();
        if let Some(resources) = take(&mut limits, "resources") {
            out.insert("limits".into(), resources);
        }
        for k in limits.keys() {
            notes.action(
                &format!("spec.limits.{k}"),
                "not carried over: v1alpha5 limits are under limits.resources".into(),
            );
        }
    }
    if let Some(w) = take(&mut spec, "weight") {
        out.insert("weight".into(), w);
    }
    // Expiry: unset meant never in v1alpha5 (v1 defaults to 720h), so it is stated.
    let expire = match take(&mut spec, "ttlSecondsUntilExpired") {
        Some(t) => seconds(&t, "spec.ttlSecondsUntilExpired", notes),
        None => {
            notes.change(
                "spec.ttlSecondsUntilExpired",
                "unset (nodes never expire): expireAfter: Never".into(),
            );
            Some("Never".into())
        }
    };
    if let Some(e) = expire {
        template_spec.insert("expireAfter".into(), e.into());
    }
    let empty = take(&mut spec, "ttlSecondsAfterEmpty");
    let consolidation = take(&mut spec, "consolidation");
    let enabled = consolidation
        .as_ref()
        .and_then(|c| c.get("enabled"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if let Some(c) = consolidation.as_ref().filter(|c| !c.is_object()) {
        notes.action("spec.consolidation", not_a_map(c));
    }
    if let Some(c) = consolidation.as_ref().and_then(Value::as_object) {
        for k in c.keys().filter(|k| *k != "enabled") {
            notes.action(
                &format!("spec.consolidation.{k}"),
                "not carried over: no such consolidation field".into(),
            );
        }
    }
    match (empty, enabled) {
        (Some(_), true) => notes.action(
            "spec.ttlSecondsAfterEmpty",
            "set together with consolidation.enabled, which Karpenter refuses; consolidation kept (WhenEmptyOrUnderutilized), ttlSecondsAfterEmpty not carried over".into(),
        ),
        (Some(t), false) => {
            if let Some(after) = seconds(&t, "spec.ttlSecondsAfterEmpty", notes) {
                disruption.insert("consolidationPolicy".into(), "WhenEmpty".into());
                disruption.insert("consolidateAfter".into(), after.into());
            }
        }
        _ => {}
    }
    if enabled {
        disruption.insert(
            "consolidationPolicy".into(),
            "WhenEmptyOrUnderutilized".into(),
        );
        disruption.insert("consolidateAfter".into(), "0s".into());
    } else if !disruption.contains_key("consolidationPolicy") {
        notes.change(
            "spec.consolidation",
            "neither consolidation nor ttlSecondsAfterEmpty set (nodes are never consolidated): consolidationPolicy WhenEmpty, consolidateAfter: Never".into(),
        );
        disruption.insert("consolidationPolicy".into(), "WhenEmpty".into());
        disruption.insert("consolidateAfter".into(), "Never".into());
    }
    let kubelet = take(&mut spec, "kubeletConfiguration");
    let provider_ref = take(&mut spec, "providerRef");
    let provider = take(&mut spec, "provider");
    let mut class = None;
    let class_name = match (provider_ref, provider) {
        (Some(r), p) => {
            if p.is_some() {
                notes.action(
                    "spec.provider",
                    "set together with providerRef, which Karpenter refuses; providerRef kept, the inline provider not carried over".into(),
                );
            }
            if let Some(r) = r.as_object() {
                for k in r
                    .keys()
                    .filter(|k| !["name", "kind", "apiVersion"].contains(&k.as_str()))
                {
                    notes.action(&format!("spec.providerRef.{k}"), "not carried over".into());
                }
            }
            let name = r["name"].as_str().map(str::to_string);
            if name.is_none() {
                notes.action(
                    "spec.providerRef.name",
                    format!(
                        "missing or not a string: the node class is unknown (was {})",
                        super::short(&r)
                    ),
                );
            }
            name
        }
        (None, Some(p)) => {
            notes.change(
                "spec.provider",
                format!("inline provider: becomes EC2NodeClass/{name}"),
            );
            let mut meta = Map::new();
            meta.insert("name".into(), name.clone().into());
            let mut class_notes = Notes::new(notes.object.clone());
            let class_spec = node_template_spec(&p, "spec.provider", &mut class_notes);
            notes.list.extend(class_notes.list);
            class = Some(json!({
                "apiVersion": "karpenter.k8s.aws/v1",
                "kind": "EC2NodeClass",
                "metadata": meta,
                "spec": class_spec,
            }));
            Some(name.clone())
        }
        (None, None) => {
            notes.action(
                "spec.providerRef",
                "neither providerRef nor provider: the node class is unknown; set spec.template.spec.nodeClassRef".into(),
            );
            None
        }
    };
    if let Some(c) = &class_name {
        template_spec.insert("nodeClassRef".into(), class_ref(c));
    }
    for (k, x) in &spec {
        notes.action(
            &format!("spec.{k}"),
            format!(
                "not carried over: no Karpenter v1 equivalent (was {})",
                super::short(x)
            ),
        );
    }
    let mut template = Map::new();
    if !template_meta.is_empty() {
        template.insert("metadata".into(), template_meta.into());
    }
    template.insert("spec".into(), template_spec.into());
    out.insert("template".into(), template.into());
    out.insert("disruption".into(), disruption.into());
    let kubelet = kubelet.map(|value| Kubelet {
        field: "spec.kubeletConfiguration".into(),
        class: class_name.clone().unwrap_or_default(),
        value,
    });
    Pool {
        pool: with_spec(v, "karpenter.sh/v1", "NodePool", out.into()),
        kubelet,
        class,
    }
}

/// The object with a new apiVersion and spec, its metadata kept.
fn with_spec(v: &Value, api_version: &str, kind: &str, spec: Value) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "metadata": v["metadata"].clone(), "spec": spec})
}

/// `karpenter.k8s.aws/v1alpha1` AWSNodeTemplate → `karpenter.k8s.aws/v1` EC2NodeClass.
pub fn aws_node_template(v: &Value, notes: &mut Notes) -> Value {
    let spec = node_template_spec(&v["spec"], "spec", notes);
    with_spec(v, "karpenter.k8s.aws/v1", "EC2NodeClass", spec)
}

/// Selector keys that list ids rather than tags.
const ID_KEYS: &[&str] = &["aws-ids", "aws::ids"];

/// A v1alpha1 selector map as v1 selector terms: ids one term each, tags in one term.
fn selector_terms(map: &Value, at: &str, extra: &[(&str, &str)], notes: &mut Notes) -> Vec<Value> {
    let Some(map) = map.as_object() else {
        notes.action(at, "not a map of tags; not carried over".into());
        return Vec::new();
    };
    let mut ids = Vec::new();
    let mut term = Map::new();
    let mut tags = Map::new();
    for (k, x) in map {
        let s = x
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| x.to_string());
        if ID_KEYS.contains(&k.as_str()) {
            ids.extend(
                s.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            );
        } else if let Some((_, field)) = extra.iter().find(|(key, _)| key == k) {
            term.insert((*field).into(), s.into());
        } else if k.starts_with("aws::") {
            notes.action(
                &format!("{at}.{k}"),
                "no selector term field for this special key; not carried over".into(),
            );
        } else {
            tags.insert(k.clone(), s.into());
        }
    }
    if !tags.is_empty() {
        term.insert("tags".into(), tags.into());
    }
    if !ids.is_empty() {
        if !term.is_empty() {
            notes.action(
                at,
                "ids combined with other filters: v1 selects by id alone, so only the ids are carried over".into(),
            );
        }
        return ids.into_iter().map(|id| json!({"id": id})).collect();
    }
    if term.is_empty() {
        return Vec::new();
    }
    // Several owners were one comma-separated value; v1 has one owner per term.
    match term
        .get("owner")
        .and_then(Value::as_str)
        .map(str::to_string)
    {
        Some(owners) if owners.contains(',') => owners
            .split(',')
            .map(str::trim)
            .filter(|o| !o.is_empty())
            .map(|o| {
                let mut t = term.clone();
                t.insert("owner".into(), o.into());
                Value::Object(t)
            })
            .collect(),
        _ => vec![Value::Object(term)],
    }
}

/// Karpenter's hop limit default before v1 (v1 and Adze default to 1).
const OLD_HOP_LIMIT: i64 = 2;

/// States the pre-v1 metadata hop limit default explicitly.
fn old_metadata_defaults(spec: &mut Map<String, Value>, at: &str, notes: &mut Notes) {
    let options = spec.entry("metadataOptions").or_insert_with(|| json!({}));
    if let Some(o) = options.as_object_mut()
        && !o.contains_key("httpPutResponseHopLimit")
    {
        o.insert("httpPutResponseHopLimit".into(), OLD_HOP_LIMIT.into());
        notes.change(
            &format!("{at}.metadataOptions.httpPutResponseHopLimit"),
            format!("unset (defaulted to {OLD_HOP_LIMIT} before Karpenter v1): stated as {OLD_HOP_LIMIT}"),
        );
    }
}

/// The `amiSelectorTerms` an AMI family resolves to when no AMI is selected.
fn alias_for(family: &str) -> Option<String> {
    let alias = match family {
        "AL2" => "al2",
        "AL2023" => "al2023",
        "Bottlerocket" => "bottlerocket",
        "Windows2019" => "windows2019",
        "Windows2022" => "windows2022",
        "Windows2025" => "windows2025",
        _ => return None,
    };
    Some(format!("{alias}@latest"))
}

/// Fills in `amiSelectorTerms` from the family as Karpenter v1 needs (v1 has aliases; before
/// v1 a family alone meant its latest EKS-optimized AMI).
fn family_to_terms(spec: &mut Map<String, Value>, at: &str, notes: &mut Notes) {
    let has_terms = spec
        .get("amiSelectorTerms")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    let family = spec
        .get("amiFamily")
        .and_then(Value::as_str)
        .map(str::to_string);
    if has_terms {
        return;
    }
    let Some(family) = family else { return };
    if let Some(alias) = alias_for(&family) {
        notes.change(
            &format!("{at}.amiFamily"),
            format!("{family} with no AMI selected: amiSelectorTerms alias {alias}"),
        );
        spec.insert("amiSelectorTerms".into(), json!([{"alias": alias}]));
        spec.remove("amiFamily");
    }
}

/// An AWSNodeTemplate spec (or an inline provider) as a v1 EC2NodeClass spec. `at` is where
/// the input fields are, for notes.
fn node_template_spec(v: &Value, at: &str, notes: &mut Notes) -> Value {
    if !v.is_object() {
        notes.action(at, not_a_map(v));
    }
    let mut spec = v.as_object().cloned().unwrap_or_default();
    // Type markers of an inline provider, not settings.
    spec.remove("apiVersion");
    spec.remove("kind");
    let mut out = Map::new();
    if let Some(s) = take(&mut spec, "subnetSelector") {
        let terms = selector_terms(&s, &format!("{at}.subnetSelector"), &[], notes);
        out.insert("subnetSelectorTerms".into(), terms.into());
    }
    if let Some(s) = take(&mut spec, "securityGroupSelector") {
        let terms = selector_terms(&s, &format!("{at}.securityGroupSelector"), &[], notes);
        out.insert("securityGroupSelectorTerms".into(), terms.into());
    }
    if let Some(s) = take(&mut spec, "amiSelector") {
        let terms = selector_terms(
            &s,
            &format!("{at}.amiSelector"),
            &[("aws::name", "name"), ("aws::owners", "owner")],
            notes,
        );
        out.insert("amiSelectorTerms".into(), terms.into());
    }
    match take(&mut spec, "amiFamily") {
        Some(f) => {
            out.insert("amiFamily".into(), f);
        }
        None => {
            // Unset meant AL2, and Adze launches AL2 as Karpenter did: said, not guessed.
            notes.change(
                &format!("{at}.amiFamily"),
                "unset, which Karpenter v1alpha5 reads as AL2: set to AL2".into(),
            );
            out.insert("amiFamily".into(), "AL2".into());
        }
    }
    family_to_terms(&mut out, at, notes);
    if let Some(lt) = take(&mut spec, "launchTemplate") {
        notes.action(
            &format!("{at}.launchTemplate"),
            format!(
                "launch templates are not supported (Karpenter dropped them in v1beta1); not carried over (was {})",
                super::short(&lt)
            ),
        );
    }
    if !spec.contains_key("instanceProfile") && !spec.contains_key("role") {
        notes.action(
            &format!("{at}.instanceProfile"),
            "unset: Karpenter v1alpha5 used the controller's default instance profile; set role or instanceProfile, or rerun with --node-role AdzeNode-<cluster>".into(),
        );
    }
    // The rest has the same name and shape in v1; Adze's types judge each field.
    for (k, x) in spec {
        out.insert(k, x);
    }
    old_metadata_defaults(&mut out, at, notes);
    Value::Object(out)
}

/// `karpenter.sh/v1beta1` NodePool → `karpenter.sh/v1` NodePool.
pub fn nodepool_v1beta1(v: &Value, notes: &mut Notes) -> Pool {
    let mut spec = v["spec"].clone();
    if !spec.is_object() {
        spec = json!({});
    }
    let mut kubelet = None;
    let mut class_name = String::new();
    if let Some(ts) = spec
        .pointer_mut("/template/spec")
        .and_then(Value::as_object_mut)
    {
        if let Some(r) = ts.get_mut("nodeClassRef").and_then(Value::as_object_mut) {
            class_name = r
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            match r.remove("apiVersion") {
                Some(av) => {
                    let group = av
                        .as_str()
                        .unwrap_or_default()
                        .split('/')
                        .next()
                        .unwrap_or_default()
                        .to_string();
                    r.insert("group".into(), group.into());
                }
                None => {
                    r.insert("group".into(), "karpenter.k8s.aws".into());
                }
            }
            if !r.contains_key("kind") {
                r.insert("kind".into(), "EC2NodeClass".into());
            }
        }
        kubelet = take(ts, "kubelet");
    }
    let mut expire = None;
    if let Some(d) = spec.get_mut("disruption").and_then(Value::as_object_mut) {
        expire = take(d, "expireAfter");
        if d.get("consolidationPolicy").and_then(Value::as_str) == Some("WhenUnderutilized") {
            d.insert(
                "consolidationPolicy".into(),
                "WhenEmptyOrUnderutilized".into(),
            );
            notes.change(
                "spec.disruption.consolidationPolicy",
                "WhenUnderutilized is WhenEmptyOrUnderutilized in v1".into(),
            );
        }
        if !d.contains_key("consolidateAfter") {
            // v1beta1 WhenUnderutilized had no delay; WhenEmpty's was required.
            d.insert("consolidateAfter".into(), "0s".into());
        }
    } else if let Some(s) = spec.as_object_mut() {
        // v1beta1's default: WhenUnderutilized, no delay.
        s.insert(
            "disruption".into(),
            json!({"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}),
        );
    }
    if let Some(e) = expire {
        match spec
            .pointer_mut("/template/spec")
            .and_then(Value::as_object_mut)
        {
            Some(ts) => {
                ts.insert("expireAfter".into(), e);
                notes.change(
                    "spec.disruption.expireAfter",
                    "moved to spec.template.spec.expireAfter".into(),
                );
            }
            None => notes.action(
                "spec.disruption.expireAfter",
                format!(
                    "not carried over: spec.template.spec is not a map to hold it (was {})",
                    super::short(&e)
                ),
            ),
        }
    }
    Pool {
        pool: with_spec(v, "karpenter.sh/v1", "NodePool", spec),
        kubelet: kubelet.map(|value| Kubelet {
            field: "spec.template.spec.kubelet".into(),
            class: class_name,
            value,
        }),
        class: None,
    }
}

/// `karpenter.k8s.aws/v1beta1` EC2NodeClass → `karpenter.k8s.aws/v1` EC2NodeClass.
pub fn ec2nodeclass_v1beta1(v: &Value, notes: &mut Notes) -> Value {
    let mut spec = v["spec"].as_object().cloned().unwrap_or_default();
    family_to_terms(&mut spec, "spec", notes);
    old_metadata_defaults(&mut spec, "spec", notes);
    with_spec(v, "karpenter.k8s.aws/v1", "EC2NodeClass", spec.into())
}
