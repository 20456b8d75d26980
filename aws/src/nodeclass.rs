//! EC2NodeClass resolution: selector terms → the subnets, security groups and images they name
//! today, written as the class's status. Launches read the resolved status, not the selectors.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use adze_cloud::sync::MutexExt;

use adze_api::conditions::{self, ec2nodeclass as cond};
use adze_api::ec2nodeclass::{
    Ami, AmiFamily, AmiSelectorTerm, CapacityReservation, EC2NodeClassSpec, EC2NodeClassStatus,
    PlacementGroup, ReservationType, SecurityGroup, Subnet,
};
use adze_api::{Operator, Requirement};
use adze_scheduling::labels;
use aws_sdk_ec2::types::Filter;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::error::{AwsError, ec2_err, ssm_err};
use crate::instance_profile::Profiles;

/// Security groups as last described for each list of selector terms, reused for the
/// refresh interval (`--security-group-refresh-interval`, Karpenter's setting of the same
/// name): fleets in shared accounts with many classes resolve every 30 s, and
/// DescribeSecurityGroups counts against the account's EC2 request quota. The cost is
/// staleness: a newly tagged group reaches the status (and new launches) up to one interval
/// later. Keyed by the terms, so classes that select alike share one answer.
#[derive(Debug, Default)]
pub struct SecurityGroupCache {
    interval: Duration,
    entries: Mutex<BTreeMap<String, (Instant, Vec<SecurityGroup>)>>,
}

impl SecurityGroupCache {
    /// Reuse an answer for `interval`; zero describes every time.
    pub fn new(interval: Duration) -> Self {
        SecurityGroupCache {
            interval,
            entries: Mutex::default(),
        }
    }

    /// Describes every time (a resolve outside the controller's loop).
    pub fn uncached() -> Self {
        Self::new(Duration::ZERO)
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    fn key(spec: &EC2NodeClassSpec) -> String {
        serde_json::to_string(&spec.security_group_selector_terms).unwrap_or_default()
    }

    /// The groups described for `spec`'s terms less than the interval before `now`.
    pub fn fresh(&self, spec: &EC2NodeClassSpec, now: Instant) -> Option<Vec<SecurityGroup>> {
        let entries = self.entries.lock_or_recover();
        let (at, groups) = entries.get(&Self::key(spec))?;
        (now.saturating_duration_since(*at) < self.interval).then(|| groups.clone())
    }

    /// Keeps `groups` as described at `now`; answers past the interval are dropped, so the
    /// map holds only terms resolved recently.
    pub fn store(&self, spec: &EC2NodeClassSpec, now: Instant, groups: &[SecurityGroup]) {
        if self.interval.is_zero() {
            return;
        }
        let mut entries = self.entries.lock_or_recover();
        entries.retain(|_, (at, _)| now.saturating_duration_since(*at) < self.interval);
        entries.insert(Self::key(spec), (now, groups.to_vec()));
    }
}

/// Where the family images' SSM parameters live. AWS publishes them under `/aws/service`;
/// tests (moto refuses that prefix) put theirs elsewhere.
#[derive(Debug, Clone)]
pub struct AmiParameters {
    pub prefix: String,
    pub kubernetes_version: String,
}

/// The driver build of a family image: accelerator types need the image with their drivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageVariant {
    Standard,
    /// NVIDIA driver and container toolkit.
    Nvidia,
    /// AWS Neuron driver (Inferentia, Trainium).
    Neuron,
}

impl ImageVariant {
    pub const ALL: [ImageVariant; 3] = [Self::Standard, Self::Nvidia, Self::Neuron];

    fn as_str(self) -> &'static str {
        match self {
            Self::Standard => "standard",
            Self::Nvidia => "nvidia",
            Self::Neuron => "neuron",
        }
    }

    /// What an instance type must be for this variant to be the image it boots (beyond the
    /// architecture): the standard image only for types without GPUs or accelerators.
    pub fn requirements(self) -> Vec<Requirement> {
        match self {
            Self::Standard => vec![
                Requirement::new(labels::INSTANCE_GPU_COUNT, Operator::DoesNotExist, &[]),
                Requirement::new(
                    labels::INSTANCE_ACCELERATOR_COUNT,
                    Operator::DoesNotExist,
                    &[],
                ),
            ],
            Self::Nvidia => vec![Requirement::new(
                labels::INSTANCE_GPU_MANUFACTURER,
                Operator::In,
                &["nvidia"],
            )],
            Self::Neuron => vec![Requirement::new(
                labels::INSTANCE_ACCELERATOR_MANUFACTURER,
                Operator::In,
                &["aws"],
            )],
        }
    }
}

impl AmiParameters {
    /// The parameter naming the standard image of `family` for `arch` ("x86_64" or "arm64")
    /// at `version` ("latest" or a release).
    pub fn path(&self, family: AmiFamily, arch: &str, version: &str) -> Option<String> {
        self.variant_path(family, arch, ImageVariant::Standard, version)
    }

