//! Helpers shared by the integration tests: fixtures, and two stand-ins for the apiserver — the
//! OpenAPI value checks a CRD schema implies, and its CEL rules evaluated by kube's client-side
//! CEL engine.

#![allow(dead_code)] // each test binary uses a different subset

use std::path::PathBuf;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::cel::Validator;
use serde_json::{Value, json};

pub fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("reading {}: {err}", path.display()))
}

pub fn fixture_json(name: &str) -> Value {
    serde_yaml::from_str(&fixture(name)).expect("fixture is YAML")
}

/// The openAPIV3Schema of the CRD's only version, as JSON.
pub fn schema_of(crd: &CustomResourceDefinition) -> Value {
    let schema = crd.spec.versions[0]
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .expect("CRD has a schema");
    serde_json::to_value(schema).unwrap()
}

/// Sets the value at a JSON pointer, creating objects on the way.
pub fn set(target: &mut Value, pointer: &str, value: Value) {
    let mut current = target;
    let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        let part = part.replace("~1", "/").replace("~0", "~");
        let last = i == parts.len() - 1;
        current = match current {
            Value::Array(items) => {
                let index: usize = part.parse().expect("array index");
                if last {
                    if index == items.len() {
                        items.push(value);
                    } else {
                        items[index] = value;
                    }
                    return;
                }
                &mut items[index]
            }
            Value::Object(map) => {
                if last {
                    map.insert(part, value);
                    return;
                }
                map.entry(part).or_insert_with(|| json!({}))
            }
            other => panic!("cannot descend into {other}"),
        };
    }
}

/// Removes the value at a JSON pointer.
pub fn remove(target: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').expect("pointer has a parent");
    let key = key.replace("~1", "/").replace("~0", "~");
    match target.pointer_mut(parent).expect("parent exists") {
        Value::Object(map) => {
            map.remove(&key);
        }
        Value::Array(items) => {
            items.remove(key.parse::<usize>().unwrap());
        }
        other => panic!("cannot remove from {other}"),
    }
}

/// Failures of the CRD's CEL rules for `object` (and `old`, for transition rules).
pub fn cel_failures(
    crd: &CustomResourceDefinition,
    object: &Value,
    old: Option<&Value>,
) -> Vec<String> {
    match Validator::new().validate(&schema_of(crd), object, old) {
        Ok(()) => Vec::new(),
        Err(errors) => errors.into_vec().iter().map(|e| e.to_string()).collect(),
    }
}

/// Failures of the OpenAPI value validations (type, enum, pattern, bounds, required) the
/// apiserver applies before CEL. Covers the keywords Adze's CRDs use.
pub fn schema_failures(crd: &CustomResourceDefinition, object: &Value) -> Vec<String> {
    let mut failures = Vec::new();
    check_value(&schema_of(crd), object, "", &mut failures);
    failures
}

pub fn check_value(schema: &Value, value: &Value, path: &str, out: &mut Vec<String>) {
    let mut fail = |message: String| out.push(format!("{path}: {message}"));
    if value.is_null() {
        if schema.get("nullable") != Some(&json!(true)) {
            fail("null not allowed".into());
        }
        return;
    }
    let int_or_string = schema.get("x-kubernetes-int-or-string") == Some(&json!(true));
    if int_or_string {
        if !(value.is_string() || value.is_i64() || value.is_u64()) {
            fail(format!("{value} is neither an integer nor a string"));
        }
    } else if let Some(expected) = schema.get("type").and_then(Value::as_str) {
        let ok = match expected {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            _ => true,
        };
        if !ok {
            fail(format!("{value} is not of type {expected}"));
            return;
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        fail(format!("{value} is not one of {allowed:?}"));
    }
    if let Some(text) = value.as_str() {
        if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
            && !regex::Regex::new(pattern).unwrap().is_match(text)
        {
            fail(format!("{text:?} does not match {pattern}"));
        }
        let len = text.chars().count() as u64;
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
            && len > max
        {
            fail(format!("longer than {max}"));
        }
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
            && len < min
        {
            fail(format!("shorter than {min}"));
        }
    }
    if let Some(number) = value.as_f64() {
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
            && number > max
        {
            fail(format!("{number} above maximum {max}"));
        }
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
            && number < min
        {
            fail(format!("{number} below minimum {min}"));
        }
    }
    if let Some(items) = value.as_array() {
        let n = items.len() as u64;
        if schema
            .get("maxItems")
            .and_then(Value::as_u64)
            .is_some_and(|max| n > max)
        {
            fail(format!("more than maxItems ({n})"));
        }
        if schema
            .get("minItems")
            .and_then(Value::as_u64)
            .is_some_and(|min| n < min)
        {
            fail(format!("fewer than minItems ({n})"));
        }
        if let Some(item_schema) = schema.get("items") {
            for (i, item) in items.iter().enumerate() {
                check_value(item_schema, item, &format!("{path}[{i}]"), out);
            }
        }
    }
    if let Some(map) = value.as_object() {
        let n = map.len() as u64;
        if schema
            .get("maxProperties")
            .and_then(Value::as_u64)
            .is_some_and(|max| n > max)
        {
            out.push(format!("{path}: more than maxProperties ({n})"));
        }
        if schema
            .get("minProperties")
            .and_then(Value::as_u64)
            .is_some_and(|min| n < min)
        {
            out.push(format!("{path}: fewer than minProperties ({n})"));
        }
        for required in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let required = required.as_str().unwrap();
            if !map.contains_key(required) {
                out.push(format!("{path}: missing required field {required}"));
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        for (key, child) in map {
            let child_path = format!("{path}.{key}");
            if let Some(child_schema) = properties.and_then(|p| p.get(key)) {
                check_value(child_schema, child, &child_path, out);
            } else if let Some(additional) = schema.get("additionalProperties")
                && additional.is_object()
            {
                check_value(additional, child, &format!("{path}[{key}]"), out);
            }
        }
    }
}

/// Whether the apiserver would refuse `object`: by schema or by CEL.
pub fn apiserver_refuses(crd: &CustomResourceDefinition, object: &Value) -> bool {
    !schema_failures(crd, object).is_empty() || !cel_failures(crd, object, None).is_empty()
}
