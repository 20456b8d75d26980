//! `adze-provisioner migrate`: Karpenter v1 NodePools (`karpenter.sh/v1`) and EC2NodeClasses
//! (`karpenter.k8s.aws/v1`) become Adze's (`adze.sh/v1`, `aws.adze.sh/v1`).
//!
//! Adze's field names follow Karpenter's, so most of a migration is API groups and label keys.
//! Everything else is decided by Adze's own types: the converted object is parsed as the Adze
//! type, any field that does not survive the round trip is reported as not carried over, and
//! the Adze validation rules run on the result. Nothing is dropped silently: every change that
//! alters behaviour is a [`Note`].

mod json;
mod labels;
mod legacy;

use adze_api::{EC2NodeClass, NodeOverlay, NodePool};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use serde_path_to_error::Segment;

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

/// Choices the user makes for the whole conversion.
#[derive(Debug, Default, Clone)]
pub struct Options {
    /// `--node-role`: every converted EC2NodeClass that names a `role` gets this one instead
    /// (the node role of Adze's stack, `AdzeNode-<cluster>`), so launches do not depend on
    /// the controller being allowed to pass Karpenter's node role.
    pub node_role: Option<String>,
}

/// Printed under every report that converted something: `migrate` sees only Karpenter's
/// objects, never the workloads that select Karpenter's node labels.
pub const LABELS_NOTE: &str = "note: pods that select Karpenter's node labels (karpenter.sh/*, karpenter.k8s.aws/* in nodeSelector, affinity or topologySpreadConstraints) stay Pending on Adze's nodes unless the chart's provisioner.karpenterLabels is true (--karpenter-labels) or their selectors are renamed as above; list them with: kubectl get pods -A -o yaml | grep -E 'karpenter\\.(sh|k8s\\.aws)/'";

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
    /// More objects than [`MAX_OBJECTS`], counted as lists are flattened, before any is
    /// converted.
    #[error(
        "{path}: more than {MAX_OBJECTS} objects in the input; split it (e.g. one kind per file)"
    )]
    TooManyObjects { path: String },
}