    /// The parameter naming `variant` of the family image, where AWS publishes one: AL2023
    /// has nvidia (x86_64, arm64) and neuron (x86_64) builds; Bottlerocket an `-nvidia`
    /// variant of each Kubernetes version and no Neuron one; AL2 one `-gpu` image (x86_64)
    /// for NVIDIA and Neuron types; Windows only the standard x86_64 Server Core image, and
    /// only its latest release (`ami-windows-latest`).
    pub fn variant_path(
        &self,
        family: AmiFamily,
        arch: &str,
        variant: ImageVariant,
        version: &str,
    ) -> Option<String> {
        let p = self.prefix.trim_end_matches('/');
        let k = &self.kubernetes_version;
        let v = variant.as_str();
        match (family, variant) {
            (AmiFamily::AL2023, ImageVariant::Neuron) if arch != "x86_64" => None,
            (AmiFamily::AL2023, _) => {
                let release = if version == "latest" {
                    "recommended".to_string()
                } else {
                    format!("amazon-eks-node-al2023-{arch}-{v}-{k}-{version}")
                };
                Some(format!(
                    "{p}/eks/optimized-ami/{k}/amazon-linux-2023/{arch}/{v}/{release}/image_id"
                ))
            }
            (AmiFamily::Bottlerocket, ImageVariant::Neuron) => None,
            (AmiFamily::Bottlerocket, _) => {
                let suffix = if variant == ImageVariant::Nvidia {
                    "-nvidia"
                } else {
                    ""
                };
                Some(format!(
                    "{p}/bottlerocket/aws-k8s-{k}{suffix}/{arch}/{version}/image_id"
                ))
            }
            (AmiFamily::AL2, _) if arch == "x86_64" || variant == ImageVariant::Standard => {
                let (dir, node) = match (arch, variant) {
                    (_, ImageVariant::Nvidia | ImageVariant::Neuron) => {
                        ("amazon-linux-2-gpu", "amazon-eks-gpu-node")
                    }
                    ("arm64", _) => ("amazon-linux-2-arm64", "amazon-eks-arm64-node"),
                    _ => ("amazon-linux-2", "amazon-eks-node"),
                };
                let release = if version == "latest" {
                    "recommended".to_string()
                } else {
                    format!("{node}-{k}-{version}")
                };
                Some(format!(
                    "{p}/eks/optimized-ami/{k}/{dir}/{release}/image_id"
                ))
            }
            (AmiFamily::AL2, _) => None,
            (
                AmiFamily::Windows2019 | AmiFamily::Windows2022 | AmiFamily::Windows2025,
                ImageVariant::Standard,
            ) if arch == "x86_64" && version == "latest" => {
                let year = match family {
                    AmiFamily::Windows2019 => "2019",
                    AmiFamily::Windows2022 => "2022",
                    _ => "2025",
                };
                Some(format!(
                    "{p}/ami-windows-latest/Windows_Server-{year}-English-Core-EKS_Optimized-{k}/image_id"
                ))
            }
            (AmiFamily::Windows2019 | AmiFamily::Windows2022 | AmiFamily::Windows2025, _) => None,
            (AmiFamily::Custom, _) => None,
        }
    }

    /// Why `family`'s alias resolves nothing on this Kubernetes version, when EKS publishes
    /// no such image: AL2 stops at 1.32, Windows Server 2025 starts at 1.35.
    pub fn unpublished(&self, family: AmiFamily) -> Option<String> {
        let minor: u32 = self
            .kubernetes_version
            .split('.')
            .nth(1)?
            .trim_end_matches('+')
            .parse()
            .ok()?;
        let k = &self.kubernetes_version;
        match family {
            AmiFamily::AL2 if minor >= 33 => Some(format!(
                "EKS publishes no AL2 images for Kubernetes {k} (the last is 1.32); use al2023@ or bottlerocket@"
            )),
            AmiFamily::Windows2025 if minor < 35 => Some(format!(
                "EKS publishes Windows Server 2025 images from Kubernetes 1.35, this cluster runs {k}; use windows2022@latest"
            )),
            _ => None,
        }
    }
}

/// The selector terms of class `name` resolved against EC2 and SSM, and its instance profile:
/// the one the spec names, or the one Adze keeps for its `role` (created here if missing).
/// An IAM failure is not an error of the whole resolve: it leaves `instanceProfile` empty and
/// the class not Ready with IAM's message, so subnets and images still show.
pub async fn resolve(
    ec2: &aws_sdk_ec2::Client,
    ssm: &aws_sdk_ssm::Client,
    profiles: &Profiles,
    params: &AmiParameters,
    name: &str,
    spec: &EC2NodeClassSpec,
    groups: &SecurityGroupCache,
) -> Result<EC2NodeClassStatus, AwsError> {
    let profile = match (&spec.instance_profile, &spec.role) {
        (Some(p), _) => Ok(p.clone()),
        (None, Some(role)) => profiles.ensure(name, role).await.map_err(|e| e.to_string()),
        (None, None) => Err("spec: set role or instanceProfile".to_string()),
    };
    let mut status = EC2NodeClassStatus {
        subnets: subnets(ec2, spec).await?,
        security_groups: match groups.fresh(spec, Instant::now()) {
            Some(g) => g,
            None => {
                let g = security_groups(ec2, spec).await?;
                groups.store(spec, Instant::now(), &g);
                g
            }
        },
        amis: amis(ec2, ssm, params, spec).await?,
        instance_profile: profile.as_ref().ok().cloned(),
        capacity_reservations: capacity_reservations(ec2, spec, std::time::SystemTime::now())
            .await?,
        placement_group: placement_group(ec2, spec).await?,
        conditions: Vec::new(),
    };
    let mut invalid: Vec<String> = spec.field_errors().iter().map(|e| e.to_string()).collect();
    invalid.extend(unpublished_aliases(params, spec));
    // A selector that finds no group would launch nowhere: the class is not Ready, saying which.
    if let Some(pg) = &spec.placement_group_selector
        && status.placement_group.is_none()
    {
        invalid.push(format!(
            "spec.placementGroupSelector: no placement group {}",
            placement_group_words(pg)
        ));
    }
    status.conditions = readiness(
        &status,
        profile.err().as_deref(),
        (!invalid.is_empty()).then(|| invalid.join("; ")).as_deref(),
        k8s_openapi::jiff::Timestamp::now(),
    );
    Ok(status)
}

fn tag_filters(tags: &BTreeMap<String, String>) -> Vec<Filter> {
    tags.iter()
        .map(|(k, v)| {
            if v == "*" {
                Filter::builder().name("tag-key").values(k).build()
            } else {
                Filter::builder().name(format!("tag:{k}")).values(v).build()
            }
        })
        .collect()
}

