//! The pointer from a NodePool or NodeClaim to its cloud-specific node class.

use kube::{KubeSchema, Resource};
use serde::{Deserialize, Serialize};

use crate::ec2nodeclass::EC2NodeClass;

/// Names the node class (today always an `EC2NodeClass`) that says how to launch the node.
/// Group and kind are fixed once set: switching cloud kinds under live nodes would orphan them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, KubeSchema)]
#[x_kube(validation = Rule::new("self.group == oldSelf.group").message("nodeClassRef.group is immutable"))]
#[x_kube(validation = Rule::new("self.kind == oldSelf.kind").message("nodeClassRef.kind is immutable"))]
pub struct NodeClassRef {
    #[schemars(length(min = 1), pattern(r"^[^/]*$"))]
    pub group: String,
    #[schemars(length(min = 1))]
    pub kind: String,
    #[schemars(length(min = 1))]
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
