//! Kubernetes objects into the scheduling core's plain model: [`pod`], [`daemonset_pod`] and
//! [`workload_pod`] give an [`adze_scheduling::Pod`], [`node()`] an
//! [`adze_scheduling::ExistingNode`], [`nodepool()`] an [`adze_scheduling::NodePool`],
//! [`overlay()`] an [`adze_scheduling::overlay::Overlay`],
//! [`nodeclass()`] the [`adze_scheduling::node_class::NodeClassFacts`] of an EC2NodeClass;
//! [`with_volumes`] adds the zones a pod's persistent volumes tie it to and the CSI volumes it
//! attaches, [`csinode_limits`] reads a node's attach limits.
//!
//! This is the edge where strings become numbers and selectors become
//! [`adze_scheduling::Requirements`]; nothing past it parses a quantity. Conversion does not
//! validate what the apiserver already would, but every value it has to interpret (a
//! quantity, an operator, a taint effect, a port) is checked, and an error names the object
//! and the field: `pod default/web-1: spec.containers[0].resources.requests.cpu: invalid
//! quantity "abc": no digits`.

mod disruption;
mod node;
mod nodeclass;
mod nodepool;
mod overlay;
mod pod;
pub(crate) mod resources;
mod selector;
mod volumes;

use std::fmt;

use adze_scheduling::quantity::QuantityError;
use adze_scheduling::requirements::RequirementError;
use thiserror::Error;

pub use disruption::pool_policy;
pub use node::node;
pub use nodeclass::{nodeclass, root_device, root_volume_bytes};
pub use nodepool::nodepool;
pub use overlay::overlay;
pub use pod::{DEFAULT_NAMESPACE, controller_selector, daemonset_pod, pod, workload_pod};
pub use volumes::{
    DEFAULT_CLASS_ANNOTATION, VolumeError, VolumeObjects, VolumeTopology, csinode_limits,
    pod_volumes, volume_topology, with_volume_topology, with_volumes,
};

/// The object a conversion problem is in, printed the way `kubectl` users name it:
/// `pod default/web-1`, `node ip-10-0-1-2`, `nodepool default`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    /// Lower-case kind: "pod", "daemonset", "deployment", "node", "nodepool".
    pub kind: &'static str,
    /// None for cluster-scoped objects.
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    pub fn namespaced(kind: &'static str, namespace: &str, name: &str) -> ObjectRef {
        ObjectRef {
            kind,
            namespace: Some(namespace.to_string()),
            name: name.to_string(),
        }
    }

    pub fn cluster(kind: &'static str, name: &str) -> ObjectRef {
        ObjectRef {
            kind,
            namespace: None,
            name: name.to_string(),
        }
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Cut: a hostile 10,000-character name is not echoed back in full.
        let name = if self.name.is_empty() {
            "<unnamed>".to_string()
        } else {
            crate::validation::cut(&self.name)
        };
        match &self.namespace {
            Some(ns) => write!(f, "{} {}/{name}", self.kind, crate::validation::cut(ns)),
            None => write!(f, "{} {name}", self.kind),
        }
    }
}

/// Why an object could not be converted: the object, the field (in the object's own field
/// names, e.g. `spec.containers[0].resources.requests.cpu`) and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{object}: {field}: {problem}")]
pub struct ConvertError {
    pub object: ObjectRef,
    pub field: String,
    pub problem: Box<Problem>,
}

/// What is wrong with the field.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Problem {
    /// A field the model cannot do without (a name, a node's allocatable) is absent.
    #[error("required field is missing")]
    Missing,
    /// A resource quantity that does not parse.
    #[error("{0}")]
    Quantity(QuantityError),
    /// A node-selector or label-selector requirement the algebra refuses (unknown operator,
    /// `Gt` with a non-integer, `In` without values).
    #[error("{0}")]
    Requirement(RequirementError),
    /// Any other value outside what Kubernetes allows (a taint effect, a toleration
    /// operator, a port, a policy name).
    #[error("{0}")]
    Invalid(String),
}

impl ConvertError {
    pub fn new(object: &ObjectRef, field: &str, problem: Problem) -> Self {
        ConvertError {
            object: object.clone(),
            field: field.to_string(),
            problem: Box::new(problem),
        }
    }

    pub(crate) fn invalid(object: &ObjectRef, field: &str, message: impl Into<String>) -> Self {
        Self::new(object, field, Problem::Invalid(message.into()))
    }

    pub(crate) fn missing(object: &ObjectRef, field: &str) -> Self {
        Self::new(object, field, Problem::Missing)
    }

    pub(crate) fn quantity(object: &ObjectRef, field: &str, error: QuantityError) -> Self {
        Self::new(object, field, Problem::Quantity(error))
    }

    pub(crate) fn requirement(object: &ObjectRef, field: &str, error: RequirementError) -> Self {
        Self::new(object, field, Problem::Requirement(error))
    }
}

/// Parses a taint effect, naming the field when it is not one Kubernetes knows.
fn effect(
    object: &ObjectRef,
    field: &str,
    value: &str,
) -> Result<adze_scheduling::Effect, ConvertError> {
    adze_scheduling::Effect::parse(value).ok_or_else(|| {
        ConvertError::invalid(
            object,
            field,
            format!(
                "unknown taint effect {value:?}; expected NoSchedule, PreferNoSchedule or NoExecute"
            ),
        )
    })
}