async fn subnets(
    ec2: &aws_sdk_ec2::Client,
    spec: &EC2NodeClassSpec,
) -> Result<Vec<Subnet>, AwsError> {
    let mut out: BTreeMap<String, Subnet> = BTreeMap::new();
    for term in &spec.subnet_selector_terms {
        let mut req = ec2.describe_subnets();
        if let Some(id) = &term.id {
            req = req.filters(Filter::builder().name("subnet-id").values(id).build());
        }
        for f in tag_filters(&term.tags) {
            req = req.filters(f);
        }
        let resp = req.send().await.map_err(ec2_err("DescribeSubnets"))?;
        for s in resp.subnets.unwrap_or_default() {
            let id = s.subnet_id.unwrap_or_default();
            out.insert(
                id.clone(),
                Subnet {
                    id,
                    zone: s.availability_zone.unwrap_or_default(),
                    zone_id: s.availability_zone_id,
                },
            );
        }
    }
    Ok(out.into_values().collect())
}

async fn security_groups(
    ec2: &aws_sdk_ec2::Client,
    spec: &EC2NodeClassSpec,
) -> Result<Vec<SecurityGroup>, AwsError> {
    let mut out: BTreeMap<String, SecurityGroup> = BTreeMap::new();
    for term in &spec.security_group_selector_terms {
        let mut req = ec2.describe_security_groups();
        if let Some(id) = &term.id {
            req = req.filters(Filter::builder().name("group-id").values(id).build());
        }
        if let Some(name) = &term.name {
            req = req.filters(Filter::builder().name("group-name").values(name).build());
        }
        for f in tag_filters(&term.tags) {
            req = req.filters(f);
        }
        let resp = req
            .send()
            .await
            .map_err(ec2_err("DescribeSecurityGroups"))?;
        for g in resp.security_groups.unwrap_or_default() {
            let id = g.group_id.unwrap_or_default();
            out.insert(
                id.clone(),
                SecurityGroup {
                    id,
                    name: g.group_name,
                },
            );
        }
    }
    Ok(out.into_values().collect())
}

fn placement_group_words(pg: &adze_api::ec2nodeclass::PlacementGroupSelector) -> String {
    match (&pg.id, &pg.name) {
        (Some(id), _) => format!("with id {id}"),
        (None, Some(name)) => format!("named {name:?}"),
        (None, None) => "(no id or name)".into(),
    }
}

/// The placement group the selector names, or None when there is no selector or no such
/// group. Filters, not GroupIds/GroupNames: those fail the whole call for an unknown group,
/// where a filter answers with an empty list.
async fn placement_group(
    ec2: &aws_sdk_ec2::Client,
    spec: &EC2NodeClassSpec,
) -> Result<Option<PlacementGroup>, AwsError> {
    let Some(pg) = &spec.placement_group_selector else {
        return Ok(None);
    };
    let mut req = ec2.describe_placement_groups();
    match (&pg.id, &pg.name) {
        (Some(id), _) => req = req.filters(Filter::builder().name("group-id").values(id).build()),
        (None, Some(name)) => {
            req = req.filters(Filter::builder().name("group-name").values(name).build())
        }
        (None, None) => return Ok(None),
    }
    let resp = req
        .send()
        .await
        .map_err(ec2_err("DescribePlacementGroups"))?;
    Ok(resp
        .placement_groups
        .unwrap_or_default()
        .into_iter()
        .find_map(placement_group_of))
}

/// A DescribePlacementGroups entry as the status lists it: only a group that is `available`
/// (one being created or deleted takes no launch) and has an id and a name.
pub fn placement_group_of(g: aws_sdk_ec2::types::PlacementGroup) -> Option<PlacementGroup> {
    if g.state.as_ref().map(|s| s.as_str()) != Some("available") {
        return None;
    }
    Some(PlacementGroup {
        id: g.group_id?,
        name: g.group_name?,
        strategy: g
            .strategy
            .map(|s| s.as_str().to_string())
            .unwrap_or_default(),
    })
}

/// The reservations the class's terms select that can take a launch now: active and not past
/// their end. Paginated (an account may hold hundreds); terms are ORed, a reservation two
/// terms select is listed once.
async fn capacity_reservations(
    ec2: &aws_sdk_ec2::Client,
    spec: &EC2NodeClassSpec,
    now: std::time::SystemTime,
) -> Result<Vec<CapacityReservation>, AwsError> {
    let mut out: BTreeMap<String, CapacityReservation> = BTreeMap::new();
    for term in &spec.capacity_reservation_selector_terms {
        let mut req = ec2
            .describe_capacity_reservations()
            .filters(Filter::builder().name("state").values("active").build());
        if let Some(id) = &term.id {
            req = req.capacity_reservation_ids(id);
        }
        if let Some(owner) = &term.owner_id {
            req = req.filters(Filter::builder().name("owner-id").values(owner).build());
        }
        if let Some(criteria) = term.instance_match_criteria {
            req = req.filters(
                Filter::builder()
                    .name("instance-match-criteria")
                    .values(criteria.as_str())
                    .build(),
            );
        }
        for f in tag_filters(&term.tags) {
            req = req.filters(f);
        }
        let mut pages = req.into_paginator().send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(ec2_err("DescribeCapacityReservations"))?;
            for r in page.capacity_reservations.unwrap_or_default() {
                if let Some(r) = usable_reservation(&r, now) {
                    out.insert(r.id.clone(), r);
                }
            }
        }
    }
    Ok(out.into_values().collect())
}