/// Most objects `migrate` reads from its input, list items included: far more NodePools
/// and node classes than a cluster holds, and a bound on the time a hostile list takes.
pub const MAX_OBJECTS: usize = 10_000;

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
            out += "  ACTION: nothing converted: the input holds no Karpenter NodePool, EC2NodeClass, Provisioner or AWSNodeTemplate\n";
        }
        for action in [true, false] {
            for n in self.notes.iter().filter(|n| n.action == action) {
                let tag = if action { "ACTION" } else { "changed" };
                out += &format!("  {tag}: {} {}: {}\n", n.object, n.field, n.message);
            }
        }
        for o in &self.objects {
            let role = o["spec"]["role"].as_str().unwrap_or("AdzeNode-");
            if o["kind"] == "EC2NodeClass" && !role.starts_with("AdzeNode-") {
                out += &format!(
                    "  note: EC2NodeClass/{} spec.role {role} kept: Adze's stack (deploy/aws/adze.yaml) lets the controller pass it only with its ARN in the stack's ExtraNodeRoleArns; or rerun with --node-role AdzeNode-<cluster>\n",
                    o["metadata"]["name"].as_str().unwrap_or_default()
                );
            }
        }
        if !self.objects.is_empty() {
            out += &format!("  {LABELS_NOTE}\n");
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
    /// Pushes `v`'s objects; `path` names it (a document or value, and its items) for the
    /// limit's message.
    fn flatten(v: Value, path: &str, out: &mut Vec<Value>) -> Result<(), MigrateError> {
        let is_list = v["kind"].as_str().is_some_and(|k| k.ends_with("List"))
            && v.get("items").is_some_and(Value::is_array);
        let field = if is_list { ".items" } else { "" };
        let items = match v {
            Value::Array(items) => items,
            Value::Object(mut o) if is_list => match o.remove("items") {
                Some(Value::Array(items)) => items,
                _ => Vec::new(),
            },
            Value::Null => Vec::new(),
            v => {
                if out.len() == MAX_OBJECTS {
                    return Err(MigrateError::TooManyObjects {
                        path: path.to_string(),
                    });
                }
                out.push(v);
                return Ok(());
            }
        };
        if out.len().saturating_add(items.len()) > MAX_OBJECTS {
            // Refused before the items are walked: a list's length is known up front.
            return Err(MigrateError::TooManyObjects {
                path: format!("{path}{field} ({} items)", items.len()),
            });
        }
        for (i, item) in items.into_iter().enumerate() {
            flatten(item, &format!("{path}{field}[{i}]"), out)?;
        }
        Ok(())
    }
    let mut out = Vec::new();
    if input.len() > yaml::MAX_INPUT_BYTES {
        return Err(MigrateError::Input(YamlError::TooLarge {
            size: input.len(),
        }));
    }
    // JSON first: YAML does not read concatenated JSON values (or tab-indented JSON).
    if input.trim_start().starts_with(['{', '[']) {
        // Counted while read: a list past the limit is refused before it is all in memory.
        match json::values(input, MAX_OBJECTS) {
            Ok(values) => {
                for (i, v) in values.into_iter().enumerate() {
                    flatten(v, &format!("JSON value {}", i + 1), &mut out)?;
                }
                return Ok(out);
            }
            Err(json::JsonError::TooManyObjects { path }) => {
                return Err(MigrateError::TooManyObjects { path });
            }
            Err(json::JsonError::TooManyNodes) => {
                return Err(MigrateError::Input(YamlError::TooManyNodes));
            }
            Err(json::JsonError::Syntax) => {}
        }
    }
    for (index, value) in yaml::documents(input).map_err(MigrateError::Input)? {
        let value = value.map_err(|source| MigrateError::Yaml { index, source })?;
        flatten(value, &format!("document {index}"), &mut out)?;
    }
    Ok(out)
}

/// Converts every Karpenter NodePool and EC2NodeClass in what kubectl prints (see
/// [`objects`]), of every API generation: v1alpha5 Provisioners and v1alpha1 AWSNodeTemplates,
/// v1beta1 and v1 NodePools and EC2NodeClasses. Older generations are first restated as
/// Karpenter v1 ([`legacy`]); pool kubelet settings then move to the node class they launch
/// with, as in Karpenter v1. Other objects are left out of the output with an action note (and
/// listed in [`Migration::not_converted`]); Adze objects pass through unchanged.
pub fn migrate(input: &str) -> Result<Migration, MigrateError> {
    migrate_with(input, &Options::default())
}

