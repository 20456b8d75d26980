//! Test stand-in for what a Kubernetes 1.25+ apiserver does with the CRDs' CEL rules: collect
//! every `x-kubernetes-validations` rule from the committed CRD files with its schema location,
//! check it as CRD creation does (see `check`), and evaluate each rule on its own against an
//! object, with `self` (and `oldSelf`) bound to the value at the rule's location, recording
//! which rules passed and which failed so a test can demand that every rule was seen both ways.
//!
//! Evaluation uses kube-rs's `kube-cel` (the `cel` crate, cel-rust, plus the Kubernetes
//! extension functions); type checking and cost estimation, which cel-rust lacks, are in `check`.

pub mod check;

use std::{
    collections::{BTreeMap, BTreeSet},
    path::PathBuf,
};

use kube::core::cel::{KubeCelExt, apply_defaults, cel};
use serde_json::Value;

/// The chart's copy of the CRDs is what `helm install` creates; `manifests/crds` must equal it.
pub const CRD_DIR: &str = "../charts/adze/crds";

/// A container between the schema root and a rule: how many times the rule may run.
#[derive(Clone, Debug)]
pub enum Container {
    /// Items of a list; `map_list` when `x-kubernetes-list-type: map` (items correlate by key).
    List {
        max_items: Option<u64>,
        map_list: bool,
    },
    /// Values of a map (`additionalProperties`), which correlate by key.
    Map { max_properties: Option<u64> },
}

/// One rule of one CRD, with everything the apiserver reads from it.
#[derive(Clone, Debug)]
pub struct RuleSite {
    pub crd: String,
    pub file: String,
    /// Schema location, e.g. `.spec.amiSelectorTerms[]` (`[]` list items, `{}` map values).
    pub path: String,
    /// Position among the rules at `path`.
    pub index: usize,
    pub schema: Value,
    pub containers: Vec<Container>,
    pub rule: String,
    pub message: Option<String>,
    pub message_expression: Option<String>,
    pub reason: Option<String>,
    pub field_path: Option<String>,
    pub optional_old_self: Option<bool>,
}

impl RuleSite {
    /// `NodePool .spec.template.spec.requirements[] #1`, unique per rule.
    pub fn id(&self) -> String {
        format!("{} {} #{}", self.crd, self.path, self.index)
    }

    /// The message the apiserver reports when the rule fails (messageExpression aside).
    pub fn failure_message(&self) -> String {
        self.message
            .clone()
            .unwrap_or_else(|| format!("failed rule: {}", self.rule))
    }
}

/// The committed CRD files, by kind: (file name, CRD as JSON).
pub fn committed_crds() -> Vec<(String, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(CRD_DIR);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let crd: Value = serde_yaml::from_str(&text).expect("CRD file is YAML");
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                crd,
            )
        })
        .collect()
}

pub fn kind_of(crd: &Value) -> String {
    crd["spec"]["names"]["kind"].as_str().unwrap().to_string()
}