/// One DescribeCapacityReservations entry as the class status lists it, or None when it
/// cannot take a launch: not active, past its end date, or missing what a launch needs.
pub fn usable_reservation(
    r: &aws_sdk_ec2::types::CapacityReservation,
    now: std::time::SystemTime,
) -> Option<CapacityReservation> {
    use aws_sdk_ec2::types::{CapacityReservationState, CapacityReservationType};
    if r.state.as_ref() != Some(&CapacityReservationState::Active) {
        return None;
    }
    let end = r
        .end_date
        .and_then(|d| std::time::SystemTime::try_from(d).ok());
    if end.is_some_and(|end| end <= now) {
        return None;
    }
    let capacity_block = r.reservation_type == Some(CapacityReservationType::CapacityBlock);
    // A Capacity Block's nodes are drained from 40 minutes before its end (EC2 takes the
    // instances from 30): a launch then would be drained at once, and the slot a drained node
    // gives back would take its own pods again. It stays listed, with no slot, so the drain
    // still knows its end.
    let ending = capacity_block
        && end.is_some_and(|end| {
            let lead = std::time::Duration::from_secs(
                adze_scheduling::disruption::expiry::CAPACITY_BLOCK_DRAIN_BEFORE_END.unsigned_abs(),
            );
            end.duration_since(now).is_ok_and(|left| left <= lead)
        });
    Some(CapacityReservation {
        id: r
            .capacity_reservation_id
            .clone()
            .filter(|s| !s.is_empty())?,
        instance_type: r.instance_type.clone().filter(|s| !s.is_empty())?,
        availability_zone: r.availability_zone.clone().filter(|s| !s.is_empty())?,
        // EC2 sends an i32; a negative count is read as none left.
        available_instance_count: if ending {
            0
        } else {
            i64::from(r.available_instance_count.unwrap_or(0).max(0))
        },
        reservation_type: if capacity_block {
            ReservationType::CapacityBlock
        } else {
            ReservationType::Default
        },
        instance_match_criteria: r
            .instance_match_criteria
            .as_ref()
            .map(|c| c.as_str().to_string())
            .unwrap_or_default(),
        owner_id: r.owner_id.clone().unwrap_or_default(),
        end_time: r.end_date.and_then(|d| {
            d.fmt(aws_sdk_ec2::primitives::DateTimeFormat::DateTime)
                .ok()
        }),
        // Absent (older EC2 responses, stand-ins) means an ordinary reservation.
        interruptible: r.interruptible.unwrap_or(false),
    })
}

/// Whether a freshly resolved status differs from the one the class shows, so that it is
/// written: every resolved field, conditions compared without their timestamps. The
/// reservations count too — their free slots and end times change while the selectors do not,
/// and placement and the Capacity Block drain read them from the status.
pub fn status_changed(old: &EC2NodeClassStatus, new: &EC2NodeClassStatus) -> bool {
    let same_conditions = old.conditions.len() == new.conditions.len()
        && old
            .conditions
            .iter()
            .zip(&new.conditions)
            .all(|(x, y)| x.type_ == y.type_ && x.status == y.status && x.reason == y.reason);
    !(old.subnets == new.subnets
        && old.security_groups == new.security_groups
        && old.amis == new.amis
        && old.instance_profile == new.instance_profile
        && old.capacity_reservations == new.capacity_reservations
        && old.placement_group == new.placement_group
        && same_conditions)
}

/// The merge patch that writes `status` whole. The status type leaves empty fields out, and a
/// merge patch without a field keeps the old value: a reservation that ended (or a selector that
/// now matches nothing) would stay listed. Empty lists and a missing profile are written out.
pub fn status_patch(status: &EC2NodeClassStatus) -> serde_json::Value {
    let mut s = serde_json::to_value(status).unwrap_or_default();
    if let Some(obj) = s.as_object_mut() {
        for key in [
            "subnets",
            "securityGroups",
            "amis",
            "capacityReservations",
            "conditions",
        ] {
            obj.entry(key).or_insert_with(|| serde_json::json!([]));
        }
        obj.entry("instanceProfile")
            .or_insert(serde_json::Value::Null);
        obj.entry("placementGroup")
            .or_insert(serde_json::Value::Null);
    }
    serde_json::json!({ "status": s })
}

/// Kubernetes' spelling of an EC2 architecture.
pub fn kube_arch(ec2_arch: &str) -> &str {
    match ec2_arch {
        "x86_64" | "x86_64_mac" => "amd64",
        "arm64" | "arm64_mac" => "arm64",
        other => other,
    }
}

fn ami(id: String, name: Option<String>, ec2_arch: &str) -> Ami {
    Ami {
        id,
        name,
        requirements: vec![Requirement::new(
            labels::ARCH,
            Operator::In,
            &[kube_arch(ec2_arch)],
        )],
    }
}

async fn amis(
    ec2: &aws_sdk_ec2::Client,
    ssm: &aws_sdk_ssm::Client,
    params: &AmiParameters,
    spec: &EC2NodeClassSpec,
) -> Result<Vec<Ami>, AwsError> {
    let mut out: Vec<Ami> = Vec::new();
    for term in &spec.ami_selector_terms {
        if let Some(alias) = &term.alias {
            let (family, version) = alias.split_once('@').unwrap_or((alias, "latest"));
            let family = AmiFamily::from_alias(&format!("{family}@")).ok_or_else(|| {
                AwsError::Invalid(format!(
                    "amiSelectorTerms.alias: unknown family in {alias:?}"
                ))
            })?;
            if params.unpublished(family).is_some() {
                // Said in the class's conditions ([`unpublished_aliases`]); nothing to ask SSM.
                continue;
            }
            for arch in ["x86_64", "arm64"] {
                for variant in ImageVariant::ALL {
                    let Some(path) = params.variant_path(family, arch, variant, version) else {
                        continue;
                    };
                    if let Some(id) = parameter(ssm, &path).await? {
                        let mut image = ami(id, None, arch);
                        image.requirements.extend(variant.requirements());
                        image.requirements.extend(os_requirements(family));
                        out.push(image);
                    }
                }
            }
            continue;
        }
        if let Some(path) = &term.ssm_parameter {
            if let Some(id) = parameter(ssm, path).await? {
                out.extend(
                    describe_images(
                        ec2,
                        &AmiSelectorTerm {
                            id: Some(id),
                            ..Default::default()
                        },
                    )
                    .await?,
                );
            }
            continue;
        }
        out.extend(describe_images(ec2, term).await?);
    }
    // Newest first per architecture is what EC2 returns sorted below; keep the first of each
    // image and requirements (AL2's one GPU image serves NVIDIA and Neuron types: two entries).
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|a| seen.insert((a.id.clone(), format!("{:?}", a.requirements))));
    Ok(out)
}