/// [`migrate`] with the user's [`Options`].
pub fn migrate_with(input: &str, options: &Options) -> Result<Migration, MigrateError> {
    enum Item {
        Pool(Value),
        Class(Value),
        Overlay(Value),
        Adze(Value),
        Refused,
    }
    let mut items: Vec<(Item, Notes)> = Vec::new();
    let mut kubelets: Vec<(usize, legacy::Kubelet)> = Vec::new();
    for value in objects(input)? {
        let api_version = value["apiVersion"].as_str().unwrap_or_default().to_string();
        let kind = value["kind"].as_str().unwrap_or_default().to_string();
        let name = value["metadata"]["name"].as_str().unwrap_or("<unnamed>");
        // Cut: a hostile 10,000-character name is not echoed back in full.
        let mut notes = Notes::new(format!(
            "{}/{}",
            adze_api::validation::cut(&kind),
            adze_api::validation::cut(name)
        ));
        let mut generated = None;
        let mut kubelet = None;
        let item = match (api_version.as_str(), kind.as_str()) {
            ("karpenter.sh/v1", "NodePool") => {
                kubelet = compatibility(&value, &mut notes);
                Item::Pool(value)
            }
            ("karpenter.k8s.aws/v1", "EC2NodeClass") => Item::Class(value),
            ("karpenter.sh/v1beta1", "NodePool") => {
                let p = legacy::nodepool_v1beta1(&value, &mut notes);
                kubelet = p.kubelet;
                Item::Pool(p.pool)
            }
            ("karpenter.k8s.aws/v1beta1", "EC2NodeClass") => {
                Item::Class(legacy::ec2nodeclass_v1beta1(&value, &mut notes))
            }
            ("karpenter.sh/v1alpha5", "Provisioner") => {
                let p = legacy::provisioner(&value, &mut notes);
                kubelet = p.kubelet;
                generated = p.class;
                Item::Pool(p.pool)
            }
            ("karpenter.k8s.aws/v1alpha1", "AWSNodeTemplate") => {
                Item::Class(legacy::aws_node_template(&value, &mut notes))
            }
            ("karpenter.sh/v1alpha1", "NodeOverlay") => Item::Overlay(value),
            ("autoscaling.x-k8s.io/v1alpha1", "CapacityBuffer") => {
                notes.change(
                    "apiVersion",
                    "SIG Autoscaling's CapacityBuffer, read as it is with --capacity-buffers (docs/capacitybuffers.md); unchanged".into(),
                );
                Item::Adze(value)
            }
            ("adze.sh/v1", _) | ("aws.adze.sh/v1", _) | ("adze.sh/v1alpha1", "NodeOverlay") => {
                notes.change("apiVersion", "already an Adze object; unchanged".into());
                Item::Adze(value)
            }
            _ => {
                notes.action(
                    "apiVersion",
                    format!(
                        "{api_version} {kind} is not a Karpenter NodePool, EC2NodeClass, NodeOverlay, Provisioner or AWSNodeTemplate; not converted (leave it out of the input)"
                    ),
                );
                Item::Refused
            }
        };
        let pool_object = notes.object.clone();
        items.push((item, notes));
        if let Some(k) = kubelet {
            kubelets.push((items.len() - 1, k));
        }
        if let Some(class) = generated {
            let name = class["metadata"]["name"].as_str().unwrap_or_default();
            let mut notes = Notes::new(format!("EC2NodeClass/{name}"));
            notes.change(
                "metadata.name",
                format!("made from {pool_object} spec.provider"),
            );
            items.push((Item::Class(class), notes));
        }
    }
    // Kubelet settings go to the node class; pools sharing a class must agree on them.
    let class_index = |items: &[(Item, Notes)], name: &str| {
        items.iter().position(|(item, _)| {
            matches!(item, Item::Class(c) if c["metadata"]["name"].as_str() == Some(name))
        })
    };
    // Every pool's node class and kubelet settings (none for most), to find disagreements.
    let pools: Vec<(usize, &str, Option<&Value>)> = items
        .iter()
        .enumerate()
        .filter_map(|(i, (item, _))| match item {
            Item::Pool(p) => Some((
                i,
                p["spec"]["template"]["spec"]["nodeClassRef"]["name"]
                    .as_str()
                    .unwrap_or_default(),
                kubelets
                    .iter()
                    .find(|(k, _)| *k == i)
                    .map(|(_, k)| &k.value),
            )),
            _ => None,
        })
        .collect();
    let mut messages = Vec::new();
    for (pool, k) in &kubelets {
        let others: Vec<String> = pools
            .iter()
            .filter(|(p, class, value)| p != pool && *class == k.class && *value != Some(&k.value))
            .map(|(p, _, value)| {
                let what = if value.is_some() { "other" } else { "no" };
                format!("{} ({what} kubelet settings)", items[*p].1.object)
            })
            .collect();
        messages.push(if k.class.is_empty() {
            Some("not carried over: the pool names no node class to hold it".to_string())
        } else if !others.is_empty() {
            Some(format!(
                "not carried over: {} use{} EC2NodeClass/{} too, and Adze keeps kubelet settings on the node class; give this pool its own EC2NodeClass",
                others.join(", "),
                if others.len() == 1 { "s" } else { "" },
                k.class
            ))
        } else {
            None
        });
    }
    for ((pool, k), message) in kubelets.iter().zip(messages) {
        let message = if message.is_some() {
            message
        } else if let Some(c) = class_index(&items, &k.class) {
            let Item::Class(class) = &mut items[c].0 else {
                unreachable!("class_index finds classes")
            };
            match class.pointer("/spec/kubelet") {
                Some(existing) if existing != &k.value => Some(format!(
                    "not carried over: EC2NodeClass/{} has other kubelet settings",
                    k.class
                )),
                Some(_) => None,
                None => {
                    if let Some(spec) = class.get_mut("spec").and_then(Value::as_object_mut) {
                        spec.insert("kubelet".into(), k.value.clone());
                    }
                    None
                }
            }
        } else {
            Some(format!(
                "not carried over: EC2NodeClass/{} is not in the input; put these settings in its spec.kubelet",
                k.class
            ))
        };
        let notes = &mut items[*pool].1;
        match message {
            Some(m) => notes.action(&k.field, format!("{m} (was {})", short(&k.value))),
            None => notes.change(
                &k.field,
                format!("moved to EC2NodeClass/{} spec.kubelet", k.class),
            ),
        }
    }
    let mut m = Migration::default();
    // Two objects of one kind and name (an inline provider named like an AWSNodeTemplate, or
    // the same pool of two generations): the second would replace the first when applied.
    let mut seen = std::collections::BTreeSet::new();
    for (item, notes) in &mut items {
        let (kind, v) = match item {
            Item::Pool(v) => ("NodePool", &*v),
            Item::Class(v) => ("EC2NodeClass", &*v),
            Item::Overlay(v) => ("NodeOverlay", &*v),
            _ => continue,
        };
        let name = v["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if !seen.insert((kind, name.clone())) {
            notes.action(
                "metadata.name",
                format!("another {kind} in the output is also named {name}; rename one"),
            );
        }
    }
    for (item, mut notes) in items {
        let converted = match item {
            Item::Pool(v) => nodepool(v, &mut notes),
            Item::Class(mut v) => {
                node_role(&mut v, options, &mut notes);
                ec2nodeclass(v, &mut notes)
            }
            Item::Overlay(v) => nodeoverlay(v, &mut notes),
            Item::Adze(v) => Some(v),
            Item::Refused => None,
        };
        match converted {
            Some(o) => m.objects.push(o),
            None => m.not_converted.push(notes.object.clone()),
        }
        m.notes.extend(notes.list);
    }
    Ok(m)
}

