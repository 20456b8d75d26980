//! docs/reference/crds.md and docs/reference/chart-values.md are generated from the CRDs the
//! chart ships (the Rust types through `crds::all()`) and from charts/adze/values.yaml with
//! values.schema.json. These tests fail when a checked-in page differs from what the code and
//! chart say; `ADZE_REGENERATE_DOCS=1` (docs/reference/generate.sh) rewrites the pages instead.

use std::collections::BTreeMap;
use std::path::PathBuf;

use adze_api::crds;
use adze_cli::reference::{self, cell};
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Compares `text` with the page at `rel` (from the repository root), or writes it when
/// regenerating.
fn sync_page(rel: &str, text: &str) {
    reference::sync_page(&root().join(rel), text);
}

/// Checks (or rewrites) the section `name` of the page at `rel`.
fn sync_section(rel: &str, name: &str, body: &str) {
    reference::sync_section(&root().join(rel), name, body);
}

fn compact(v: &Value) -> String {
    format!(
        "`{}`",
        serde_json::to_string(v).unwrap().replace('|', "\\|")
    )
}

// ---------------------------------------------------------------------------------------------
// CRDs

fn type_of(node: &Value) -> String {
    if node.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return "integer or string".into();
    }
    let t = match &node["type"] {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ if node.get("anyOf").is_some() || node.get("oneOf").is_some() => "one of several".into(),
        _ => "any".into(),
    };
    match t.as_str() {
        "array" => format!("array of {}", type_of(&node["items"])),
        "object"
            if node.get("properties").is_none()
                && node
                    .get("additionalProperties")
                    .is_some_and(Value::is_object) =>
        {
            format!("map of {}", type_of(&node["additionalProperties"]))
        }
        _ => t,
    }
}

fn validation(node: &Value) -> String {
    let mut out = Vec::new();
    if let Some(values) = node.get("enum").and_then(Value::as_array) {
        let list: Vec<String> = values.iter().map(compact).collect();
        out.push(format!("one of {}", list.join(", ")));
    }
    if let Some(f) = node.get("format").and_then(Value::as_str) {
        out.push(format!("format {f}"));
    }
    for (key, what) in [
        ("minimum", "≥"),
        ("maximum", "≤"),
        ("minLength", "length ≥"),
        ("maxLength", "length ≤"),
        ("minItems", "items ≥"),
        ("maxItems", "items ≤"),
        ("minProperties", "entries ≥"),
        ("maxProperties", "entries ≤"),
    ] {
        if let Some(v) = node.get(key) {
            // Bounds are JSON numbers (schemars writes 100.0); whole ones read as integers.
            let shown = match v.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
                _ => v.to_string(),
            };
            out.push(format!("{what} {shown}"));
        }
    }
    if let Some(p) = node.get("pattern").and_then(Value::as_str) {
        out.push(format!("matches `{p}`"));
    }
    if let Some(rules) = node
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
    {
        for r in rules {
            match r.get("message").and_then(Value::as_str) {
                Some(m) => out.push(format!("rule: {m}")),
                None => out.push(format!("rule: `{}`", r["rule"].as_str().unwrap_or(""))),
            }
        }
    }
    cell(&out.join("; "))
}

fn walk_crd(path: &str, node: &Value, required: bool, rows: &mut Vec<String>) {
    let description = node
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("");
    let default = node.get("default").map(compact).unwrap_or_default();
    rows.push(format!(
        "| `{path}` | {} | {} | {default} | {} | {} |",
        cell(&type_of(node)),
        if required { "yes" } else { "" },
        validation(node),
        cell(description)
    ));
    let mut child = node;
    let mut prefix = path.to_string();
    // Through arrays (of arrays) and maps down to the element's own fields.
    loop {
        if child.get("items").is_some() {
            child = &child["items"];
            prefix.push_str("[]");
        } else if child.get("properties").is_none()
            && child
                .get("additionalProperties")
                .is_some_and(Value::is_object)
        {
            child = &child["additionalProperties"];
            prefix.push_str(".*");
        } else {
            break;
        }
        if child.get("x-kubernetes-validations").is_some() && prefix.ends_with(']') {
            // Rules on each element are shown on the element's row.
            rows.push(format!(
                "| `{prefix}` | {} |  |  | {} |  |",
                cell(&type_of(child)),
                validation(child)
            ));
        }
    }
    let Some(props) = child.get("properties").and_then(Value::as_object) else {
        return;
    };
    let req: Vec<&str> = child
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, sub) in props {
        walk_crd(
            &format!("{prefix}.{name}"),
            sub,
            req.contains(&name.as_str()),
            rows,
        );
    }
}

