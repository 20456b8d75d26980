//! The pointer from a NodePool or NodeClaim to its cloud-specific node class.

use kube::{KubeSchema, Resource};
use serde::{Deserialize, Serialize};

use crate::ec2nodeclass::EC2NodeClass;

/// An API group is a DNS subdomain.
pub const GROUP_MAX_LEN: usize = 253;
/// Kinds are DNS labels in practice (CRD names are `<plural>.<group>`).
pub const KIND_MAX_LEN: usize = 63;
/// An object name is a DNS subdomain.
pub const NAME_MAX_LEN: usize = 253;

/// Names the node class (today always an `EC2NodeClass`) that says how to launch the node.
/// Group and kind are fixed once set: switching cloud kinds under live nodes would orphan them.
/// Lengths are Kubernetes' (DNS subdomain, kind, object name); the bounds keep the apiserver's
/// cost estimate of the immutability rules small.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, KubeSchema)]
#[x_kube(validation = Rule::new("self.group == oldSelf.group").message("nodeClassRef.group is immutable"))]
#[x_kube(validation = Rule::new("self.kind == oldSelf.kind").message("nodeClassRef.kind is immutable"))]
pub struct NodeClassRef {
    #[schemars(length(min = 1, max = GROUP_MAX_LEN), pattern(r"^[^/]*$"))]
    pub group: String,
    #[schemars(length(min = 1, max = KIND_MAX_LEN))]
    pub kind: String,
    #[schemars(length(min = 1, max = NAME_MAX_LEN))]
    pub name: String,
}

impl NodeClassRef {
    /// A reference to the `EC2NodeClass` called `name`.
    pub fn ec2(name: impl Into<String>) -> Self {
        Self {
            group: EC2NodeClass::group(&()).into_owned(),
            kind: EC2NodeClass::kind(&()).into_owned(),
            name: name.into(),
        }
    }

    pub fn is_ec2(&self) -> bool {
        self.group == EC2NodeClass::group(&()) && self.kind == EC2NodeClass::kind(&())
    }
}