/// Annotation in which Karpenter 1.0 keeps a converted v1beta1 pool's kubelet settings.
const KUBELET_ANNOTATION: &str = "compatibility.karpenter.sh/v1beta1-kubelet-conversion";
/// Prefixes of Karpenter's conversion bookkeeping annotations.
const COMPATIBILITY: &[&str] = &[
    "compatibility.karpenter.sh/",
    "compatibility.karpenter.k8s.aws/",
];

/// Reads Karpenter's compatibility annotations on a v1 NodePool: the kubelet settings are
/// returned for the node class; the rest is Karpenter's bookkeeping (removed in [`object`]).
fn compatibility(v: &Value, notes: &mut Notes) -> Option<legacy::Kubelet> {
    let ann = v["metadata"]["annotations"].get(KUBELET_ANNOTATION)?;
    let field = format!("metadata.annotations.{KUBELET_ANNOTATION}");
    let parsed = ann
        .as_str()
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .filter(Value::is_object);
    let Some(value) = parsed else {
        notes.action(
            &field,
            format!(
                "not a JSON object; kubelet settings not carried over (was {})",
                short(ann)
            ),
        );
        return None;
    };
    Some(legacy::Kubelet {
        field,
        class: v["spec"]["template"]["spec"]["nodeClassRef"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        value,
    })
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

fn nodepool(v: Value, notes: &mut Notes) -> Option<Value> {
    let mut spec = v.get("spec").cloned().unwrap_or_default();
    let mut dropped = Removed::new();
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
            } else {
                dropped.push(("spec.template.spec.requirements".to_string(), i));
            }
        }
    }
    if let Some(group) = spec.pointer_mut("/template/spec/nodeClassRef/group") {
        match group.as_str() {
            Some("karpenter.k8s.aws") => *group = Value::from("aws.adze.sh"),
            Some("aws.adze.sh") => {}
            other => notes.action(
                "spec.template.spec.nodeClassRef.group",
                format!(
                    "{}: Adze launches only EC2NodeClasses (aws.adze.sh); set it to aws.adze.sh and name an EC2NodeClass",
                    other.unwrap_or("unset")
                ),
            ),
        }
    }
    // `spec.replicas` (a static pool) is carried as is; validation below refuses what a static
    // pool may not have (weight, limits other than nodes), each at its path.
    let out = object("adze.sh/v1", "NodePool", &v, spec, notes);
    typed::<NodePool>(out, notes, dropped, |p| {
        p.validate().err().map(|e| e.errors)
    })
}