fn crd_section(crd: &Value, out: &mut String) {
    let spec = &crd["spec"];
    let kind = spec["names"]["kind"].as_str().unwrap();
    let group = spec["group"].as_str().unwrap();
    for version in spec["versions"].as_array().unwrap() {
        if version["served"] != Value::Bool(true) {
            continue;
        }
        let v = version["name"].as_str().unwrap();
        out.push_str(&format!("\n## {kind} (`{group}/{v}`)\n\n"));
        let scope = spec["scope"].as_str().unwrap_or("");
        let short: Vec<String> = spec["names"]["shortNames"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(|s| format!("`{s}`"))
                    .collect()
            })
            .unwrap_or_default();
        out.push_str(&format!(
            "{scope}; plural `{}`{}.\n",
            spec["names"]["plural"].as_str().unwrap(),
            if short.is_empty() {
                String::new()
            } else {
                format!(", short names {}", short.join(", "))
            }
        ));
        let schema = &version["schema"]["openAPIV3Schema"];
        if let Some(d) = schema.get("description").and_then(Value::as_str) {
            out.push_str(&format!(
                "\n{}\n",
                d.split_whitespace().collect::<Vec<_>>().join(" ")
            ));
        }
        let props = schema["properties"].as_object().unwrap();
        let req: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(rules) = schema
            .get("x-kubernetes-validations")
            .and_then(Value::as_array)
        {
            out.push_str("\nWhole-object rules:\n\n");
            for r in rules {
                let m = r["message"].as_str().or(r["rule"].as_str()).unwrap_or("");
                out.push_str(&format!("- {}\n", cell(m)));
            }
        }
        for section in ["spec", "status"] {
            let Some(node) = props.get(section) else {
                continue;
            };
            out.push_str(&format!("\n### `{section}`\n\n"));
            out.push_str("| Field | Type | Required | Default | Validation | Description |\n");
            out.push_str("|---|---|---|---|---|---|\n");
            let mut rows = Vec::new();
            walk_crd(section, node, req.contains(&section), &mut rows);
            for r in rows {
                out.push_str(&r);
                out.push('\n');
            }
        }
    }
}

fn crds_page() -> String {
    let mut out = String::from(
        "# CRD reference\n\n\
         Every field of the custom resources Adze serves, as the API server validates them. \
         Paths are relative to the object; `[]` marks the elements of a list and `.*` the \
         values of a map. Required fields must be set when their parent is; Validation lists \
         enumerations, bounds, patterns and the messages of the validation rules the API \
         server applies (clusters older than Kubernetes 1.25 do not run those rules).\n\n\
         Generated from the CRDs the chart installs (`crdgen`); do not edit by hand.\n",
    );
    let mut all: Vec<Value> = crds::all()
        .iter()
        .map(|c| serde_json::to_value(c).unwrap())
        .collect();
    all.sort_by_key(|c| c["spec"]["names"]["kind"].as_str().unwrap().to_string());
    for crd in &all {
        crd_section(crd, &mut out);
    }
    out.push_str(
        "\n## Optional: CapacityBuffer\n\n\
         Installed only with the chart's `provisioner.capacityBuffers` (and \
         `provisioner.installCapacityBufferCRD`): SIG Autoscaling's API, which Adze reads.\n",
    );
    let mut cb = String::new();
    crd_section(
        &serde_json::to_value(crds::capacity_buffer()).unwrap(),
        &mut cb,
    );
    out.push_str(
        &cb.replacen("\n## ", "\n### ", 1)
            .replace("\n### `", "\n#### `"),
    );
    out
}

