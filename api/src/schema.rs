//! Hand-written schemas for fields whose Rust type says too little (or too much) for the CRD.
//!
//! k8s-openapi's `Quantity` schema carries two kilobytes of prose and no pattern, and maps need
//! bounds before CEL rules may iterate them (the apiserver refuses rules whose worst-case cost is
//! unbounded). These functions are used through `#[schemars(schema_with = "...")]`.

use schemars::{Schema, SchemaGenerator, json_schema};
use serde_json::{Value, json};

use crate::patterns;

/// A resource quantity: YAML integers and strings such as "500m" or "4Gi".
fn quantity_value() -> Value {
    json!({
        "x-kubernetes-int-or-string": true,
        "pattern": patterns::QUANTITY,
    })
}

/// Resource name to quantity, as in `limits` or `status.capacity`.
pub fn quantity_map(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "additionalProperties": quantity_value(),
    })
}

/// NodeOverlay capacity: quantities of at most 50 extended resources; the instance type's own
/// shape (cpu, memory, ephemeral-storage, pods) is the cloud's to report.
pub fn overlay_capacity(_: &mut SchemaGenerator) -> Schema {
    let restricted = crate::nodeoverlay::RESTRICTED_CAPACITY
        .map(|name| format!("'{name}'"))
        .join(", ");
    json_schema!({
        "type": "object",
        "maxProperties": 50,
        "additionalProperties": quantity_value(),
        "x-kubernetes-validations": [{
            "rule": format!("self.all(k, !(k in [{restricted}]))"),
            "message": "cpu, memory, ephemeral-storage and pods are restricted: an overlay adds extended resources only",
        }],
    })
}

/// Node labels: at most 100, values in label-value syntax.
pub fn label_map(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "maxProperties": 100,
        "additionalProperties": {
            "type": "string",
            "maxLength": patterns::LABEL_VALUE_MAX_LEN,
            "pattern": patterns::LABEL_VALUE,
        },
    })
}

/// Tags Adze puts on EC2 resources: AWS allows 50 per resource, and CEL rules need a bound.
pub fn aws_tags(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "maxProperties": 50,
        "additionalProperties": {"type": "string"},
    })
}

/// AWS tag filters in selector terms: 1 to 20 non-empty keys and values.
pub fn selector_tags(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "minProperties": 1,
        "maxProperties": 20,
        "additionalProperties": {"type": "string"},
    })
}

/// Kubelet reservations (`systemReserved`, `kubeReserved`): resource name to quantity string.
/// Kubelet reservations: resource name to a quantity or an expression over the instance type
/// ([`adze_scheduling::kubelet_expr`]), which Adze's validation compiles.
pub fn reserved_map(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "maxProperties": 4,
        "additionalProperties": {
            "type": "string",
            "minLength": 1,
            "maxLength": adze_scheduling::kubelet_expr::MAX_LEN,
        },
    })
}

/// `maxPods`: a count, or an expression over the instance type.
pub fn int_or_expression(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "x-kubernetes-int-or-string": true,
        "minimum": 0,
        "maxLength": adze_scheduling::kubelet_expr::MAX_LEN,
    })
}

/// Kubelet eviction thresholds: signal name to percentage or quantity.
pub fn eviction_map(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "maxProperties": 6,
        "additionalProperties": {"type": "string", "pattern": patterns::EVICTION_THRESHOLD},
    })
}

/// Kubelet soft-eviction grace periods: signal name to Go duration.
pub fn grace_period_map(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "maxProperties": 6,
        "additionalProperties": {"type": "string", "pattern": crate::duration::PATTERN},
    })
}

/// For an optional enum: schemars lists `null` among the enum values; keep it out and let
/// `nullable` say the same thing, the form every apiserver version reads the same way.
pub fn drop_null_from_enum(schema: &mut Schema) {
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        values.retain(|value| !value.is_null());
    }
}

/// For status fields that reuse a spec type: drop the type's CEL rules. Adze's controller writes
/// status from code it validates itself, and rules there would multiply by every list above them
/// (`status.amis` is as long as an AMI selector's matches), which on its own put the
/// EC2NodeClass over the apiserver's per-CRD cost limit and made the CRD uninstallable.
pub fn without_cel_rules(schema: &mut Schema) {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("x-kubernetes-validations");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    if let Some(map) = schema.as_object_mut() {
        map.values_mut().for_each(strip);
    }
}