/// A Karpenter NodeOverlay (`karpenter.sh/v1alpha1`) as Adze's (`adze.sh/v1alpha1`): the same
/// fields, requirement keys renamed. A requirement on a label Adze does not have is kept, not
/// dropped: dropping it would widen what a discount or capacity applies to; kept, it selects
/// nothing until rewritten.
fn nodeoverlay(v: Value, notes: &mut Notes) -> Option<Value> {
    let mut spec = v.get("spec").cloned().unwrap_or_default();
    if let Some(reqs) = spec.get_mut("requirements").and_then(Value::as_array_mut) {
        for (i, r) in reqs.iter_mut().enumerate() {
            let field = format!("spec.requirements[{i}]");
            let key = r["key"].as_str().unwrap_or_default().to_string();
            if matches!(labels::map(&key), Key::Unsupported) {
                notes.action(
                    &field,
                    format!("requirement on {key} kept: Adze has no such label, so this overlay selects nothing until you express it with instance families or sizes"),
                );
                continue;
            }
            let before = r.clone();
            if !requirement(r, &field, notes) {
                *r = before;
            }
        }
    }
    let out = object("adze.sh/v1alpha1", "NodeOverlay", &v, spec, notes);
    typed::<NodeOverlay>(out, notes, Removed::new(), |o| {
        o.validate().err().map(|e| e.errors)
    })
}

/// Deploy/aws/adze.yaml's node role is `AdzeNode-<cluster>`, and its controller policy may pass
/// only that role (plus the stack's `ExtraNodeRoleArns`): a class keeping Karpenter's role
/// fails every launch until one of the two changes. `--node-role` rewrites the role; without
/// it the report lists the kept roles with both remedies.
fn node_role(class: &mut Value, options: &Options, notes: &mut Notes) {
    let Some(old) = class["spec"]["role"].as_str().map(str::to_string) else {
        // Neither a role nor an instance profile (a v1alpha5 provider used the controller's
        // default profile): the flag's role makes the class complete.
        if let Some(new) = &options.node_role
            && class["spec"].get("instanceProfile").is_none()
            && let Some(spec) = class.get_mut("spec").and_then(Value::as_object_mut)
        {
            spec.insert("role".into(), Value::from(new.clone()));
            notes.change(
                "spec.role",
                format!(
                    "{new} (--node-role): the input named neither a role nor an instance profile"
                ),
            );
        }
        return;
    };
    // Kept (no flag): reported once under the report ([`Migration::report`]).
    if let Some(new) = &options.node_role
        && *new != old
    {
        class["spec"]["role"] = Value::from(new.clone());
        notes.change(
            "spec.role",
            format!(
                "{new} (--node-role), was {old}: nodes get {new}'s permissions, not policies attached only to {old}"
            ),
        );
    }
}