#[test]
fn crds_reference_is_current() {
    let page = crds_page();
    for kind in [
        "NodePool",
        "NodeClaim",
        "EC2NodeClass",
        "NodeOverlay",
        "CapacityBuffer",
    ] {
        assert!(
            page.contains(&format!("\n## {kind} (")) || page.contains(&format!("\n### {kind} (")),
            "{kind} missing"
        );
    }
    sync_page("docs/reference/crds.md", &page);
}

// ---------------------------------------------------------------------------------------------
// Chart values

/// Each key's comment block in values.yaml (the `#` lines right above it), by dotted path.
fn comments(yaml: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    for line in yaml.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if trimmed.is_empty() {
            pending.clear();
            continue;
        }
        if let Some(c) = trimmed.strip_prefix('#') {
            pending.push(c.strip_prefix(' ').unwrap_or(c).to_string());
            continue;
        }
        if trimmed.starts_with('-') {
            pending.clear();
            continue;
        }
        let Some((key, _)) = trimmed.split_once(':') else {
            pending.clear();
            continue;
        };
        while stack.last().is_some_and(|(i, _)| *i >= indent) {
            stack.pop();
        }
        let key = key.trim_matches('"').to_string();
        let path = stack
            .iter()
            .map(|(_, k)| k.as_str())
            .chain([key.as_str()])
            .collect::<Vec<_>>()
            .join(".");
        if !pending.is_empty() {
            out.insert(path, pending.join("\n"));
        }
        pending.clear();
        stack.push((indent, key));
    }
    out
}

fn schema_type(node: &Value) -> String {
    if let Some(values) = node.get("enum").and_then(Value::as_array) {
        let list: Vec<String> = values.iter().map(compact).collect();
        return format!("one of {}", list.join(", "));
    }
    match &node["type"] {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "any".into(),
    }
}

struct Row {
    path: String,
    kind: String,
    default: String,
    description: Option<String>,
}

fn walk_values(
    path: &str,
    value: Option<&Value>,
    schema: &Value,
    notes: &BTreeMap<String, String>,
    rows: &mut Vec<Row>,
) {
    let props = schema.get("properties").and_then(Value::as_object);
    match (value, props) {
        (Some(Value::Object(map)), Some(props)) if !map.is_empty() => {
            // A commented group inside a section (extender.tls, ...) gets a row of its own:
            // its comment says what the values below it have in common.
            if path.contains('.')
                && let Some(note) = notes.get(path)
            {
                rows.push(Row {
                    path: path.to_string(),
                    kind: "group".into(),
                    default: String::new(),
                    description: Some(note.clone()),
                });
            }
            // values.yaml's order first, then what only the schema knows.
            for (k, v) in map {
                let sub = props
                    .get(k)
                    .unwrap_or_else(|| panic!("{path}.{k} is not in values.schema.json"));
                walk_values(&join(path, k), Some(v), sub, notes, rows);
            }
            for (k, sub) in props {
                if !map.contains_key(k) {
                    walk_values(&join(path, k), None, sub, notes, rows);
                }
            }
        }
        _ => {
            let description = notes.get(path).cloned().or_else(|| {
                schema
                    .get("description")
                    .and_then(Value::as_str)
                    .map(String::from)
            });
            if value.is_none() && description.is_none() {
                // Accepted by the schema without a default and without a description
                // (Helm's `global`, Kubernetes' `resources.claims`): nothing to say about it.
                return;
            }
            rows.push(Row {
                path: path.to_string(),
                kind: schema_type(schema),
                default: value.map(compact).unwrap_or_else(|| "unset".into()),
                description,
            });
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn chart_values_page() -> Result<String, Vec<String>> {
    let chart = root().join("charts/adze");
    let text = std::fs::read_to_string(chart.join("values.yaml")).unwrap();
    let values: Value = serde_yaml::from_str(&text).unwrap();
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(chart.join("values.schema.json")).unwrap())
            .unwrap();
    let notes = comments(&text);
    let mut rows = Vec::new();
    walk_values("", Some(&values), &schema, &notes, &mut rows);
    let missing: Vec<String> = rows
        .iter()
        .filter(|r| r.description.is_none())
        .map(|r| r.path.clone())
        .collect();
    if !missing.is_empty() {
        return Err(missing);
    }
    let mut out = String::from(
        "# Helm chart values\n\n\
         Every value of the `adze` chart with its type, default and meaning. Set them with \
         `--set` or a values file; values.schema.json refuses unknown keys and wrong types at \
         install. Generated from charts/adze/values.yaml (its comments) and \
         values.schema.json; do not edit by hand.\n",
    );
    let mut sections: Vec<(String, Vec<&Row>)> = Vec::new();
    for r in &rows {
        let top = match r.path.split_once('.') {
            Some((top, _)) => top.to_string(),
            None => "General".to_string(),
        };
        match sections.iter_mut().find(|(t, _)| *t == top) {
            Some((_, list)) => list.push(r),
            None => sections.push((top, vec![r])),
        }
    }
    // Top-level scalars first, then the sections in name order.
    sections.sort_by_key(|(t, _)| (t != "General", t.clone()));
    for (title, list) in sections {
        if title == "General" {
            out.push_str("\n## General\n\n");
        } else {
            out.push_str(&format!("\n## `{title}`\n\n"));
            if let Some(n) = notes.get(&title) {
                out.push_str(&format!(
                    "{}\n\n",
                    n.split_whitespace().collect::<Vec<_>>().join(" ")
                ));
            }
        }
        out.push_str("| Value | Type | Default | Description |\n|---|---|---|---|\n");
        for r in list {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} |\n",
                r.path,
                cell(&r.kind),
                r.default,
                cell(r.description.as_deref().unwrap_or(""))
            ));
        }
    }
    Ok(out)
}

