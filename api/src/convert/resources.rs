//! Resource lists (`requests`, `limits`, `allocatable`, NodePool `limits`) into integers.

use std::collections::BTreeMap;

use adze_scheduling::Resources;
use adze_scheduling::quantity::{self, QuantityError};
use adze_scheduling::resources::CPU;
use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::{ConvertError, ObjectRef};

/// One quantity in the model's unit for `name`: millicores for cpu, whole units (bytes,
/// devices, pods) for everything else.
pub(crate) fn amount(name: &str, q: &str) -> Result<i64, QuantityError> {
    if name == CPU {
        quantity::parse_milli(q)
    } else {
        quantity::parse_units(q)
    }
}

/// Parses a resource list; `field` is the list's path, each entry's path is `field.name`.
pub(crate) fn resource_list(
    object: &ObjectRef,
    field: &str,
    list: Option<&BTreeMap<String, Quantity>>,
) -> Result<Resources, ConvertError> {
    let mut out = Resources::default();
    for (name, q) in list.into_iter().flatten() {
        let v = amount(name, &q.0)
            .map_err(|error| ConvertError::quantity(object, &format!("{field}.{name}"), error))?;
        out.set(name, v);
    }
    Ok(out)
}

/// A resource list of a pod (a container's or the pod's `requests` and `limits`,
/// `spec.overhead`): as [`resource_list`], and every amount must be 0 or more, as the
/// apiserver requires. A negative amount would otherwise be read as room given back.
pub(crate) fn pod_resource_list(
    object: &ObjectRef,
    field: &str,
    list: Option<&BTreeMap<String, Quantity>>,
) -> Result<Resources, ConvertError> {
    let out = resource_list(object, field, list)?;
    for (name, q) in list.into_iter().flatten() {
        if out.get(name) < 0 {
            return Err(ConvertError::invalid(
                object,
                &format!("{field}.{name}"),
                format!(
                    "must be greater than or equal to 0, got {}",
                    crate::validation::shown(&q.0)
                ),
            ));
        }
    }
    Ok(out)
}

/// A container's (or a pod's) requests after Kubernetes defaulting: a resource with a limit
/// but no request is requested at its limit. `field` is the `resources` path.
pub(crate) fn requests_with_limits(
    object: &ObjectRef,
    field: &str,
    resources: Option<&ResourceRequirements>,
) -> Result<Resources, ConvertError> {
    let Some(r) = resources else {
        return Ok(Resources::default());
    };
    let mut out = pod_resource_list(object, &format!("{field}.requests"), r.requests.as_ref())?;
    let limits = pod_resource_list(object, &format!("{field}.limits"), r.limits.as_ref())?;
    let requested = r.requests.as_ref();
    for name in limits.names() {
        if !requested.is_some_and(|req| req.contains_key(name)) {
            out.set(name, limits.get(name));
        }
    }
    Ok(out)
}
