//! An Adze [`NodeOverlay`](crate::NodeOverlay) into the scheduling core's
//! [`adze_scheduling::overlay::Overlay`]: requirements, weight, the price change and the
//! capacity in whole units.
//!
//! Run [`NodeOverlay::validate`](crate::NodeOverlay::validate) first to report every problem at
//! once; conversion still refuses what it cannot interpret, naming the field.

use std::collections::BTreeMap;

use adze_scheduling::overlay::{Overlay, PriceChange};
use adze_scheduling::{Requirement, Requirements};

use super::nodepool::operator;
use super::resources::amount;
use super::{ConvertError, ObjectRef};
use crate::nodeoverlay::RESTRICTED_CAPACITY;

pub fn overlay(o: &crate::NodeOverlay) -> Result<Overlay, ConvertError> {
    let name = o.metadata.name.as_deref().unwrap_or_default();
    let object = ObjectRef::cluster("nodeoverlay", name);
    if name.is_empty() {
        return Err(ConvertError::missing(&object, "metadata.name"));
    }
    let spec = &o.spec;
    let mut requirements = Requirements::new();
    for (i, r) in spec.requirements.iter().enumerate() {
        let field = format!("spec.requirements[{i}]");
        let req = Requirement::new(&r.key, operator(r.operator), &r.values)
            .map_err(|error| ConvertError::requirement(&object, &field, error))?;
        requirements.add(req);
    }
    let price =
        match (&spec.price, &spec.price_adjustment) {
            (Some(_), Some(_)) => {
                return Err(ConvertError::invalid(
                    &object,
                    "spec",
                    "cannot set both price and priceAdjustment",
                ));
            }
            (Some(p), None) => Some(
                PriceChange::price(p)
                    .map_err(|e| ConvertError::invalid(&object, "spec.price", e.to_string()))?,
            ),
            (None, Some(a)) => Some(PriceChange::adjustment(a).map_err(|e| {
                ConvertError::invalid(&object, "spec.priceAdjustment", e.to_string())
            })?),
            (None, None) => None,
        };
    let mut capacity = BTreeMap::new();
    for (resource, q) in &spec.capacity {
        let field = format!("spec.capacity.{resource}");
        if RESTRICTED_CAPACITY.contains(&resource.as_str()) {
            return Err(ConvertError::invalid(
                &object,
                &field,
                "restricted: an overlay adds extended resources only",
            ));
        }
        let v = amount(resource, &q.0)
            .map_err(|error| ConvertError::quantity(&object, &field, error))?;
        capacity.insert(resource.clone(), v);
    }
    Ok(Overlay {
        name: name.to_string(),
        weight: spec.weight.unwrap_or(0),
        requirements,
        price,
        capacity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> crate::NodeOverlay {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn requirements_weight_price_and_capacity_are_carried() {
        let o = overlay(&parse(
            r#"
apiVersion: adze.sh/v1alpha1
kind: NodeOverlay
metadata: {name: licence}
spec:
  weight: 7
  requirements:
    - {key: aws.adze.sh/instance-family, operator: In, values: [m5]}
  priceAdjustment: "-10%"
  capacity: {example.com/license: "2", hugepages-2Mi: 100Mi}
"#,
        ))
        .unwrap();
        assert_eq!(o.name, "licence");
        assert_eq!(o.weight, 7);
        assert_eq!(o.price, Some(PriceChange::Percent(-10.0)));
        assert!(
            o.requirements
                .get("aws.adze.sh/instance-family")
                .unwrap()
                .allows("m5")
        );
        assert_eq!(o.capacity.get("example.com/license"), Some(&2));
        assert_eq!(o.capacity.get("hugepages-2Mi"), Some(&(100 << 20)));
    }

    #[test]
    fn what_cannot_be_interpreted_is_refused_naming_the_field() {
        let err = overlay(&parse(
            "metadata: {name: x}\nspec: {priceAdjustment: '10%'}\n",
        ))
        .unwrap_err();
        assert_eq!(err.field, "spec.priceAdjustment");
        let err = overlay(&parse(
            "metadata: {name: x}\nspec: {capacity: {cpu: '1'}}\n",
        ))
        .unwrap_err();
        assert_eq!(err.field, "spec.capacity.cpu");
        let err = overlay(&parse(
            "metadata: {name: x}\nspec: {capacity: {example.com/x: 'lots'}}\n",
        ))
        .unwrap_err();
        assert_eq!(err.field, "spec.capacity.example.com/x");
    }
}