#[test]
fn every_chart_value_has_a_description_and_the_reference_is_current() {
    let page = chart_values_page().unwrap_or_else(|missing| {
        panic!(
            "chart values without a description (add a comment right above each in \
             charts/adze/values.yaml): {missing:#?}"
        )
    });
    sync_page("docs/reference/chart-values.md", &page);
}

#[test]
fn comments_belong_to_the_key_right_below_them() {
    let notes = comments("# header\n\na:\n  # about b\n  b: 1\n  c: 2\n# about d\nd: {}\n");
    assert_eq!(notes.get("a.b").map(String::as_str), Some("about b"));
    assert_eq!(notes.get("d").map(String::as_str), Some("about d"));
    assert!(
        !notes.contains_key("a"),
        "a blank line ends a comment block"
    );
    assert!(!notes.contains_key("a.c"));
}

// ---------------------------------------------------------------------------------------------
// crdgen

#[test]
fn crdgen_reference_is_current_and_every_listed_flag_is_accepted() {
    let mut body = String::from(
        "\n### `crdgen`\n\nPrints Adze's CRDs as one YAML stream (for `kubectl apply -f -`).\n\n\
         | Flag | Value | Description |\n|---|---|---|\n",
    );
    for (flag, value, help) in crds::CRDGEN_FLAGS {
        let value = if value.is_empty() {
            "switch".to_string()
        } else {
            format!("`{value}`")
        };
        body.push_str(&format!("| `{flag}` | {value} | {} |\n", cell(help)));
    }
    sync_section("docs/reference/cli.md", "crdgen", &body);

    let bin = env!("CARGO_BIN_EXE_crdgen");
    let dir = std::env::temp_dir().join(format!("adze-crdgen-ref-{}", std::process::id()));
    for (flag, value, _) in crds::CRDGEN_FLAGS {
        let mut cmd = std::process::Command::new(bin);
        cmd.arg(flag);
        if !value.is_empty() {
            cmd.arg(&dir);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "crdgen {flag}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    let help = std::process::Command::new(bin)
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for (flag, _, _) in crds::CRDGEN_FLAGS {
        assert!(help.contains(flag), "--help lists {flag}: {help}");
    }
    let bad = std::process::Command::new(bin)
        .arg("--bogus")
        .output()
        .unwrap();
    assert!(!bad.status.success(), "an unknown flag is refused");
}