pub fn schema_of(crd: &Value) -> &Value {
    let versions = crd["spec"]["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1, "one version per CRD");
    &versions[0]["schema"]["openAPIV3Schema"]
}

/// Every rule of every committed CRD.
pub fn all_rules() -> Vec<RuleSite> {
    let mut sites = Vec::new();
    for (file, crd) in committed_crds() {
        let kind = kind_of(&crd);
        collect(schema_of(&crd), "", &[], &kind, &file, &mut sites);
    }
    sites
}

fn collect(
    schema: &Value,
    path: &str,
    containers: &[Container],
    kind: &str,
    file: &str,
    out: &mut Vec<RuleSite>,
) {
    if let Some(rules) = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
    {
        for (index, rule) in rules.iter().enumerate() {
            let text = |key: &str| rule.get(key).and_then(Value::as_str).map(String::from);
            out.push(RuleSite {
                crd: kind.into(),
                file: file.into(),
                path: if path.is_empty() {
                    ".".into()
                } else {
                    path.into()
                },
                index,
                schema: schema.clone(),
                containers: containers.to_vec(),
                rule: text("rule").expect("every validation has a rule"),
                message: text("message"),
                message_expression: text("messageExpression"),
                reason: text("reason"),
                field_path: text("fieldPath"),
                optional_old_self: rule.get("optionalOldSelf").and_then(Value::as_bool),
            });
        }
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, child) in props {
            collect(
                child,
                &format!("{path}.{name}"),
                containers,
                kind,
                file,
                out,
            );
        }
    }
    if let Some(items) = schema.get("items") {
        let mut inner = containers.to_vec();
        inner.push(Container::List {
            max_items: schema.get("maxItems").and_then(Value::as_u64),
            map_list: schema.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map"),
        });
        collect(items, &format!("{path}[]"), &inner, kind, file, out);
    }
    if let Some(values) = schema.get("additionalProperties").filter(|v| v.is_object()) {
        let mut inner = containers.to_vec();
        inner.push(Container::Map {
            max_properties: schema.get("maxProperties").and_then(Value::as_u64),
        });
        collect(values, &format!("{path}{{}}"), &inner, kind, file, out);
    }
}

/// What one rule did at one place in one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    /// The rule returned false: the apiserver reports the message at this data path.
    Fail {
        at: String,
        message: String,
    },
    /// Evaluation failed (e.g. a missing field read without `has()`); the apiserver refuses
    /// the object too, with this error.
    Error {
        at: String,
        error: String,
    },
}

/// A rule ready to run: parsed once, since parsing dominates evaluation time.
struct Prepared {
    site: RuleSite,
    program: cel::Program,
    transition: bool,
}

/// Evaluates one CRD's rules against objects.
pub struct Evaluator {
    schema: Value,
    sites: BTreeMap<String, Vec<Prepared>>,
    base: cel::Context<'static>,
}

impl Evaluator {
    pub fn new(crd: &Value) -> Evaluator {
        let schema = schema_of(crd).clone();
        let mut all = Vec::new();
        collect(&schema, "", &[], &kind_of(crd), "", &mut all);
        let mut sites: BTreeMap<String, Vec<Prepared>> = BTreeMap::new();
        for site in all {
            let program = cel::Program::compile(&site.rule)
                .unwrap_or_else(|e| panic!("{} does not parse: {e}", site.id()));
            let transition = program.references().has_variable("oldSelf");
            sites.entry(site.path.clone()).or_default().push(Prepared {
                site,
                program,
                transition,
            });
        }
        let mut base = cel::Context::default();
        base.register_all();
        Evaluator {
            schema,
            sites,
            base,
        }
    }

    /// Evaluates every rule against `object` (an update when `old` is given), the way the
    /// apiserver does after defaulting: each rule where its schema location exists in the
    /// object, transition rules only where the old object has a value at the same location.
    pub fn evaluate(&self, object: &Value, old: Option<&Value>) -> Vec<(String, Outcome)> {
        let object = apply_defaults(&self.schema, object);
        let old = old.map(|o| apply_defaults(&self.schema, o));
        let mut out = Vec::new();
        self.walk(&self.schema, &object, old.as_ref(), "", "", &mut out);
        out
    }

