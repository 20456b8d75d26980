//! Instance profiles for EC2NodeClasses that name a `role`. EC2 launches take an instance
//! profile, not a role, so Adze keeps one profile per class: named from the cluster, region
//! and class (stable across restarts, so a crash never creates a second), under a path of its
//! own per cluster (so listing finds ours and nobody else's), holding exactly the class's role.
//! A profile outlives its class while NodeClaims of that class still run, then is deleted.

use std::collections::BTreeSet;

use aws_sdk_iam::types::{InstanceProfile, Tag};
use sha2::{Digest, Sha256};

use crate::error::AwsError;

/// IAM path under which one cluster's profiles live: `/adze/<cluster>/`.
pub fn path(cluster: &str) -> String {
    format!("/adze/{}/", sanitize(cluster))
}

/// `<cluster>_<hash of region and class>`, within IAM's 128 characters of `[\w+=,.@-]`.
pub fn profile_name(cluster: &str, region: &str, class: &str) -> String {
    let digest = Sha256::digest(format!("{region}/{class}").as_bytes());
    let hash: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let mut prefix = sanitize(cluster);
    prefix.truncate(100);
    format!("{prefix}_{hash}")
}

/// The role's name from a name or an ARN (`arn:aws:iam::111122223333:role/path/Name`): IAM's
/// AddRoleToInstanceProfile takes the name only.
pub fn role_name(role: &str) -> &str {
    if role.starts_with("arn:") {
        role.rsplit('/').next().unwrap_or(role)
    } else {
        role
    }
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "+=,.@-_".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Profiles under our path that no class needs any more: `wanted` are the names of the
/// profiles of existing classes and of classes live NodeClaims still refer to.
pub fn orphaned(existing: &[String], wanted: &BTreeSet<String>) -> Vec<String> {
    existing
        .iter()
        .filter(|n| !wanted.contains(*n))
        .cloned()
        .collect()
}

fn iam_err<E, R>(call: &'static str) -> impl Fn(aws_sdk_iam::error::SdkError<E, R>) -> AwsError
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug,
{
    move |e| AwsError::Api {
        call,
        message: aws_sdk_iam::error::DisplayErrorContext(e).to_string(),
    }
}

/// The IAM side: one cluster's profiles.
#[derive(Clone)]
pub struct Profiles {
    pub iam: aws_sdk_iam::Client,
    pub cluster: String,
    pub region: String,
}

impl Profiles {
    pub fn name_for(&self, class: &str) -> String {
        profile_name(&self.cluster, &self.region, class)
    }

    /// The profile, or None when IAM has no profile of that name.
    async fn get(&self, name: &str) -> Result<Option<InstanceProfile>, AwsError> {
        match self
            .iam
            .get_instance_profile()
            .instance_profile_name(name)
            .send()
            .await
        {
            Ok(out) => Ok(out.instance_profile),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_no_such_entity_exception()) =>
            {
                Ok(None)
            }
            Err(e) => Err(iam_err("GetInstanceProfile")(e)),
        }
    }

    /// Creates the class's profile if missing and makes `role` its only role; returns its name.
    /// Idempotent: every resolve calls it.
    pub async fn ensure(&self, class: &str, role: &str) -> Result<String, AwsError> {
        let name = self.name_for(class);
        let role = role_name(role);
        let roles: Vec<String> = match self.get(&name).await? {
            Some(p) => p.roles.into_iter().map(|r| r.role_name).collect(),
            None => {
                let tag = |k: &str, v: &str| {
                    Tag::builder()
                        .key(k)
                        .value(v)
                        .build()
                        .expect("key and value are set")
                };
                let created = self
                    .iam
                    .create_instance_profile()
                    .instance_profile_name(&name)
                    .path(path(&self.cluster))
                    .tags(tag(
                        &format!("kubernetes.io/cluster/{}", self.cluster),
                        "owned",
                    ))
                    .tags(tag("adze.sh/ec2nodeclass", class))
                    .send()
                    .await;
                match created {
                    Ok(_) => {}
                    // Another replica (or our own earlier attempt) won the race.
                    Err(e)
                        if e.as_service_error()
                            .is_some_and(|s| s.is_entity_already_exists_exception()) => {}
                    Err(e) => return Err(iam_err("CreateInstanceProfile")(e)),
                }
                tracing::info!(ec2nodeclass = class, instance_profile = %name, "created instance profile");
                Vec::new()
            }
        };
        for other in roles.iter().filter(|r| *r != role) {
            self.remove_role(&name, other).await?;
        }
        if !roles.iter().any(|r| r == role) {
            self.iam
                .add_role_to_instance_profile()
                .instance_profile_name(&name)
                .role_name(role)
                .send()
                .await
                .map_err(iam_err("AddRoleToInstanceProfile"))?;
            tracing::info!(ec2nodeclass = class, instance_profile = %name, role, "role set on instance profile");
        }
        Ok(name)
    }

    async fn remove_role(&self, profile: &str, role: &str) -> Result<(), AwsError> {
        self.iam
            .remove_role_from_instance_profile()
            .instance_profile_name(profile)
            .role_name(role)
            .send()
            .await
            .map_err(iam_err("RemoveRoleFromInstanceProfile"))?;
        Ok(())
    }

    /// Names of the profiles under this cluster's path.
    pub async fn list(&self) -> Result<Vec<String>, AwsError> {
        let ours = path(&self.cluster);
        let mut out = Vec::new();
        let mut pages = self
            .iam
            .list_instance_profiles()
            .path_prefix(&ours)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(iam_err("ListInstanceProfiles"))?;
            // The exact path, not just the prefix: `/adze/prod/` must not take in
            // `/adze/prod-eu/`'s profiles (and not every IAM implementation filters).
            out.extend(
                page.instance_profiles
                    .into_iter()
                    .filter(|p| p.path == ours)
                    .map(|p| p.instance_profile_name),
            );
        }
        Ok(out)
    }

    /// Empties and deletes one profile; a profile already gone is not an error.
    pub async fn delete(&self, name: &str) -> Result<(), AwsError> {
        let Some(profile) = self.get(name).await? else {
            return Ok(());
        };
        for r in profile.roles {
            self.remove_role(name, &r.role_name).await?;
        }
        match self
            .iam
            .delete_instance_profile()
            .instance_profile_name(name)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_no_such_entity_exception()) =>
            {
                Ok(())
            }
            Err(e) => Err(iam_err("DeleteInstanceProfile")(e)),
        }
    }

    /// Deletes the profiles of this cluster that no class in `needed_classes` (existing
    /// classes, and classes live NodeClaims refer to) would use; returns their names.
    pub async fn collect_garbage(
        &self,
        needed_classes: &BTreeSet<String>,
    ) -> Result<Vec<String>, AwsError> {
        let wanted: BTreeSet<String> = needed_classes.iter().map(|c| self.name_for(c)).collect();
        let gone = orphaned(&self.list().await?, &wanted);
        for name in &gone {
            self.delete(name).await?;
            tracing::info!(instance_profile = %name, "deleted the instance profile of a deleted EC2NodeClass");
        }
        Ok(gone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stable_per_class_and_region_and_valid_for_iam() {
        let a = profile_name("my cluster/prod", "us-east-1", "default");
        assert_eq!(a, profile_name("my cluster/prod", "us-east-1", "default"));
        assert_ne!(a, profile_name("my cluster/prod", "us-west-2", "default"));
        assert_ne!(a, profile_name("my cluster/prod", "us-east-1", "gpu"));
        assert!(a.starts_with("my-cluster-prod_"), "{a}");
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+=,.@-_".contains(c))
        );
        let long = profile_name(&"c".repeat(300), "us-east-1", "default");
        assert!(long.len() <= 128, "{}", long.len());
        assert_eq!(path("my cluster"), "/adze/my-cluster/");
    }

    #[test]
    fn a_role_arn_is_reduced_to_the_role_name() {
        assert_eq!(
            role_name("arn:aws:iam::111122223333:role/nodes/AdzeNodeRole"),
            "AdzeNodeRole"
        );
        assert_eq!(role_name("AdzeNodeRole"), "AdzeNodeRole");
    }

    #[test]
    fn only_profiles_no_class_needs_are_orphaned() {
        let existing = vec!["c_1".to_string(), "c_2".to_string(), "c_3".to_string()];
        let wanted = BTreeSet::from(["c_1".to_string(), "c_3".to_string()]);
        assert_eq!(orphaned(&existing, &wanted), ["c_2"]);
        assert!(orphaned(&existing, &existing.iter().cloned().collect()).is_empty());
    }
}
