//! An Adze [`NodePool`](crate::NodePool) into the scheduling core's
//! [`adze_scheduling::NodePool`]: requirements (with minValues), template labels, taints,
//! startup taints, limits and weight, plus the instance types its node class can launch.
//!
//! Conversion assumes nothing about validation: a requirement the algebra refuses or a
//! limit that does not parse is an error naming the field. Run
//! [`NodePool::validate`](crate::NodePool::validate) first to report every problem at once.

use std::sync::Arc;

use adze_scheduling::{Effect, InstanceType, Operator, Requirement, Requirements, Taint};

use super::resources::amount;
use super::{ConvertError, ObjectRef};
use crate::requirement::Operator as ApiOperator;
use crate::taint::TaintEffect;

pub(super) fn operator(op: ApiOperator) -> Operator {
    match op {
        ApiOperator::In => Operator::In,
        ApiOperator::NotIn => Operator::NotIn,
        ApiOperator::Exists => Operator::Exists,
        ApiOperator::DoesNotExist => Operator::DoesNotExist,
        ApiOperator::Gt => Operator::Gt,
        ApiOperator::Lt => Operator::Lt,
        ApiOperator::Gte => Operator::Gte,
        ApiOperator::Lte => Operator::Lte,
    }
}

fn taints(list: &[crate::Taint]) -> Vec<Taint> {
    list.iter()
        .map(|t| {
            let effect = match t.effect {
                TaintEffect::NoSchedule => Effect::NoSchedule,
                TaintEffect::PreferNoSchedule => Effect::PreferNoSchedule,
                TaintEffect::NoExecute => Effect::NoExecute,
            };
            Taint::new(&t.key, t.value.as_deref().unwrap_or_default(), effect)
        })
        .collect()
}

pub fn nodepool(
    np: &crate::NodePool,
    instance_types: Vec<Arc<InstanceType>>,
) -> Result<adze_scheduling::NodePool, ConvertError> {
    let name = np.metadata.name.as_deref().unwrap_or_default();
    let object = ObjectRef::cluster("nodepool", name);
    if name.is_empty() {
        return Err(ConvertError::missing(&object, "metadata.name"));
    }
    let spec = &np.spec.template.spec;
    let mut requirements = Requirements::new();
    for (i, r) in spec.requirements.iter().enumerate() {
        let field = format!("spec.template.spec.requirements[{i}]");
        let req = Requirement::new(&r.key, operator(r.operator), &r.values)
            .map_err(|error| ConvertError::requirement(&object, &field, error))?
            .with_min_values(r.min_values);
        requirements.add(req);
    }
    let mut limits = std::collections::BTreeMap::new();
    for (resource, q) in &np.spec.limits {
        let v = amount(resource, &q.0).map_err(|error| {
            ConvertError::quantity(&object, &format!("spec.limits.{resource}"), error)
        })?;
        limits.insert(resource.clone(), v);
    }
    Ok(adze_scheduling::NodePool {
        name: name.to_string(),
        weight: np.spec.weight.unwrap_or(0),
        requirements,
        labels: np.spec.template.metadata.labels.clone(),
        taints: taints(&spec.taints),
        startup_taints: taints(&spec.startup_taints),
        limits,
        instance_types,
    })
}

#[cfg(test)]
mod tests {
    use adze_scheduling::labels;

    use super::*;

    fn parse(yaml: &str) -> crate::NodePool {
        serde_yaml::from_str(yaml).unwrap()
    }

    const POOL: &str = r#"
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  weight: 10
  limits: {cpu: "1000", memory: 1000Gi, nvidia.com/gpu: "8"}
  template:
    metadata:
      labels: {team: platform}
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64, arm64]}
        - {key: aws.adze.sh/instance-category, operator: In, values: [c, m, r], minValues: 2}
        - {key: aws.adze.sh/instance-generation, operator: Gt, values: ["4"]}
      taints:
        - {key: dedicated, value: platform, effect: NoSchedule}
      startupTaints:
        - {key: ebs.csi.aws.com/agent-not-ready, effect: NoExecute}
"#;

    #[test]
    fn requirements_labels_taints_limits_and_weight_are_carried() {
        let np = nodepool(&parse(POOL), Vec::new()).unwrap();
        assert_eq!(np.name, "general");
        assert_eq!(np.weight, 10);
        assert_eq!(np.labels.get("team").map(String::as_str), Some("platform"));
        let arch = np.requirements.get(labels::ARCH).unwrap();
        assert!(arch.allows("amd64") && arch.allows("arm64") && !arch.allows("s390x"));
        let cat = np.requirements.get(labels::INSTANCE_CATEGORY).unwrap();
        assert_eq!(cat.min_values, Some(2));
        let generation = np.requirements.get(labels::INSTANCE_GENERATION).unwrap();
        assert!(generation.allows("5") && !generation.allows("4"));
        assert_eq!(
            np.taints,
            vec![Taint::new("dedicated", "platform", Effect::NoSchedule)]
        );
        assert_eq!(
            np.startup_taints,
            vec![Taint::new(
                "ebs.csi.aws.com/agent-not-ready",
                "",
                Effect::NoExecute
            )]
        );
        assert_eq!(np.limits.get("cpu"), Some(&1_000_000), "cpu in millicores");
        assert_eq!(np.limits.get("memory"), Some(&(1000i64 << 30)));
        assert_eq!(np.limits.get("nvidia.com/gpu"), Some(&8));
    }

    #[test]
    fn weight_defaults_to_zero_and_instance_types_pass_through() {
        let mut pool = parse(POOL);
        pool.spec.weight = None;
        let types = adze_scheduling::catalog::embedded();
        let np = nodepool(&pool, types.clone()).unwrap();
        assert_eq!(np.weight, 0);
        assert_eq!(np.instance_types.len(), types.len());
    }

    #[test]
    fn a_bad_requirement_or_limit_names_the_field() {
        let bad_gt = POOL.replace(r#"values: ["4"]"#, r#"values: ["four"]"#);
        let err = nodepool(&parse(&bad_gt), Vec::new()).unwrap_err();
        assert_eq!(err.field, "spec.template.spec.requirements[2]");
        assert!(
            err.to_string()
                .starts_with("nodepool general: spec.template.spec.requirements[2]: "),
            "{err}"
        );
        let bad_limit = POOL.replace("memory: 1000Gi", "memory: 1000Gb");
        let err = nodepool(&parse(&bad_limit), Vec::new()).unwrap_err();
        assert_eq!(err.field, "spec.limits.memory");
    }
}