/// An alias whose family EKS publishes no image of for this cluster's Kubernetes version, with
/// the reason at its path: the class is then not Ready (`ValidationFailed`) and says why,
/// rather than resolving no image in silence.
pub fn unpublished_aliases(params: &AmiParameters, spec: &EC2NodeClassSpec) -> Vec<String> {
    spec.ami_selector_terms
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let family = AmiFamily::from_alias(t.alias.as_deref()?)?;
            let why = params.unpublished(family)?;
            Some(format!("spec.amiSelectorTerms[{i}].alias: {why}"))
        })
        .collect()
}

/// What a family image requires of the node beyond its architecture: a Windows image makes a
/// Windows node of its Server build, which pods select by `kubernetes.io/os` and
/// `node.kubernetes.io/windows-build`.
pub fn os_requirements(family: AmiFamily) -> Vec<Requirement> {
    match family.windows_build() {
        Some(build) => vec![
            Requirement::new(labels::OS, Operator::In, &["windows"]),
            Requirement::new(labels::WINDOWS_BUILD, Operator::In, &[build]),
        ],
        None => Vec::new(),
    }
}

async fn describe_images(
    ec2: &aws_sdk_ec2::Client,
    term: &AmiSelectorTerm,
) -> Result<Vec<Ami>, AwsError> {
    let mut req = ec2.describe_images();
    if let Some(id) = &term.id {
        req = req.image_ids(id);
    }
    if let Some(name) = &term.name {
        req = req.filters(Filter::builder().name("name").values(name).build());
    }
    if let Some(owner) = &term.owner {
        req = req.owners(owner);
    }
    for f in tag_filters(&term.tags) {
        req = req.filters(f);
    }
    let resp = req.send().await.map_err(ec2_err("DescribeImages"))?;
    let mut images = resp.images.unwrap_or_default();
    // Newest first, so the first image per architecture is the one launches use.
    images.sort_by(|a, b| b.creation_date.cmp(&a.creation_date));
    Ok(images
        .into_iter()
        .map(|i| {
            let arch = i
                .architecture
                .as_ref()
                .map(|a| a.as_str().to_string())
                .unwrap_or_default();
            ami(i.image_id.unwrap_or_default(), i.name, &arch)
        })
        .collect())
}

async fn parameter(ssm: &aws_sdk_ssm::Client, name: &str) -> Result<Option<String>, AwsError> {
    match ssm.get_parameter().name(name).send().await {
        Ok(out) => Ok(out.parameter.and_then(|p| p.value)),
        Err(e) => {
            if e.as_service_error()
                .is_some_and(|s| s.is_parameter_not_found())
            {
                Ok(None)
            } else {
                Err(ssm_err("GetParameter")(e))
            }
        }
    }
}