fn ec2nodeclass(v: Value, notes: &mut Notes) -> Option<Value> {
    let mut spec = v.get("spec").cloned().unwrap_or_default();
    let family = spec
        .get("amiFamily")
        .and_then(Value::as_str)
        .map(str::to_string);
    let known =
        |f: &str| serde_json::from_value::<adze_api::ec2nodeclass::AmiFamily>(Value::from(f)).ok();
    if let Some(family) = &family
        && known(family).is_none()
    {
        let names: Vec<String> = adze_api::ec2nodeclass::AmiFamily::ALL
            .iter()
            .map(|f| format!("{f:?}"))
            .collect();
        notes.action(
            "spec.amiFamily",
            format!(
                "{family} is not supported (Adze: {}); removed, choose one",
                names.join(", ")
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
                    format!(
                        "{alias}: Adze resolves {} aliases only; pick one or select the AMI by id, name or tags",
                        adze_api::ec2nodeclass::AmiFamily::ALIAS_FAMILIES.join("@, ") + "@"
                    ),
                );
            }
        }
    }
    family_notes(&spec, notes);
    drop_unwritable_kubelet_fields(&mut spec, notes);
    let out = object("aws.adze.sh/v1", "EC2NodeClass", &v, spec, notes);
    typed::<EC2NodeClass>(out, notes, Vec::new(), |c| {
        c.validate().err().map(|e| e.errors)
    })
}

/// What a converted class's family means in Adze, where it differs from Karpenter: AL2
/// images end at Kubernetes 1.32; Windows pools are priced with the Windows licence and
/// offered only the types Adze has a Windows price for
/// ([`adze_scheduling::catalog::ec2_windows`]), where Karpenter offers every amd64 type.
fn family_notes(spec: &Value, notes: &mut Notes) {
    let Ok(parsed) =
        serde_json::from_value::<adze_api::ec2nodeclass::EC2NodeClassSpec>(spec.clone())
    else {
        return;
    };
    let Some(family) = parsed.effective_ami_family() else {
        return;
    };
    if family.is_windows() {
        let path = if parsed.ami_family.is_some() {
            "spec.amiFamily"
        } else {
            "spec.amiSelectorTerms[0].alias"
        };
        notes.change(
            path,
            format!("{family:?} carried; its pools plan at Windows (License Included) prices and Windows pod density, on the amd64 types Adze has a Windows price for (no bare metal, inf2 or trn1)"),
        );
    } else if family == adze_api::ec2nodeclass::AmiFamily::AL2 {
        notes.change(
            "spec.amiFamily",
            "AL2 carried as AL2 (bootstrap.sh user data); EKS publishes AL2 images up to Kubernetes 1.32 only, al2023@ is the successor".into(),
        );
    }
}

