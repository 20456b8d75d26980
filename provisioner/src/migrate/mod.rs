//! `adze-provisioner migrate`: Karpenter v1 NodePools (`karpenter.sh/v1`) and EC2NodeClasses
//! (`karpenter.k8s.aws/v1`) become Adze's (`adze.sh/v1`, `aws.adze.sh/v1`).
//!
//! Adze's field names follow Karpenter's, so most of a migration is API groups and label keys.
//! Everything else is decided by Adze's own types: the converted object is parsed as the Adze
//! type, any field that does not survive the round trip is reported as not carried over, and
//! the Adze validation rules run on the result. Nothing is dropped silently: every change that
//! alters behaviour is a [`Note`].

mod labels;

use adze_api::{EC2NodeClass, NodePool};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use labels::{CAPACITY_TYPES, Key};

use crate::simulate::yaml::{self, YamlError};

/// One thing the user should know about the conversion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// `Kind/name`.
    pub object: String,
    /// JSON path of the field, e.g. `spec.template.spec.requirements[2]`.
    pub field: String,
    pub message: String,
    /// The converted object behaves differently from the original, or will not be accepted
    /// as it is: a person must look.
    pub action: bool,
}

/// The converted objects, in input order, and the notes about them.
#[derive(Debug, Default)]
pub struct Migration {
    pub objects: Vec<Value>,
    pub notes: Vec<Note>,
    /// `Kind/name` of every input object left out of the output (each also has an action note).
    pub not_converted: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// A document that is not YAML or is past a per-document budget (depth, aliases, nodes).
    #[error("document {index}: {source}")]
    Yaml { index: usize, source: YamlError },
    /// The input as a whole is past a budget (size, documents).
    #[error("{0}")]
    Input(YamlError),
}