/// Conditions for a resolved status: `ValidationSucceeded` (`invalid`: the spec's rule
/// violations, for apiservers that cannot run the CRD's CEL), one per kind of thing resolved,
/// and Ready rolling them up with the first reason something failed.
pub fn readiness(
    status: &EC2NodeClassStatus,
    profile_error: Option<&str>,
    invalid: Option<&str>,
    now: k8s_openapi::jiff::Timestamp,
) -> Vec<Condition> {
    let profile_message = format!(
        "instance profile: {}",
        profile_error.unwrap_or("none resolved")
    );
    let checks = [
        (
            cond::VALIDATION_SUCCEEDED,
            invalid.is_some(),
            "ValidationFailed",
            invalid.unwrap_or_default(),
        ),
        (
            cond::SUBNETS_READY,
            status.subnets.is_empty(),
            "SubnetsNotFound",
            "no subnet matches subnetSelectorTerms",
        ),
        (
            cond::SECURITY_GROUPS_READY,
            status.security_groups.is_empty(),
            "SecurityGroupsNotFound",
            "no security group matches securityGroupSelectorTerms",
        ),
        (
            cond::AMIS_READY,
            status.amis.is_empty(),
            "AMIsNotFound",
            "no image matches amiSelectorTerms",
        ),
        (
            cond::INSTANCE_PROFILE_READY,
            status.instance_profile.is_none(),
            "InstanceProfileNotReady",
            profile_message.as_str(),
        ),
    ];
    let c = |type_: &str, ok: bool, reason: &str, message: &str| Condition {
        type_: type_.into(),
        status: if ok { "True" } else { "False" }.into(),
        reason: reason.into(),
        message: message.into(),
        last_transition_time: Time(now),
        observed_generation: None,
    };
    let mut out: Vec<Condition> = checks
        .iter()
        .map(|(t, empty, reason, msg)| {
            if *empty {
                c(t, false, reason, msg)
            } else if *t == cond::VALIDATION_SUCCEEDED {
                c(t, true, "ValidationSucceeded", "spec is valid")
            } else {
                c(t, true, "Resolved", "resolved")
            }
        })
        .collect();
    let failed = checks.iter().find(|(_, empty, _, _)| *empty);
    out.push(match failed {
        Some((_, _, reason, msg)) => c(conditions::READY, false, reason, msg),
        None => c(
            conditions::READY,
            true,
            "Ready",
            "subnets, security groups, images and instance profile resolved",
        ),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selecting(tag: &str) -> EC2NodeClassSpec {
        serde_json::from_value(serde_json::json!({
            "role": "nodes",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"k": "v"}}],
            "securityGroupSelectorTerms": [{"tags": {tag: "*"}}],
        }))
        .unwrap()
    }

    #[test]
    fn security_groups_are_reused_for_the_refresh_interval_and_described_again_after() {
        let t0 = Instant::now();
        let groups = vec![SecurityGroup {
            id: "sg-1".into(),
            name: Some("nodes".into()),
        }];
        let cache = SecurityGroupCache::new(Duration::from_secs(300));
        let a = selecting("a");
        assert_eq!(cache.fresh(&a, t0), None, "nothing described yet");
        cache.store(&a, t0, &groups);
        assert_eq!(
            cache.fresh(&a, t0 + Duration::from_secs(299)),
            Some(groups.clone())
        );
        assert_eq!(
            cache.fresh(&a, t0 + Duration::from_secs(300)),
            None,
            "expired"
        );
        // Another class with the same terms shares the answer; other terms do not.
        assert_eq!(
            cache.fresh(&selecting("a"), t0 + Duration::from_secs(1)),
            Some(groups.clone())
        );
        assert_eq!(
            cache.fresh(&selecting("b"), t0 + Duration::from_secs(1)),
            None
        );
        // A store prunes answers past the interval.
        cache.store(&selecting("b"), t0 + Duration::from_secs(400), &[]);
        assert_eq!(cache.entries.lock_or_recover().len(), 1);
        assert_eq!(cache.fresh(&a, t0), None, "a's entry was pruned");
        // Zero (a resolve outside the loop) never reuses.
        let none = SecurityGroupCache::uncached();
        none.store(&a, t0, &groups);
        assert_eq!(none.fresh(&a, t0), None);
    }

    fn described(
        state: &str,
        end_secs: Option<i64>,
        count: i32,
    ) -> aws_sdk_ec2::types::CapacityReservation {
        use aws_sdk_ec2::types::{
            CapacityReservationState, CapacityReservationType, InstanceMatchCriteria,
        };
        aws_sdk_ec2::types::CapacityReservation::builder()
            .capacity_reservation_id("cr-0123")
            .instance_type("p5.48xlarge")
            .availability_zone("us-east-1a")
            .available_instance_count(count)
            .state(CapacityReservationState::from(state))
            .reservation_type(CapacityReservationType::CapacityBlock)
            .instance_match_criteria(InstanceMatchCriteria::Targeted)
            .owner_id("012345678901")
            .set_end_date(end_secs.map(aws_sdk_ec2::primitives::DateTime::from_secs))
            .build()
    }

    #[test]
    fn only_active_unexpired_reservations_are_listed() {
        let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000);
        let r = usable_reservation(&described("active", Some(10_000), 3), now).unwrap();
        assert_eq!(r.id, "cr-0123");
        assert_eq!(r.instance_type, "p5.48xlarge");
        assert_eq!(r.availability_zone, "us-east-1a");
        assert_eq!(r.available_instance_count, 3);
        assert_eq!(r.reservation_type, ReservationType::CapacityBlock);
        assert_eq!(r.instance_match_criteria, "targeted");
        assert_eq!(r.end_time.as_deref(), Some("1970-01-01T02:46:40Z"));
        assert!(usable_reservation(&described("expired", Some(2_000), 3), now).is_none());
        assert!(
            usable_reservation(&described("active", Some(1_000), 3), now).is_none(),
            "ended"
        );
        let negative = usable_reservation(&described("active", None, -4), now).unwrap();
        assert_eq!(negative.available_instance_count, 0);
    }

    #[test]
    fn an_interruptible_reservation_is_listed_as_interruptible() {
        let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000);
        let mut r = described("active", None, 2);
        r.reservation_type = Some(aws_sdk_ec2::types::CapacityReservationType::Default);
        assert!(
            !usable_reservation(&r, now).unwrap().interruptible,
            "no Interruptible field: an ordinary reservation"
        );
        r.interruptible = Some(true);
        let listed = usable_reservation(&r, now).unwrap();
        assert!(listed.interruptible);
        assert_eq!(listed.available_instance_count, 2);
        r.interruptible = Some(false);
        assert!(!usable_reservation(&r, now).unwrap().interruptible);
    }

    #[test]
    fn a_reservations_new_count_or_end_is_a_status_change_to_write() {
        let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000);
        let r = usable_reservation(&described("active", Some(10_000), 3), now).unwrap();
        let old = EC2NodeClassStatus {
            capacity_reservations: vec![r.clone()],
            ..Default::default()
        };
        assert!(!status_changed(&old, &old.clone()));
        let mut fewer = old.clone();
        fewer.capacity_reservations[0].available_instance_count = 2;
        assert!(status_changed(&old, &fewer), "a slot was taken");
        let mut moved = old.clone();
        moved.capacity_reservations[0].end_time = Some("1970-01-01T01:00:00Z".into());
        assert!(status_changed(&old, &moved), "the end moved");
        assert!(
            status_changed(&old, &EC2NodeClassStatus::default()),
            "it ended"
        );
    }

    #[test]
    fn only_an_available_placement_group_is_listed() {
        use aws_sdk_ec2::types::{PlacementGroupState, PlacementStrategy};
        let group = |state: PlacementGroupState| {
            aws_sdk_ec2::types::PlacementGroup::builder()
                .group_id("pg-0123")
                .group_name("training")
                .strategy(PlacementStrategy::Cluster)
                .state(state)
                .build()
        };
        assert_eq!(
            placement_group_of(group(PlacementGroupState::Available)),
            Some(PlacementGroup {
                id: "pg-0123".into(),
                name: "training".into(),
                strategy: "cluster".into(),
            })
        );
        assert_eq!(
            placement_group_of(group(PlacementGroupState::Pending)),
            None
        );
        assert_eq!(
            placement_group_of(group(PlacementGroupState::Deleting)),
            None
        );
        let old = EC2NodeClassStatus::default();
        let new = EC2NodeClassStatus {
            placement_group: placement_group_of(group(PlacementGroupState::Available)),
            ..Default::default()
        };
        assert!(status_changed(&old, &new), "a resolved group is written");
    }

    #[test]
    fn the_status_patch_clears_what_resolved_to_nothing() {
        let patch = status_patch(&EC2NodeClassStatus::default());
        assert_eq!(
            patch["status"]["capacityReservations"],
            serde_json::json!([])
        );
        assert_eq!(patch["status"]["subnets"], serde_json::json!([]));
        assert!(patch["status"]["instanceProfile"].is_null());
        assert!(
            patch["status"]
                .get("placementGroup")
                .is_some_and(|v| v.is_null()),
            "a selector removed clears the group"
        );
        let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000);
        let r = usable_reservation(&described("active", Some(10_000), 3), now).unwrap();
        let listed = status_patch(&EC2NodeClassStatus {
            capacity_reservations: vec![r],
            ..Default::default()
        });
        assert_eq!(listed["status"]["capacityReservations"][0]["id"], "cr-0123");
    }

    #[test]
    fn a_capacity_block_in_its_last_40_minutes_is_listed_with_no_slot() {
        let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(100_000);
        let at = |end: i64| usable_reservation(&described("active", Some(end), 3), now).unwrap();
        assert_eq!(at(100_000 + 40 * 60 + 1).available_instance_count, 3);
        let ending = at(100_000 + 40 * 60);
        assert_eq!(
            ending.available_instance_count, 0,
            "drained from 40 minutes before"
        );
        assert!(
            ending.end_time.is_some(),
            "the drain reads the end from the status"
        );
        // An ODCR that ends leaves its instances as on-demand: its slots count to the end.
        let mut odcr = described("active", Some(100_000 + 60), 3);
        odcr.reservation_type = Some(aws_sdk_ec2::types::CapacityReservationType::Default);
        assert_eq!(
            usable_reservation(&odcr, now)
                .unwrap()
                .available_instance_count,
            3
        );
    }

    #[test]
    fn ready_names_the_first_selector_that_resolved_to_nothing() {
        let status = EC2NodeClassStatus {
            subnets: vec![Subnet {
                id: "subnet-1".into(),
                zone: "us-east-1a".into(),
                zone_id: None,
            }],
            ..Default::default()
        };
        let conds = readiness(
            &status,
            None,
            None,
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        );
        let ready = conditions::find(&conds, conditions::READY).unwrap();
        assert_eq!(ready.status, "False");
        assert_eq!(ready.reason, "SecurityGroupsNotFound");
        assert!(conditions::is_true(&conds, cond::SUBNETS_READY));
        assert!(!conditions::is_true(&conds, cond::AMIS_READY));
    }

    #[test]
    fn an_instance_profile_iam_refused_keeps_the_class_not_ready_with_iams_words() {
        let status = EC2NodeClassStatus {
            subnets: vec![Subnet {
                id: "subnet-1".into(),
                zone: "us-east-1a".into(),
                zone_id: None,
            }],
            security_groups: vec![SecurityGroup {
                id: "sg-1".into(),
                name: Some("nodes".into()),
            }],
            amis: vec![Ami {
                id: "ami-1".into(),
                name: Some("al2023".into()),
                requirements: vec![],
            }],
            instance_profile: None,
            capacity_reservations: vec![],
            placement_group: None,
            conditions: vec![],
        };
        let conds = readiness(
            &status,
            Some("AddRoleToInstanceProfile: NoSuchEntity: role Nodes not found"),
            None,
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        );
        let ready = conditions::find(&conds, conditions::READY).unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "InstanceProfileNotReady")
        );
        assert!(
            ready.message.contains("role Nodes not found"),
            "{}",
            ready.message
        );
        let mut ok = status.clone();
        ok.instance_profile = Some("c_0123".into());
        let conds = readiness(&ok, None, None, k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        assert!(conditions::is_true(&conds, conditions::READY));
        assert!(conditions::is_true(&conds, cond::INSTANCE_PROFILE_READY));
        assert!(conditions::is_true(&conds, cond::VALIDATION_SUCCEEDED));
        // A spec breaking a rule the apiserver could not check: not ready, and why.
        let conds = readiness(
            &ok,
            None,
            Some("spec.tags: reserved key"),
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        );
        let ready = conditions::find(&conds, conditions::READY).unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "ValidationFailed")
        );
        assert!(!conditions::is_true(&conds, cond::VALIDATION_SUCCEEDED));
    }

    #[test]
    fn family_parameter_paths_follow_the_published_layout_under_the_prefix() {
        let p = AmiParameters {
            prefix: "/test/".into(),
            kubernetes_version: "1.30".into(),
        };
        assert_eq!(
            p.path(AmiFamily::AL2023, "x86_64", "latest").unwrap(),
            "/test/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id"
        );
        assert_eq!(
            p.path(AmiFamily::Bottlerocket, "arm64", "latest").unwrap(),
            "/test/bottlerocket/aws-k8s-1.30/arm64/latest/image_id"
        );
        assert_eq!(p.path(AmiFamily::Custom, "arm64", "latest"), None);
    }

    #[test]
    fn al2_and_windows_parameters_follow_the_published_layout() {
        let p = AmiParameters {
            prefix: "/aws/service".into(),
            kubernetes_version: "1.32".into(),
        };
        let path = |f, arch, v: ImageVariant, version| p.variant_path(f, arch, v, version);
        use ImageVariant::*;
        assert_eq!(
            path(AmiFamily::AL2, "x86_64", Standard, "latest").unwrap(),
            "/aws/service/eks/optimized-ami/1.32/amazon-linux-2/recommended/image_id"
        );
        assert_eq!(
            path(AmiFamily::AL2, "arm64", Standard, "v20240625").unwrap(),
            "/aws/service/eks/optimized-ami/1.32/amazon-linux-2-arm64/amazon-eks-arm64-node-1.32-v20240625/image_id"
        );
        assert_eq!(
            path(AmiFamily::AL2, "x86_64", Neuron, "latest"),
            path(AmiFamily::AL2, "x86_64", Nvidia, "latest"),
            "one GPU image for both"
        );
        assert_eq!(
            path(AmiFamily::AL2, "x86_64", Nvidia, "latest").unwrap(),
            "/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/recommended/image_id"
        );
        assert_eq!(path(AmiFamily::AL2, "arm64", Nvidia, "latest"), None);
        assert_eq!(
            path(AmiFamily::Windows2022, "x86_64", Standard, "latest").unwrap(),
            "/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.32/image_id"
        );
        assert_eq!(
            path(AmiFamily::Windows2019, "x86_64", Standard, "latest").unwrap(),
            "/aws/service/ami-windows-latest/Windows_Server-2019-English-Core-EKS_Optimized-1.32/image_id"
        );
        for (arch, variant, version) in [
            ("arm64", Standard, "latest"),
            ("x86_64", Nvidia, "latest"),
            ("x86_64", Standard, "v20250101"),
        ] {
            assert_eq!(path(AmiFamily::Windows2025, arch, variant, version), None);
        }
        assert_eq!(p.unpublished(AmiFamily::AL2), None);
        assert!(
            p.unpublished(AmiFamily::Windows2025)
                .unwrap()
                .contains("from Kubernetes 1.35")
        );
        let newer = AmiParameters {
            kubernetes_version: "1.35".into(),
            ..p
        };
        assert!(
            newer
                .unpublished(AmiFamily::AL2)
                .unwrap()
                .contains("no AL2 images for Kubernetes 1.35")
        );
        assert_eq!(newer.unpublished(AmiFamily::Windows2025), None);
        assert_eq!(newer.unpublished(AmiFamily::AL2023), None);
    }

    #[test]
    fn an_alias_with_no_image_for_the_clusters_version_is_named_with_its_path() {
        let spec: EC2NodeClassSpec = serde_json::from_value(serde_json::json!({
            "subnetSelectorTerms": [{"id": "subnet-1"}],
            "securityGroupSelectorTerms": [{"id": "sg-1"}],
            "amiSelectorTerms": [{"alias": "al2@latest"}],
            "role": "nodes",
        }))
        .unwrap();
        let on = |k: &str| AmiParameters {
            prefix: "/aws/service".into(),
            kubernetes_version: k.into(),
        };
        assert!(unpublished_aliases(&on("1.32"), &spec).is_empty());
        assert_eq!(
            unpublished_aliases(&on("1.33"), &spec),
            [
                "spec.amiSelectorTerms[0].alias: EKS publishes no AL2 images for Kubernetes 1.33 (the last is 1.32); use al2023@ or bottlerocket@"
            ]
        );
    }

    #[test]
    fn windows_images_make_windows_nodes_of_their_build() {
        let reqs = os_requirements(AmiFamily::Windows2022);
        assert_eq!(reqs.len(), 2);
        assert_eq!(
            (reqs[0].key.as_str(), reqs[0].values.as_slice()),
            (labels::OS, &["windows".to_string()][..])
        );
        assert_eq!(reqs[1].values, vec!["10.0.20348".to_string()]);
        assert!(os_requirements(AmiFamily::AL2).is_empty());
    }

    #[test]
    fn accelerator_types_get_the_driver_variant_of_the_family_image() {
        let p = AmiParameters {
            prefix: "/aws/service".into(),
            kubernetes_version: "1.31".into(),
        };
        let nvidia = ImageVariant::Nvidia;
        assert_eq!(
            p.variant_path(AmiFamily::AL2023, "x86_64", nvidia, "latest")
                .unwrap(),
            "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/nvidia/recommended/image_id"
        );
        assert_eq!(
            p.variant_path(
                AmiFamily::AL2023,
                "x86_64",
                ImageVariant::Neuron,
                "v20241121"
            )
            .unwrap(),
            "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/neuron/amazon-eks-node-al2023-x86_64-neuron-1.31-v20241121/image_id"
        );
        assert_eq!(
            p.variant_path(AmiFamily::AL2023, "arm64", ImageVariant::Neuron, "latest"),
            None
        );
        assert_eq!(
            p.variant_path(AmiFamily::Bottlerocket, "x86_64", nvidia, "latest")
                .unwrap(),
            "/aws/service/bottlerocket/aws-k8s-1.31-nvidia/x86_64/latest/image_id"
        );
        assert_eq!(
            p.variant_path(
                AmiFamily::Bottlerocket,
                "x86_64",
                ImageVariant::Neuron,
                "latest"
            ),
            None
        );

        // A GPU type fits only the nvidia image, a plain type only the standard one.
        let reqs = |v: ImageVariant| {
            let mut r = adze_scheduling::Requirements::new();
            for q in v.requirements() {
                r.add(
                    adze_scheduling::Requirement::new(
                        &q.key,
                        adze_scheduling::Operator::parse(q.operator.as_str()).unwrap(),
                        &q.values,
                    )
                    .unwrap(),
                );
            }
            r
        };
        let cat = adze_scheduling::catalog::embedded();
        let g5 = cat.iter().find(|t| t.name == "g5.xlarge").unwrap();
        let m5 = cat.iter().find(|t| t.name == "m5.large").unwrap();
        let inf2 = cat.iter().find(|t| t.name == "inf2.xlarge").unwrap();
        use adze_scheduling::node_class::image_fits;
        assert!(image_fits(&reqs(ImageVariant::Nvidia), g5));
        assert!(!image_fits(&reqs(ImageVariant::Standard), g5));
        assert!(image_fits(&reqs(ImageVariant::Standard), m5));
        assert!(!image_fits(&reqs(ImageVariant::Nvidia), m5));
        assert!(image_fits(&reqs(ImageVariant::Neuron), inf2));
        assert!(!image_fits(&reqs(ImageVariant::Standard), inf2));
    }
}