/// Removes the kubelet settings the class's family cannot carry
/// ([`adze_api::ec2nodeclass::KubeletConfiguration::unsupported_with`]), each with a note:
/// with Custom, Karpenter writes no user data either, so nothing changes for the nodes; with
/// another family the user decides (another family, or their own user data).
fn drop_unwritable_kubelet_fields(spec: &mut Value, notes: &mut Notes) {
    use adze_api::ec2nodeclass::AmiFamily;
    let Ok(parsed) =
        serde_json::from_value::<adze_api::ec2nodeclass::EC2NodeClassSpec>(spec.clone())
    else {
        return;
    };
    let (Some(family), Some(kubelet)) = (parsed.effective_ami_family(), &parsed.kubelet) else {
        return;
    };
    let Some(fields) = spec.get_mut("kubelet").and_then(Value::as_object_mut) else {
        return;
    };
    for (field, why) in kubelet.unsupported_with(family) {
        fields.remove(field);
        let path = format!("spec.kubelet.{field}");
        if family == AmiFamily::Custom {
            notes.change(
                &path,
                format!("removed: {why}; Karpenter does not apply it with Custom either"),
            );
        } else {
            notes.action(
                &path,
                format!(
                    "kubelet.{field} is not supported with {} ({why}); removed: use a family that carries it or set it in your own user data",
                    family.label()
                ),
            );
        }
    }
    if fields.is_empty()
        && let Some(s) = spec.as_object_mut()
    {
        s.remove("kubelet");
    }
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
    // Fields ObjectMeta lacks (`metadata.lables`) are not carried; say so where they were.
    for (field, was) in adze_api::validation::unknown_metadata_fields(v) {
        notes.action(
            &field,
            format!(
                "not carried over: Kubernetes' ObjectMeta has no such field (was {})",
                short(&was)
            ),
        );
    }
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
            .filter(|k| {
                labels::map(k) != Key::Same || COMPATIBILITY.iter().any(|p| k.starts_with(p))
            })
            .cloned()
            .collect();
        for k in karpenter {
            ann.remove(&k);
            // The kubelet annotation has its own note where it was read.
            if k != KUBELET_ANNOTATION {
                notes.change(
                    &format!("metadata.annotations.{k}"),
                    "Karpenter's own annotation; removed".into(),
                );
            }
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
    mut removed: Removed,
    validate: impl Fn(&T) -> Option<Vec<adze_api::validation::FieldError>>,
) -> Option<Value> {
    // Fields Adze's CRD does not declare (Karpenter's own, a newer version's, a typo) are
    // reported at their path and taken out, by the same schema walk a scenario and the CRD
    // apply: the output never carries a field Adze would refuse.
    let mut out = out;
    let kind = out["kind"].as_str().unwrap_or_default().to_string();
    for (field, was) in adze_api::validation::strip_unknown_fields(&kind, &mut out) {
        notes.action(
            &remap(&field, &removed),
            format!(
                "not carried over: Adze's {kind} has no such field (was {})",
                short(&was)
            ),
        );
    }
    // Each field Adze's type refuses is reported at its path and taken out (a list item
    // whole), and the rest is read again, so every error of an object is reported.
    let mut parsed: Option<T> = None;
    for _ in 0..MAX_FIELD_ERRORS {
        match serde_path_to_error::deserialize::<_, T>(out.clone()) {
            Ok(t) => {
                parsed = Some(t);
                break;
            }
            Err(e) => {
                let segments: Vec<&Segment> = e.path().iter().collect();
                // A field of a list item takes the item with it: half an item means nothing.
                let cut = match segments.as_slice() {
                    [.., Segment::Seq { .. }, Segment::Map { .. }] => segments.len() - 1,
                    _ => segments.len(),
                };
                let what = match segments.last() {
                    Some(Segment::Map { key }) if cut < segments.len() => {
                        format!("{key}: {}; the item removed", e.inner())
                    }
                    _ => format!("{}; removed", e.inner()),
                };
                let target = &segments[..cut];
                let at = remap(&path_string(target), &removed);
                // A missing field is named by its own path, not its parent's.
                let inner = e.inner().to_string();
                match inner
                    .strip_prefix("missing field `")
                    .and_then(|r| r.split_once('`'))
                {
                    Some((missing, _)) if cut == segments.len() => {
                        // Nothing to take out: the object cannot be read without it.
                        notes.action(
                            &join(&at, missing),
                            "missing: Adze requires this field".into(),
                        );
                        break;
                    }
                    _ => notes.action(&at, format!("not valid for Adze: {what}")),
                }
                if !remove_at(&mut out, target) {
                    break;
                }
                if let Some(Segment::Seq { .. }) = target.last()
                    && let Some((array, index)) = at.rsplit_once('[')
                    && let Ok(index) = index.trim_end_matches(']').parse::<usize>()
                {
                    removed.push((array.to_string(), index));
                }
            }
        }
    }
    let after_parse = notes.list.len();
    // An object Adze would still refuse is not printed: applied, it would fail anyway, and
    // the notes say what to fix in the input.
    const LEFT_OUT: &str = "left out of the output: Adze would refuse it as it is; fix the fields above in the input and run migrate again";
    let result = match parsed {
        None => {
            notes.action("spec", format!("not a valid Adze object; {LEFT_OUT}"));
            None
        }
        Some(parsed) => {
            let round_trip = serde_json::to_value(&parsed).unwrap_or_default();
            let mut pruned = out;
            prune(&mut pruned, &round_trip, "", notes);
            let errors = validate(&parsed).unwrap_or_default();
            let valid = errors.is_empty();
            for e in errors {
                notes.action(&e.path, e.message);
            }
            if valid {
                Some(pruned)
            } else {
                notes.action("metadata", LEFT_OUT.into());
                None
            }
        }
    };
    // Paths name the input's list items, not the positions left after removals.
    for n in &mut notes.list[after_parse..] {
        n.field = remap(&n.field, &removed);
    }
    result
}

/// List items taken out of an object: (path of the list, index in the input).
type Removed = Vec<(String, usize)>;

/// `field` with list indices counted as in the input, before the items in `removed` went.
fn remap(field: &str, removed: &Removed) -> String {
    let mut field = field.to_string();
    let mut arrays: Vec<&str> = removed.iter().map(|(p, _)| p.as_str()).collect();
    arrays.sort_by_key(|p| p.len());
    arrays.dedup();
    for array in arrays {
        let Some((num, tail)) = field
            .strip_prefix(array)
            .and_then(|r| r.strip_prefix('['))
            .and_then(|r| r.split_once(']'))
        else {
            continue;
        };
        let Ok(mut index) = num.parse::<usize>() else {
            continue;
        };
        let mut gone: Vec<usize> = removed
            .iter()
            .filter(|(p, _)| p == array)
            .map(|(_, i)| *i)
            .collect();
        gone.sort_unstable();
        for g in gone {
            if g <= index {
                index += 1;
            }
        }
        field = format!("{array}[{index}]{tail}");
    }
    field
}

/// A deserializer path as the notes write it: `spec.template.spec.requirements[2].operator`.
fn path_string(segments: &[&Segment]) -> String {
    let mut out = String::new();
    for s in segments {
        match s {
            Segment::Seq { index } => out += &format!("[{index}]"),
            Segment::Map { key } => out = join(&out, key),
            Segment::Enum { variant } => out = join(&out, variant),
            Segment::Unknown => out = join(&out, "?"),
        }
    }
    out
}

/// Field errors reported per object before giving up on it.
const MAX_FIELD_ERRORS: usize = 64;

/// Removes the field at `path` from `v`; false when there is nothing to remove (the error is
/// about the object itself, e.g. a missing required field of the whole spec).
fn remove_at(v: &mut Value, segments: &[&Segment]) -> bool {
    let Some((last, parents)) = segments.split_last() else {
        return false;
    };
    if parents.is_empty() {
        return false;
    }
    let mut at = v;
    for s in parents {
        let next = match (s, at) {
            (Segment::Map { key }, Value::Object(o)) => o.get_mut(key),
            (Segment::Seq { index }, Value::Array(a)) => a.get_mut(*index),
            _ => None,
        };
        match next {
            Some(n) => at = n,
            None => return false,
        }
    }
    match (last, at) {
        (Segment::Map { key }, Value::Object(o)) => o.remove(key).is_some(),
        (Segment::Seq { index }, Value::Array(a)) if *index < a.len() => {
            a.remove(*index);
            true
        }
        _ => false,
    }
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