    fn walk(
        &self,
        schema: &Value,
        value: &Value,
        old: Option<&Value>,
        schema_path: &str,
        data_path: &str,
        out: &mut Vec<(String, Outcome)>,
    ) {
        let key = if schema_path.is_empty() {
            "."
        } else {
            schema_path
        };
        for rule in self.sites.get(key).into_iter().flatten() {
            if rule.transition && old.is_none() && rule.site.optional_old_self != Some(true) {
                continue;
            }
            let at = if data_path.is_empty() {
                "<root>".to_string()
            } else {
                data_path.to_string()
            };
            out.push((rule.site.id(), self.run(rule, value, old, at)));
        }
        if let (Some(props), Some(map)) = (
            schema.get("properties").and_then(Value::as_object),
            value.as_object(),
        ) {
            for (name, child_schema) in props {
                if let Some(child) = map.get(name) {
                    let child_old = old.and_then(|o| o.get(name));
                    self.walk(
                        child_schema,
                        child,
                        child_old,
                        &format!("{schema_path}.{name}"),
                        &format!("{data_path}.{name}"),
                        out,
                    );
                }
            }
        }
        if let (Some(items_schema), Some(items)) = (schema.get("items"), value.as_array()) {
            // Items of atomic lists do not correlate with the old list: no oldSelf below them.
            let map_keys: Option<Vec<&str>> = (schema.get("x-kubernetes-list-type")
                == Some(&Value::String("map".into())))
            .then(|| {
                schema["x-kubernetes-list-map-keys"]
                    .as_array()
                    .map(|keys| keys.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default()
            });
            for (i, item) in items.iter().enumerate() {
                let item_old = map_keys.as_ref().and_then(|keys| {
                    old.and_then(Value::as_array)?
                        .iter()
                        .find(|o| keys.iter().all(|k| o.get(k) == item.get(k)))
                });
                self.walk(
                    items_schema,
                    item,
                    item_old,
                    &format!("{schema_path}[]"),
                    &format!("{data_path}[{i}]"),
                    out,
                );
            }
        }
        if let (Some(values_schema), Some(map)) = (
            schema.get("additionalProperties").filter(|v| v.is_object()),
            value.as_object(),
        ) {
            for (k, v) in map {
                let v_old = old.and_then(|o| o.get(k));
                self.walk(
                    values_schema,
                    v,
                    v_old,
                    &format!("{schema_path}{{}}"),
                    &format!("{data_path}[{k}]"),
                    out,
                );
            }
        }
    }

    fn run(&self, rule: &Prepared, value: &Value, old: Option<&Value>, at: String) -> Outcome {
        let site = &rule.site;
        let mut scope = self.base.new_inner_scope();
        scope.add_variable_from_value("self", to_cel(value));
        scope.add_variable_from_value("oldSelf", old.map_or(cel::Value::Null, to_cel));
        match rule.program.execute(&scope) {
            Ok(cel::Value::Bool(true)) => Outcome::Pass,
            Ok(cel::Value::Bool(false)) => {
                let message = match &site.message_expression {
                    Some(expr) => match cel::Program::compile(expr).map(|p| p.execute(&scope)) {
                        Ok(Ok(cel::Value::String(s))) => (*s).clone(),
                        _ => site.failure_message(),
                    },
                    None => site.failure_message(),
                };
                let at = match &site.field_path {
                    Some(fp) => format!("{at}{fp}"),
                    None => at,
                };
                Outcome::Fail { at, message }
            }
            Ok(other) => Outcome::Error {
                at,
                error: format!("returned {other:?}, not a bool"),
            },
            Err(e) => Outcome::Error {
                at,
                error: e.to_string(),
            },
        }
    }
}

/// JSON as the apiserver hands it to CEL: integers are `int`, objects are maps by field name.
pub fn to_cel(value: &Value) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => cel::Value::Int(i),
            None => cel::Value::Float(n.as_f64().unwrap()),
        },
        Value::String(s) => cel::Value::String(s.clone().into()),
        Value::Array(items) => {
            cel::Value::List(items.iter().map(to_cel).collect::<Vec<_>>().into())
        }
        Value::Object(map) => {
            let map: std::collections::HashMap<String, cel::Value> =
                map.iter().map(|(k, v)| (k.clone(), to_cel(v))).collect();
            cel::Value::Map(map.into())
        }
    }
}

/// Rules that passed and rules that failed, over many evaluations.
#[derive(Default)]
pub struct Coverage {
    pub passed: BTreeSet<String>,
    pub failed: BTreeSet<String>,
}

impl Coverage {
    pub fn record(&mut self, outcomes: &[(String, Outcome)]) {
        for (id, outcome) in outcomes {
            match outcome {
                Outcome::Pass => self.passed.insert(id.clone()),
                Outcome::Fail { .. } | Outcome::Error { .. } => self.failed.insert(id.clone()),
            };
        }
    }
}