impl Migration {
    /// The converted objects as one multi-document YAML stream.
    pub fn yaml(&self) -> String {
        self.objects
            .iter()
            .map(|o| serde_yaml::to_string(o).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("---\n")
    }

    /// Items a person must look at before the output is applied.
    pub fn actions(&self) -> usize {
        self.notes.iter().filter(|n| n.action).count()
    }

    /// The output cannot be applied as it is: some item needs action or was not converted, or
    /// nothing was converted at all (kubectl found no Karpenter objects, or the wrong input
    /// was piped in).
    pub fn incomplete(&self) -> bool {
        self.actions() > 0 || self.objects.is_empty()
    }

    /// The notes for a person: what needs action first, then what was changed.
    pub fn report(&self) -> String {
        let actions = self.actions();
        let mut out = format!(
            "migrated {} object(s), {} not converted; {} item(s) need action, {} change(s) applied\n",
            self.objects.len(),
            self.not_converted.len(),
            actions,
            self.notes.len() - actions
        );
        if self.objects.is_empty() {
            out += "  ACTION: nothing converted: the input holds no karpenter.sh/v1 NodePool or karpenter.k8s.aws/v1 EC2NodeClass\n";
        }
        for action in [true, false] {
            for n in self.notes.iter().filter(|n| n.action == action) {
                let tag = if action { "ACTION" } else { "changed" };
                out += &format!("  {tag}: {} {}: {}\n", n.object, n.field, n.message);
            }
        }
        out
    }
}

/// The objects of a stream as kubectl prints them: YAML documents or JSON values (one or
/// several concatenated, as from `kubectl get a -o json; kubectl get b -o json`), each either
/// one object, an array of objects, or a list (`kind: List`, or any `*List` with `items`, as
/// `kubectl get -o yaml|json` prints several objects), flattened in order. The input is read
/// under the budgets of [`crate::simulate::yaml`], JSON included.
fn objects(input: &str) -> Result<Vec<Value>, MigrateError> {
    fn flatten(v: Value, out: &mut Vec<Value>) {
        let is_list = v["kind"].as_str().is_some_and(|k| k.ends_with("List"))
            && v.get("items").is_some_and(Value::is_array);
        let items = match v {
            Value::Array(items) => items,
            Value::Object(mut o) if is_list => match o.remove("items") {
                Some(Value::Array(items)) => items,
                _ => Vec::new(),
            },
            Value::Null => Vec::new(),
            v => {
                out.push(v);
                return;
            }
        };
        for item in items {
            flatten(item, out);
        }
    }
    let mut out = Vec::new();
    if input.len() > yaml::MAX_INPUT_BYTES {
        return Err(MigrateError::Input(YamlError::TooLarge {
            size: input.len(),
        }));
    }
    // JSON first: YAML does not read concatenated JSON values (or tab-indented JSON).
    if input.trim_start().starts_with(['{', '[']) {
        let json: Result<Vec<Value>, _> = serde_json::Deserializer::from_str(input)
            .into_iter::<Value>()
            .collect();
        if let Ok(values) = json {
            for v in values {
                flatten(v, &mut out);
            }
            return Ok(out);
        }
    }
    for (index, value) in yaml::documents(input).map_err(MigrateError::Input)? {
        let value = value.map_err(|source| MigrateError::Yaml { index, source })?;
        flatten(value, &mut out);
    }
    Ok(out)
}

/// Converts every Karpenter NodePool and EC2NodeClass in what kubectl prints (see
/// [`objects`]). Other objects are left out of the output with an action note (and listed in
/// [`Migration::not_converted`]); Adze objects pass through unchanged.
pub fn migrate(input: &str) -> Result<Migration, MigrateError> {
    let mut m = Migration::default();
    for value in objects(input)? {
        let api_version = value["apiVersion"].as_str().unwrap_or_default().to_string();
        let kind = value["kind"].as_str().unwrap_or_default().to_string();
        let name = value["metadata"]["name"].as_str().unwrap_or("<unnamed>");
        let mut notes = Notes::new(format!("{kind}/{name}"));
        let converted = match (api_version.as_str(), kind.as_str()) {
            ("karpenter.sh/v1", "NodePool") => Some(nodepool(value, &mut notes)),
            ("karpenter.k8s.aws/v1", "EC2NodeClass") => Some(ec2nodeclass(value, &mut notes)),
            ("karpenter.sh/v1beta1", _) | ("karpenter.k8s.aws/v1beta1", _) => {
                notes.action(
                    "apiVersion",
                    format!("{api_version} is not converted: upgrade to Karpenter v1 objects first (Karpenter's conversion webhook serves them as v1)"),
                );
                None
            }
            ("adze.sh/v1", _) | ("aws.adze.sh/v1", _) => {
                notes.change("apiVersion", "already an Adze object; unchanged".into());
                Some(value)
            }
            _ => {
                notes.action(
                    "apiVersion",
                    format!(
                        "{api_version} {kind} is not a Karpenter NodePool or EC2NodeClass; not converted (leave it out of the input)"
                    ),
                );
                None
            }
        };
        match converted {
            Some(o) => m.objects.push(o),
            None => m.not_converted.push(notes.object.clone()),
        }
        m.notes.extend(notes.list);
    }
    Ok(m)
}

struct Notes {
    object: String,
    list: Vec<Note>,
}

impl Notes {
    fn new(object: String) -> Self {
        Notes {
            object,
            list: Vec::new(),
        }
    }
    fn push(&mut self, field: &str, message: String, action: bool) {
        self.list.push(Note {
            object: self.object.clone(),
            field: field.to_string(),
            message,
            action,
        });
    }
    fn action(&mut self, field: &str, message: String) {
        self.push(field, message, true);
    }
    fn change(&mut self, field: &str, message: String) {
        self.push(field, message, false);
    }
}

fn nodepool(v: Value, notes: &mut Notes) -> Value {
    let mut spec = v.get("spec").cloned().unwrap_or_default();
    if let Some(labels) = spec
        .pointer_mut("/template/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        rename_label_keys(labels, "spec.template.metadata.labels", notes);
    }
    if let Some(reqs) = spec
        .pointer_mut("/template/spec/requirements")
        .and_then(Value::as_array_mut)
    {
        let old = std::mem::take(reqs);
        for (i, mut r) in old.into_iter().enumerate() {
            let field = format!("spec.template.spec.requirements[{i}]");
            if requirement(&mut r, &field, notes) {
                reqs.push(r);
            }
        }
    }
    if let Some(group) = spec.pointer_mut("/template/spec/nodeClassRef/group") {
        match group.as_str() {
            Some("karpenter.k8s.aws") => *group = Value::from("aws.adze.sh"),
            Some("aws.adze.sh") => {}
            other => notes.action(
                "spec.template.spec.nodeClassRef.group",
                format!("{other:?}: Adze launches only EC2NodeClasses (aws.adze.sh)"),
            ),
        }
    }
    if let Some(replicas) = spec.as_object_mut().and_then(|s| s.remove("replicas")) {
        notes.action(
            "spec.replicas",
            format!("static NodePools (a fixed count, here {replicas}) are not supported; removed, the pool will scale with pending pods"),
        );
    }
    let out = object("adze.sh/v1", "NodePool", &v, spec, notes);
    typed::<NodePool>(out, notes, |p| p.validate().err().map(|e| e.errors))
}

fn ec2nodeclass(v: Value, notes: &mut Notes) -> Value {
    let mut spec = v.get("spec").cloned().unwrap_or_default();
    const FAMILIES: &[&str] = &["AL2023", "Bottlerocket", "Custom"];
    if let Some(family) = spec.get("amiFamily").and_then(Value::as_str)
        && !FAMILIES.contains(&family)
    {
        notes.action(
            "spec.amiFamily",
            format!(
                "{family} is not supported (Adze: {}); removed, choose one",
                FAMILIES.join(", ")
            ),
        );
        if let Some(s) = spec.as_object_mut() {
            s.remove("amiFamily");
        }
    }
    if let Some(terms) = spec.get("amiSelectorTerms").and_then(Value::as_array) {
        for (i, t) in terms.iter().enumerate() {
            if let Some(alias) = t.get("alias").and_then(Value::as_str)
                && adze_api::ec2nodeclass::AmiFamily::from_alias(alias).is_none()
            {
                notes.action(
                    &format!("spec.amiSelectorTerms[{i}].alias"),
                    format!("{alias}: Adze resolves al2023@ and bottlerocket@ aliases only; pick one or select the AMI by id, name or tags"),
                );
            }
        }
    }
    let out = object("aws.adze.sh/v1", "EC2NodeClass", &v, spec, notes);
    typed::<EC2NodeClass>(out, notes, |c| c.validate().err().map(|e| e.errors))
}

/// Renames Karpenter's label keys in place; drops keys Adze does not know.
fn rename_label_keys(labels: &mut Map<String, Value>, at: &str, notes: &mut Notes) {
    let old = std::mem::take(labels);
    for (k, v) in old {
        match labels::map(&k) {
            Key::Same => {
                labels.insert(k, v);
            }
            Key::Renamed(new) => {
                notes.change(&format!("{at}.{k}"), format!("renamed to {new}"));
                labels.insert(new.to_string(), v);
            }
            Key::Unsupported => notes.action(
                &format!("{at}.{k}"),
                "a Karpenter-owned label with no Adze equivalent; removed".into(),
            ),
        }
    }
}

/// Converts one requirement in place; false when it must be dropped.
fn requirement(r: &mut Value, field: &str, notes: &mut Notes) -> bool {
    let key = r["key"].as_str().unwrap_or_default().to_string();
    match labels::map(&key) {
        Key::Same => {}
        Key::Renamed(new) => {
            notes.change(field, format!("key {key} renamed to {new}"));
            r["key"] = Value::from(new);
        }
        Key::Unsupported => {
            notes.action(
                field,
                format!("requirement on {key} dropped: Adze has no such label, so this pool may now choose from more instance types; express it with instance families or sizes"),
            );
            return false;
        }
    }
    if r["key"] == adze_scheduling::labels::CAPACITY_TYPE
        && let Some(values) = r.get_mut("values").and_then(Value::as_array_mut)
    {
        let dropped: Vec<String> = values
            .iter()
            .filter_map(Value::as_str)
            .filter(|v| !CAPACITY_TYPES.contains(v))
            .map(str::to_string)
            .collect();
        if !dropped.is_empty() {
            values.retain(|v| v.as_str().is_some_and(|v| CAPACITY_TYPES.contains(&v)));
            notes.action(
                field,
                format!(
                    "capacity type(s) {} not supported (Adze launches {}); removed",
                    dropped.join(", "),
                    CAPACITY_TYPES.join(" and ")
                ),
            );
            if values.is_empty() && r["operator"] == "In" {
                notes.action(field, "no capacity type left; requirement dropped".into());
                return false;
            }
        }
    }
    true
}

/// The Adze object: new apiVersion/kind, name/labels/annotations kept, status dropped.
fn object(api_version: &str, kind: &str, v: &Value, spec: Value, notes: &mut Notes) -> Value {
    let mut meta = Map::new();
    for field in ["name", "labels", "annotations"] {
        if let Some(x) = v["metadata"].get(field) {
            meta.insert(field.into(), x.clone());
        }
    }
    if let Some(ann) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
        ann.remove("kubectl.kubernetes.io/last-applied-configuration");
        let karpenter: Vec<String> = ann
            .keys()
            .filter(|k| labels::map(k) != Key::Same)
            .cloned()
            .collect();
        for k in karpenter {
            ann.remove(&k);
            notes.change(
                &format!("metadata.annotations.{k}"),
                "Karpenter's own annotation; removed".into(),
            );
        }
        if ann.is_empty() {
            meta.remove("annotations");
        }
    }
    if let Some(labels) = meta.get_mut("labels").and_then(Value::as_object_mut) {
        rename_label_keys(labels, "metadata.labels", notes);
    }
    serde_json::json!({"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec})
}

/// Parses `out` as the Adze type T, reports fields the type does not carry and what its
/// validation rejects, and returns `out` without the fields that were not carried.
fn typed<T: DeserializeOwned + Serialize>(
    out: Value,
    notes: &mut Notes,
    validate: impl Fn(&T) -> Option<Vec<adze_api::validation::FieldError>>,
) -> Value {
    let parsed: T = match serde_json::from_value(out.clone()) {
        Ok(t) => t,
        Err(e) => {
            notes.action("spec", format!("not a valid Adze object: {e}"));
            return out;
        }
    };
    let round_trip = serde_json::to_value(&parsed).unwrap_or_default();
    let mut pruned = out;
    prune(&mut pruned, &round_trip, "", notes);
    for e in validate(&parsed).unwrap_or_default() {
        notes.action(&e.path, e.message);
    }
    pruned
}

/// Removes from `v` every non-empty field `kept` lacks, with a note per field.
fn prune(v: &mut Value, kept: &Value, at: &str, notes: &mut Notes) {
    match (v, kept) {
        (Value::Object(map), Value::Object(kept_map)) => {
            let gone: Vec<String> = map
                .keys()
                .filter(|k| !kept_map.contains_key(*k))
                .cloned()
                .collect();
            for k in gone {
                let field = join(at, &k);
                if let Some(x) = map.remove(&k)
                    && !is_empty(&x)
                    && field != "status"
                {
                    notes.action(
                        &field,
                        format!(
                            "not carried over: Adze has no such field (was {})",
                            short(&x)
                        ),
                    );
                }
            }
            for (k, x) in map.iter_mut() {
                prune(x, &kept_map[k], &join(at, k), notes);
            }
        }
        (Value::Array(items), Value::Array(kept_items)) => {
            for (i, (x, k)) in items.iter_mut().zip(kept_items).enumerate() {
                prune(x, k, &format!("{at}[{i}]"), notes);
            }
        }
        _ => {}
    }
}

fn join(at: &str, k: &str) -> String {
    if at.is_empty() {
        k.to_string()
    } else {
        format!("{at}.{k}")
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(80).collect::<String>())
    } else {
        s
    }
}

#[cfg(test)]
mod tests;
