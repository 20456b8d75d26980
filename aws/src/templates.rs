//! Which of our launch templates nothing will use again. Launch templates are created per
//! (image, class, class spec, user data) and never changed, so every image release or class
//! edit leaves the old ones behind; EC2 limits an account to 5,000. [`stale`] decides from
//! plain facts (the templates' tags, the classes as they are now); the provider deletes.

use std::collections::BTreeMap;

/// Tag on a launch template naming the image it launches.
pub const IMAGE_TAG: &str = "aws.adze.sh/image";

/// One of our launch templates, as its tags describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub name: String,
    /// The EC2NodeClass it was created for (`aws.adze.sh/ec2nodeclass`).
    pub class: Option<String>,
    /// Hash of that class's spec at creation (`aws.adze.sh/ec2nodeclass-hash`).
    pub class_hash: Option<String>,
    pub image: Option<String>,
}

/// An EC2NodeClass as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Class {
    pub spec_hash: String,
    /// Resolved image ids (status); empty while unresolved, which judges no image stale.
    pub images: Vec<String>,
}

/// The names of templates no launch would pick any more: their class is gone, its spec
/// changed since, or their image is no longer one the class resolves to. A template without a
/// class tag is not judged (not ours to reason about).
pub fn stale(templates: &[Template], classes: &BTreeMap<String, Class>) -> Vec<String> {
    templates
        .iter()
        .filter(|t| {
            let Some(class_name) = &t.class else {
                return false;
            };
            let Some(class) = classes.get(class_name) else {
                return true;
            };
            let spec_changed = t.class_hash.as_ref().is_some_and(|h| *h != class.spec_hash);
            let image_gone = !class.images.is_empty()
                && t.image.as_ref().is_some_and(|i| !class.images.contains(i));
            spec_changed || image_gone
        })
        .map(|t| t.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(name: &str, class: &str, hash: &str, image: &str) -> Template {
        Template {
            name: name.into(),
            class: Some(class.into()),
            class_hash: Some(hash.into()),
            image: Some(image.into()),
        }
    }

    fn classes() -> BTreeMap<String, Class> {
        BTreeMap::from([(
            "default".to_string(),
            Class {
                spec_hash: "h2".into(),
                images: vec!["ami-new".into()],
            },
        )])
    }

    #[test]
    fn templates_of_a_deleted_class_an_old_spec_or_an_old_image_are_stale() {
        let ts = vec![
            template("current", "default", "h2", "ami-new"),
            template("old-spec", "default", "h1", "ami-new"),
            template("old-image", "default", "h2", "ami-old"),
            template("class-gone", "gpu", "h2", "ami-new"),
        ];
        assert_eq!(
            stale(&ts, &classes()),
            vec!["old-spec", "old-image", "class-gone"]
        );
    }

    #[test]
    fn an_unresolved_class_or_an_untagged_template_keeps_its_templates() {
        let mut cs = classes();
        cs.get_mut("default").unwrap().images.clear();
        let untagged = Template {
            name: "untagged".into(),
            class: None,
            class_hash: None,
            image: None,
        };
        let ts = vec![template("any-image", "default", "h2", "ami-old"), untagged];
        assert!(stale(&ts, &cs).is_empty());
    }
}
