//! Rust-side validation of NodePools, NodeClaims and EC2NodeClasses.
//!
//! It mirrors the CRD schemas and their CEL rules, built from the same constants, because Adze
//! must refuse a bad object even when the apiserver did not: clusters older than 1.25 do not run
//! CEL, and `adze-provisioner simulate` reads YAML that never met an apiserver. Every problem is
//! reported at once, each with its field path, so one run shows the user everything to fix.

use std::{collections::BTreeMap, fmt};

use adze_scheduling::kubelet_expr;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use crate::{
    EC2NodeClass, NodeClaim, NodePool,
    ec2nodeclass::{
        AmiFamily, AmiSelectorTerm, BlockDevice, BlockDeviceMapping, CONNECTION_TRACKING_BOUNDS,
        CapacityReservationSelectorTerm, EC2NodeClassSpec, EVICTION_SIGNALS, InterfaceType,
        KUBELET_IMAGE_GC_HIGH_DEFAULT, KUBELET_IMAGE_GC_LOW_DEFAULT, KubeletConfiguration,
        POD_PIDS_LIMIT_MAX, RESERVED_RESOURCES, RESERVED_TAG_KEYS, RESERVED_TAG_PREFIX,
        SecurityGroupSelectorTerm, SubnetSelectorTerm, VolumeType,
    },
    label_keys, labels,
    node_class_ref::NodeClassRef,
    nodeclaim::NodeClaimSpec,
    nodeoverlay::{NodeOverlay, NodeOverlaySpec, RESTRICTED_CAPACITY},
    nodepool::{Budget, Disruption, DisruptionReason, NodePoolSpec, TemplateMetadata},
    patterns,
    requirement::{Operator, Requirement},
    taint::Taint,
};

/// Longest piece of user input a message repeats; past it the value is cut and its length
/// given, so a hostile 10,000-character name does not fill the terminal.
pub const SHOWN_MAX_CHARS: usize = 64;

/// `value` quoted for a message, cut to [`SHOWN_MAX_CHARS`] characters.
pub fn shown(value: &str) -> String {
    let len = value.chars().count();
    if len <= SHOWN_MAX_CHARS {
        format!("{value:?}")
    } else {
        let head: String = value.chars().take(SHOWN_MAX_CHARS).collect();
        format!("{head:?}... ({len} characters)")
    }
}

/// `value` unquoted (a name in `Kind/name`), cut as [`shown`] cuts it.
pub fn cut(value: &str) -> String {
    let len = value.chars().count();
    if len <= SHOWN_MAX_CHARS {
        value.to_string()
    } else {
        let head: String = value.chars().take(SHOWN_MAX_CHARS).collect();
        format!("{head}... ({len} characters)")
    }
}

/// One problem with one field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// Where, in the object's own field names: `spec.template.spec.requirements[2].values`.
    pub path: String,
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Everything wrong with one object.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ValidationError {
    /// "NodePool", "NodeClaim" or "EC2NodeClass".
    pub kind: &'static str,
    pub name: String,
    /// Never empty.
    pub errors: Vec<FieldError>,
}

impl ValidationError {
    /// Whether some problem is reported at exactly `path`.
    pub fn has_error_at(&self, path: &str) -> bool {
        self.errors.iter().any(|error| error.path == path)
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} is invalid:", self.kind, shown(&self.name))?;
        for error in &self.errors {
            write!(f, "\n  - {error}")?;
        }
        Ok(())
    }
}

impl NodePool {
    /// Checks the name and the spec against every rule the CRD enforces.
    pub fn validate(&self) -> Result<(), ValidationError> {
        let mut errors = nodepool_name_errors(self.metadata.name.as_deref());
        errors.extend(self.spec.field_errors());
        into_result("NodePool", self.metadata.name.as_deref(), errors)
    }
}

/// Longest NodePool name: the name is the value of every node's `adze.sh/nodepool` label, so
/// it must be a label value, as Karpenter requires of its NodePools.
pub const NODEPOOL_NAME_MAX_LEN: usize = patterns::LABEL_VALUE_MAX_LEN;

/// A NodePool's `metadata.name` problems (none when the name is absent: an object without one
/// never reaches a cluster, and a scenario refuses it on its own).
pub fn nodepool_name_errors(name: Option<&str>) -> Vec<FieldError> {
    let mut problems = Problems::default();
    let path = Path::new("metadata").field("name");
    if let Some(name) = name {
        let len = name.chars().count();
        if len > NODEPOOL_NAME_MAX_LEN {
            problems.add(
                &path,
                format!(
                    "may be at most {NODEPOOL_NAME_MAX_LEN} characters, got {len}: it becomes the value of the {} label of the pool's nodes",
                    labels::NODEPOOL
                ),
            );
        } else if !patterns::is_label_value(name) {
            problems.add(
                &path,
                format!(
                    "{} is not a label value, and it becomes the value of the {} label of the pool's nodes",
                    shown(name),
                    labels::NODEPOOL
                ),
            );
        }
    }
    problems.0
}

impl NodePoolSpec {
    /// All problems, with paths starting at `spec`.
    pub fn field_errors(&self) -> Vec<FieldError> {
        let mut problems = Problems::default();
        let spec = Path::new("spec");
        let template = spec.field("template");
        template_metadata(
            &mut problems,
            &template.field("metadata"),
            &self.template.metadata,
        );
        let tspec = template.field("spec");
        let t = &self.template.spec;
        requirements(
            &mut problems,
            &tspec.field("requirements"),
            &t.requirements,
            &[labels::NODEPOOL],
        );
        taints(&mut problems, &tspec.field("taints"), &t.taints);
        taints(
            &mut problems,
            &tspec.field("startupTaints"),
            &t.startup_taints,
        );
        node_class_ref(
            &mut problems,
            &tspec.field("nodeClassRef"),
            &t.node_class_ref,
        );
        disruption(&mut problems, &spec.field("disruption"), &self.disruption);
        quantities(&mut problems, &spec.field("limits"), &self.limits);
        if let Some(weight) = self.weight
            && !(1..=100).contains(&weight)
        {
            problems.add(
                &spec.field("weight"),
                format!("must be between 1 and 100, got {weight}"),
            );
        }
        if let Some(replicas) = self.replicas {
            if replicas < 0 {
                problems.add(
                    &spec.field("replicas"),
                    format!("must be 0 or more, got {replicas}"),
                );
            }
            if self.weight.is_some() {
                problems.add(
                    &spec.field("weight"),
                    "cannot be set on a static NodePool (one with replicas)".to_string(),
                );
            }
            // A static pool's size is its replicas: resource caps have nothing to act on.
            for key in self.limits.keys().filter(|k| k.as_str() != "nodes") {
                problems.add(
                    &spec.field("limits").key(key),
                    "a static NodePool (one with replicas) takes only limits.nodes".to_string(),
                );
            }
        }
        problems.0
    }
}

impl NodeClaim {
    /// Checks the spec against every rule the CRD enforces on creation.
    pub fn validate(&self) -> Result<(), ValidationError> {
        into_result(
            "NodeClaim",
            self.metadata.name.as_deref(),
            self.spec.field_errors(),
        )
    }
}

impl NodeClaimSpec {
    /// All problems, with paths starting at `spec`.
    pub fn field_errors(&self) -> Vec<FieldError> {
        let mut problems = Problems::default();
        let spec = Path::new("spec");
        requirements(
            &mut problems,
            &spec.field("requirements"),
            &self.requirements,
            &[],
        );
        quantities(
            &mut problems,
            &spec.field("resources").field("requests"),
            &self.resources.requests,
        );
        taints(&mut problems, &spec.field("taints"), &self.taints);
        taints(
            &mut problems,
            &spec.field("startupTaints"),
            &self.startup_taints,
        );
        node_class_ref(
            &mut problems,
            &spec.field("nodeClassRef"),
            &self.node_class_ref,
        );
        problems.0
    }
}

impl EC2NodeClass {
    /// Checks the spec against every rule the CRD enforces on creation.
    pub fn validate(&self) -> Result<(), ValidationError> {
        into_result(
            "EC2NodeClass",
            self.metadata.name.as_deref(),
            self.spec.field_errors(),
        )
    }
}

impl EC2NodeClassSpec {
    /// All problems, with paths starting at `spec`.
    pub fn field_errors(&self) -> Vec<FieldError> {
        let mut problems = Problems::default();
        let spec = Path::new("spec");
        let p = &mut problems;

        let path = spec.field("subnetSelectorTerms");
        count_between(p, &path, self.subnet_selector_terms.len(), 1, 30);
        for (i, term) in self.subnet_selector_terms.iter().enumerate() {
            subnet_term(p, &path.index(i), term);
        }
        let path = spec.field("securityGroupSelectorTerms");
        count_between(p, &path, self.security_group_selector_terms.len(), 1, 30);
        for (i, term) in self.security_group_selector_terms.iter().enumerate() {
            security_group_term(p, &path.index(i), term);
        }
        let path = spec.field("amiSelectorTerms");
        count_between(p, &path, self.ami_selector_terms.len(), 1, 30);
        for (i, term) in self.ami_selector_terms.iter().enumerate() {
            ami_term(p, &path.index(i), term);
        }
        let alias = self
            .ami_selector_terms
            .iter()
            .find_map(|t| t.alias.as_deref());
        if alias.is_some() && self.ami_selector_terms.len() > 1 {
            p.add(&path, "an amiSelectorTerm with alias must be the only term");
        }
        match (self.ami_family, alias) {
            (None, None) => p.add(
                &spec.field("amiFamily"),
                "amiFamily is required unless an amiSelectorTerm sets alias",
            ),
            (Some(family), Some(alias))
                if AmiFamily::from_alias(alias).is_some_and(|implied| implied != family) =>
            {
                p.add(
                    &spec.field("amiFamily"),
                    format!("amiFamily {family:?} does not match the family of alias {alias:?}"),
                );
            }
            _ => {}
        }

        let reservations = spec.field("capacityReservationSelectorTerms");
        count_between(
            p,
            &reservations,
            self.capacity_reservation_selector_terms.len(),
            0,
            30,
        );
        for (i, term) in self.capacity_reservation_selector_terms.iter().enumerate() {
            capacity_reservation_term(p, &reservations.index(i), term);
        }
        if let Some(pg) = &self.placement_group_selector {
            let path = spec.field("placementGroupSelector");
            id_matches(
                p,
                &path.field("id"),
                &pg.id,
                patterns::PLACEMENT_GROUP_ID,
                "pg-0123abcd",
            );
            if let Some(name) = &pg.name {
                length_between(p, &path.field("name"), name, 1, 255);
            }
            if pg.id.is_some() == pg.name.is_some() {
                p.add(
                    &path,
                    "placementGroupSelector needs exactly one of id or name",
                );
            }
        }
        match (&self.role, &self.instance_profile) {
            (Some(_), Some(_)) | (None, None) => {
                p.add(&spec, "must specify exactly one of role or instanceProfile")
            }
            _ => {}
        }
        if let Some(role) = &self.role {
            length_between(p, &spec.field("role"), role, 1, 64);
        }
        if let Some(profile) = &self.instance_profile {
            length_between(p, &spec.field("instanceProfile"), profile, 1, 128);
        }

        let path = spec.field("blockDeviceMappings");
        count_between(p, &path, self.block_device_mappings.len(), 0, 50);
        if self
            .block_device_mappings
            .iter()
            .filter(|m| m.root_volume)
            .count()
            > 1
        {
            p.add(
                &path,
                "at most one blockDeviceMapping may be the rootVolume",
            );
        }
        for (i, mapping) in self.block_device_mappings.iter().enumerate() {
            block_device_mapping(p, &path.index(i), mapping);
        }

        if let Some(ct) = &self.connection_tracking {
            let path = spec.field("connectionTracking");
            for ((field, min, max), value) in CONNECTION_TRACKING_BOUNDS.iter().zip(ct.timeouts()) {
                if let Some(value) = value
                    && !(*min..=*max).contains(&value)
                {
                    p.add(
                        &path.field(field),
                        format!("must be between {min} and {max} seconds, got {value}"),
                    );
                }
            }
        }
        network_interfaces(p, &spec, self);

        let hop_limit = self.metadata_options.http_put_response_hop_limit;
        if !(1..=64).contains(&hop_limit) {
            p.add(
                &spec
                    .field("metadataOptions")
                    .field("httpPutResponseHopLimit"),
                format!("must be between 1 and 64, got {hop_limit}"),
            );
        }

        let path = spec.field("tags");
        count_between(p, &path, self.tags.len(), 0, 50);
        for key in self.tags.keys() {
            if key.starts_with(RESERVED_TAG_PREFIX) || RESERVED_TAG_KEYS.contains(&key.as_str()) {
                p.add(
                    &path.key(key),
                    "tag keys used by Adze and EKS to track ownership are restricted",
                );
            }
        }

        if let Some(kubelet) = &self.kubelet {
            kubelet_configuration(p, &spec.field("kubelet"), kubelet);
        }
        let unsupported = match self.effective_ami_family() {
            Some(AmiFamily::Bottlerocket) => Some("Bottlerocket"),
            Some(f) if f.is_windows() => Some("Windows"),
            _ => None,
        };
        if let (Some(family), Some(k)) = (self.effective_ami_family(), &self.kubelet) {
            for (field, why) in k.unsupported_with(family) {
                p.add(
                    &spec.field("kubelet").field(field),
                    format!(
                        "kubelet.{field} is not supported with {} ({why})",
                        family.label()
                    ),
                );
            }
        }
        if let (Some(label), Some(_)) = (unsupported, &self.instance_store_policy) {
            p.add(
                &spec.field("instanceStorePolicy"),
                format!("instanceStorePolicy is not supported with {label}"),
            );
        }
        problems.0
    }
}

impl NodeOverlay {
    /// Checks the spec against every rule the CRD enforces, and the requirement rules the
    /// NodePool's requirements follow.
    pub fn validate(&self) -> Result<(), ValidationError> {
        into_result(
            "NodeOverlay",
            self.metadata.name.as_deref(),
            self.spec.field_errors(),
        )
    }
}

impl NodeOverlaySpec {
    /// All problems, with paths starting at `spec`.
    pub fn field_errors(&self) -> Vec<FieldError> {
        let mut problems = Problems::default();
        let p = &mut problems;
        let spec = Path::new("spec");
        let path = spec.field("requirements");
        requirements(p, &path, &self.requirements, &[]);
        for (i, r) in self.requirements.iter().enumerate() {
            if r.min_values.is_some() {
                p.add(
                    &path.index(i).field("minValues"),
                    crate::nodeoverlay::MIN_VALUES_MESSAGE,
                );
            }
        }
        if self.price.is_some() && self.price_adjustment.is_some() {
            p.add(&spec, "cannot set both price and priceAdjustment");
        }
        if let Some(adjustment) = &self.price_adjustment
            && (!patterns::is_match(patterns::PRICE_ADJUSTMENT, adjustment)
                || adze_scheduling::overlay::PriceChange::adjustment(adjustment).is_err())
        {
            p.add(
                &spec.field("priceAdjustment"),
                format!("{adjustment:?} must be a signed amount (\"+0.5\", \"-0.01\") or a signed percentage no lower than -100% (\"-10%\", \"+5%\")"),
            );
        }
        if let Some(price) = &self.price
            && (!patterns::is_match(patterns::PRICE, price)
                || adze_scheduling::overlay::PriceChange::price(price).is_err())
        {
            p.add(
                &spec.field("price"),
                format!("{price:?} must be a non-negative decimal such as \"0.25\""),
            );
        }
        let path = spec.field("capacity");
        count_between(p, &path, self.capacity.len(), 0, 50);
        for name in self.capacity.keys() {
            if RESTRICTED_CAPACITY.contains(&name.as_str()) {
                p.add(
                    &path.key(name),
                    format!("{name} is restricted: an overlay adds extended resources only"),
                );
            }
        }
        quantities(p, &path, &self.capacity);
        if let Some(weight) = self.weight
            && !(1..=10000).contains(&weight)
        {
            p.add(
                &spec.field("weight"),
                format!("must be between 1 and 10000, got {weight}"),
            );
        }
        problems.0
    }
}

fn into_result(
    kind: &'static str,
    name: Option<&str>,
    errors: Vec<FieldError>,
) -> Result<(), ValidationError> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ValidationError {
            kind,
            name: name.unwrap_or_default().to_string(),
            errors,
        })
    }
}

/// A field path in Kubernetes' notation: `a.b[2].c[key]`.
#[derive(Clone, Debug)]
struct Path(String);

impl Path {
    fn new(root: &str) -> Self {
        Self(root.to_string())
    }

    fn field(&self, name: &str) -> Self {
        Self(format!("{}.{name}", self.0))
    }

    fn index(&self, i: usize) -> Self {
        Self(format!("{}[{i}]", self.0))
    }

    fn key(&self, key: &str) -> Self {
        Self(format!("{}[{key}]", self.0))
    }
}

#[derive(Default)]
struct Problems(Vec<FieldError>);

impl Problems {
    fn add(&mut self, path: &Path, message: impl Into<String>) {
        self.0.push(FieldError {
            path: path.0.clone(),
            message: message.into(),
        });
    }
}

fn count_between(p: &mut Problems, path: &Path, count: usize, min: usize, max: usize) {
    let entries = |n: usize| if n == 1 { "entry" } else { "entries" };
    if count < min {
        p.add(
            path,
            format!("needs at least {min} {}, got {count}", entries(min)),
        );
    } else if count > max {
        p.add(
            path,
            format!("may have at most {max} {}, got {count}", entries(max)),
        );
    }
}

fn length_between(p: &mut Problems, path: &Path, value: &str, min: usize, max: usize) {
    let len = value.chars().count();
    if len < min {
        p.add(path, "may not be empty");
    } else if len > max {
        p.add(path, format!("may be at most {max} characters, got {len}"));
    }
}

const LABEL_VALUE_MESSAGE: &str =
    "must be at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric";

fn template_metadata(p: &mut Problems, path: &Path, metadata: &TemplateMetadata) {
    let labels_path = path.field("labels");
    count_between(p, &labels_path, metadata.labels.len(), 0, 100);
    for (key, value) in &metadata.labels {
        if let Some(problem) = label_keys::template_label_problem(key) {
            p.add(&labels_path.key(key), problem);
        }
        if !patterns::is_label_value(value) {
            p.add(
                &labels_path.key(key),
                format!("value {value:?} {LABEL_VALUE_MESSAGE}"),
            );
        }
    }
}

fn requirements(
    p: &mut Problems,
    path: &Path,
    requirements: &[Requirement],
    also_forbidden: &[&str],
) {
    count_between(p, path, requirements.len(), 0, 100);
    for (i, requirement) in requirements.iter().enumerate() {
        self::requirement(p, &path.index(i), requirement, also_forbidden);
    }
}

fn requirement(p: &mut Problems, path: &Path, requirement: &Requirement, also_forbidden: &[&str]) {
    let Requirement {
        key,
        operator,
        values,
        min_values,
    } = requirement;
    if !patterns::is_qualified_name(key) {
        p.add(
            &path.field("key"),
            format!("{key:?} must be a qualified name: an optional DNS-subdomain prefix and '/', then a name of at most 63 characters"),
        );
    } else if let Some(problem) = label_keys::requirement_key_problem(key, also_forbidden) {
        p.add(&path.field("key"), problem);
    }

    let values_path = path.field("values");
    match operator {
        Operator::In | Operator::NotIn if values.is_empty() => {
            p.add(
                &values_path,
                format!("operator {operator} needs at least one value"),
            );
        }
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
            p.add(
                &values_path,
                format!("operator {operator} takes no values, got {values:?}"),
            );
        }
        Operator::Gt | Operator::Lt | Operator::Gte | Operator::Lte
            if values.len() != 1 || !patterns::is_match(patterns::INTEGER_VALUE, &values[0]) =>
        {
            p.add(
                &values_path,
                format!("operator {operator} needs exactly one whole number of 1 to 18 digits, got {values:?}"),
            );
        }
        _ => {}
    }
    count_between(p, &values_path, values.len(), 0, 100);
    for (i, value) in values.iter().enumerate() {
        if !patterns::is_label_value(value) {
            p.add(
                &values_path.index(i),
                format!("{value:?} {LABEL_VALUE_MESSAGE}"),
            );
        }
    }

    if let Some(min_values) = *min_values {
        let min_path = path.field("minValues");
        if !(1..=50).contains(&min_values) {
            p.add(
                &min_path,
                format!("must be between 1 and 50, got {min_values}"),
            );
        }
        if *operator == Operator::In && min_values as usize > values.len() {
            p.add(
                &min_path,
                format!(
                    "minValues {min_values} exceeds the {} value(s) of this In requirement",
                    values.len()
                ),
            );
        }
    }
}

fn taints(p: &mut Problems, path: &Path, taints: &[Taint]) {
    count_between(p, path, taints.len(), 0, 100);
    for (i, taint) in taints.iter().enumerate() {
        let path = path.index(i);
        if !patterns::is_qualified_name(&taint.key) {
            p.add(
                &path.field("key"),
                format!("{:?} must be a qualified name, like a label key", taint.key),
            );
        }
        if let Some(value) = &taint.value
            && !patterns::is_label_value(value)
        {
            p.add(
                &path.field("value"),
                format!("{value:?} {LABEL_VALUE_MESSAGE}"),
            );
        }
    }
}

fn node_class_ref(p: &mut Problems, path: &Path, reference: &NodeClassRef) {
    use crate::node_class_ref::{GROUP_MAX_LEN, KIND_MAX_LEN, NAME_MAX_LEN};
    for (field, value, max) in [
        ("group", &reference.group, GROUP_MAX_LEN),
        ("kind", &reference.kind, KIND_MAX_LEN),
        ("name", &reference.name, NAME_MAX_LEN),
    ] {
        length_between(p, &path.field(field), value, 1, max);
    }
    if reference.group.contains('/') {
        p.add(
            &path.field("group"),
            format!("{:?} is an API group, without a version", reference.group),
        );
    }
}

fn disruption(p: &mut Problems, path: &Path, disruption: &Disruption) {
    if let Err(problem) = disruption.min_savings_per_disruption_cost() {
        p.add(&path.field("minSavingsPerDisruptionCost"), problem);
    }
    let budgets_path = path.field("budgets");
    count_between(p, &budgets_path, disruption.budgets.len(), 0, 50);
    for (i, budget) in disruption.budgets.iter().enumerate() {
        self::budget(p, &budgets_path.index(i), budget);
    }
}

fn budget(p: &mut Problems, path: &Path, budget: &Budget) {
    if let Err(problem) = budget.parsed_nodes() {
        p.add(&path.field("nodes"), problem);
    }
    if let Some(schedule) = &budget.schedule {
        if !patterns::is_match(patterns::CRON_SCHEDULE, schedule) {
            p.add(
                &path.field("schedule"),
                format!(
                    "{} must be a cron schedule of five fields or a macro such as @daily",
                    shown(schedule)
                ),
            );
        } else if let Err(error) = adze_scheduling::disruption::cron::Schedule::parse(schedule) {
            // Five fields, but not a schedule the disruption controller can run (`*/0`, a
            // minute of 61): refused by the parser it uses.
            p.add(&path.field("schedule"), error.to_string());
        }
    }
    match (&budget.schedule, &budget.duration) {
        (Some(_), None) => p.add(
            &path.field("duration"),
            "duration is required when schedule is set",
        ),
        (None, Some(_)) => p.add(
            &path.field("schedule"),
            "schedule is required when duration is set",
        ),
        _ => {}
    }
    count_between(p, &path.field("reasons"), budget.reasons.len(), 0, 4);
    for (i, reason) in budget.reasons.iter().enumerate() {
        if *reason == DisruptionReason::Expired {
            p.add(
                &path.field("reasons").index(i),
                "Expired is not a budget reason: expiry is forceful and no budget holds it back (use Underutilized, Empty, Drifted or Unhealthy)",
            );
        }
    }
}

fn quantities(p: &mut Problems, path: &Path, quantities: &BTreeMap<String, Quantity>) {
    for (name, quantity) in quantities {
        if !patterns::is_match(patterns::QUANTITY, &quantity.0) {
            p.add(
                &path.key(name),
                format!(
                    "{} is not a resource quantity such as \"4\", \"500m\" or \"16Gi\"",
                    shown(&quantity.0)
                ),
            );
        } else if let Err(error) = crate::convert::resources::amount(name, &quantity.0) {
            // The apiserver's syntax, but past what planning can hold (`1e100000`): refused
            // here, by the parser conversion uses, so nothing `validate()` passes fails later.
            p.add(&path.key(name), error.to_string());
        }
    }
}

fn selector_tags(p: &mut Problems, path: &Path, tags: &BTreeMap<String, String>) {
    count_between(p, path, tags.len(), 0, 20);
    if tags
        .iter()
        .any(|(key, value)| key.is_empty() || value.is_empty())
    {
        p.add(path, "empty tag keys or values aren't supported");
    }
}

fn id_matches(
    p: &mut Problems,
    path: &Path,
    id: &Option<String>,
    pattern: &'static str,
    example: &str,
) {
    if let Some(id) = id
        && !patterns::is_match(pattern, id)
    {
        p.add(path, format!("{id:?} is not an ID like {example:?}"));
    }
}

fn subnet_term(p: &mut Problems, path: &Path, term: &SubnetSelectorTerm) {
    selector_tags(p, &path.field("tags"), &term.tags);
    id_matches(
        p,
        &path.field("id"),
        &term.id,
        patterns::SUBNET_ID,
        "subnet-0123abcd",
    );
    let (tags, id) = (!term.tags.is_empty(), term.id.is_some());
    if !tags && !id {
        p.add(path, "a subnetSelectorTerm needs tags or id");
    }
    if tags && id {
        p.add(
            path,
            "id cannot be combined with tags in a subnetSelectorTerm",
        );
    }
}

fn capacity_reservation_term(
    p: &mut Problems,
    path: &Path,
    term: &CapacityReservationSelectorTerm,
) {
    selector_tags(p, &path.field("tags"), &term.tags);
    id_matches(
        p,
        &path.field("id"),
        &term.id,
        patterns::CAPACITY_RESERVATION_ID,
        "cr-0123abcd",
    );
    if let Some(owner) = &term.owner_id
        && !patterns::is_match(patterns::ACCOUNT_ID, owner)
    {
        p.add(
            &path.field("ownerID"),
            format!("{owner:?} is not a 12-digit account ID"),
        );
    }
    let (tags, id) = (!term.tags.is_empty(), term.id.is_some());
    let criteria = term.instance_match_criteria.is_some();
    if !tags && !id && !criteria {
        p.add(
            path,
            "a capacityReservationSelectorTerm needs tags, id or instanceMatchCriteria",
        );
    }
    if id && (tags || criteria || term.owner_id.is_some()) {
        p.add(
            path,
            "id cannot be combined with other fields in a capacityReservationSelectorTerm",
        );
    }
}

fn security_group_term(p: &mut Problems, path: &Path, term: &SecurityGroupSelectorTerm) {
    selector_tags(p, &path.field("tags"), &term.tags);
    id_matches(
        p,
        &path.field("id"),
        &term.id,
        patterns::SECURITY_GROUP_ID,
        "sg-0123abcd",
    );
    if let Some(name) = &term.name {
        length_between(p, &path.field("name"), name, 1, 255);
    }
    let (tags, id, name) = (
        !term.tags.is_empty(),
        term.id.is_some(),
        term.name.is_some(),
    );
    if !tags && !id && !name {
        p.add(path, "a securityGroupSelectorTerm needs tags, id or name");
    }
    if id && (tags || name) {
        p.add(
            path,
            "id cannot be combined with other fields in a securityGroupSelectorTerm",
        );
    }
    if name && (tags || id) {
        p.add(
            path,
            "name cannot be combined with other fields in a securityGroupSelectorTerm",
        );
    }
}

fn ami_term(p: &mut Problems, path: &Path, term: &AmiSelectorTerm) {
    if let Some(alias) = &term.alias {
        let alias_path = path.field("alias");
        if alias.len() > 64 || !patterns::is_match(patterns::AMI_ALIAS, alias) {
            p.add(
                &alias_path,
                format!("{alias:?} must look like family@version, e.g. \"al2023@latest\""),
            );
        } else {
            match AmiFamily::from_alias(alias) {
                None => p.add(
                    &alias_path,
                    format!(
                        "alias family must be one of {}",
                        AmiFamily::ALIAS_FAMILIES.join(", ")
                    ),
                ),
                Some(family) if family.is_windows() && !alias.ends_with("@latest") => {
                    p.add(&alias_path, AmiFamily::WINDOWS_LATEST_ONLY)
                }
                Some(_) => {}
            }
        }
    }
    selector_tags(p, &path.field("tags"), &term.tags);
    id_matches(
        p,
        &path.field("id"),
        &term.id,
        patterns::AMI_ID,
        "ami-0123abcd",
    );
    for (field, value, max) in [
        ("name", &term.name, 128),
        ("owner", &term.owner, 64),
        ("ssmParameter", &term.ssm_parameter, 2048),
    ] {
        if let Some(value) = value {
            length_between(p, &path.field(field), value, 1, max);
        }
    }

    let alias = term.alias.is_some();
    let tags = !term.tags.is_empty();
    let id = term.id.is_some();
    let name = term.name.is_some();
    let owner = term.owner.is_some();
    let ssm = term.ssm_parameter.is_some();
    if !(alias || tags || id || name || ssm) {
        p.add(
            path,
            "an amiSelectorTerm needs alias, tags, id, name or ssmParameter",
        );
    }
    if alias && (tags || id || name || owner || ssm) {
        p.add(
            path,
            "alias cannot be combined with other fields in an amiSelectorTerm",
        );
    }
    if id && (tags || name || owner || ssm) {
        p.add(
            path,
            "id cannot be combined with other fields in an amiSelectorTerm",
        );
    }
    if ssm && (tags || name || owner) {
        p.add(
            path,
            "ssmParameter cannot be combined with other fields in an amiSelectorTerm",
        );
    }
}

fn block_device_mapping(p: &mut Problems, path: &Path, mapping: &BlockDeviceMapping) {
    length_between(p, &path.field("deviceName"), &mapping.device_name, 1, 64);
    if let Some(ebs) = &mapping.ebs {
        block_device(p, &path.field("ebs"), ebs);
    }
}

fn block_device(p: &mut Problems, path: &Path, ebs: &BlockDevice) {
    if let Some(size) = &ebs.volume_size
        && !patterns::is_match(patterns::VOLUME_SIZE, size)
    {
        p.add(
            &path.field("volumeSize"),
            format!("{size:?} must be a whole number of G, Gi, T or Ti, e.g. \"20Gi\""),
        );
    }
    if ebs.volume_size.is_none() && ebs.snapshot_id.is_none() {
        p.add(path, "ebs needs volumeSize or snapshotID");
    }
    let volume_type = ebs.volume_type;
    if let Some(iops) = ebs.iops {
        if !(100..=256_000).contains(&iops) {
            p.add(
                &path.field("iops"),
                format!("must be between 100 and 256000, got {iops}"),
            );
        }
        if !matches!(
            volume_type,
            Some(VolumeType::Io1 | VolumeType::Io2 | VolumeType::Gp3)
        ) {
            p.add(&path.field("iops"), "iops needs volumeType io1, io2 or gp3");
        }
    }
    if let Some(throughput) = ebs.throughput {
        if !(125..=2000).contains(&throughput) {
            p.add(
                &path.field("throughput"),
                format!("must be between 125 and 2000, got {throughput}"),
            );
        }
        if volume_type != Some(VolumeType::Gp3) {
            p.add(&path.field("throughput"), "throughput needs volumeType gp3");
        }
    }
    if let Some(rate) = ebs.volume_initialization_rate {
        if !(100..=300).contains(&rate) {
            p.add(
                &path.field("volumeInitializationRate"),
                format!("must be between 100 and 300 MiB/s, got {rate}"),
            );
        }
        if ebs.snapshot_id.is_none() {
            p.add(
                &path.field("volumeInitializationRate"),
                "volumeInitializationRate needs snapshotID",
            );
        }
    }
}

/// The interface list EC2 would accept: a primary IP interface, each (card, device) once, and
/// no public-IP choice when there are several interfaces (EC2 refuses that combination).
fn network_interfaces(p: &mut Problems, spec: &Path, class: &EC2NodeClassSpec) {
    let interfaces = &class.network_interfaces;
    let path = spec.field("networkInterfaces");
    count_between(p, &path, interfaces.len(), 0, 64);
    if interfaces.is_empty() {
        return;
    }
    for (i, nic) in interfaces.iter().enumerate() {
        for (field, value) in [
            ("networkCardIndex", nic.network_card_index),
            ("deviceIndex", nic.device_index),
        ] {
            if value < 0 {
                p.add(
                    &path.index(i).field(field),
                    format!("may not be negative, got {value}"),
                );
            }
        }
        if interfaces[..i].iter().any(|earlier| {
            earlier.network_card_index == nic.network_card_index
                && earlier.device_index == nic.device_index
        }) {
            p.add(
                &path.index(i),
                format!(
                    "each (networkCardIndex, deviceIndex) pair may appear only once in networkInterfaces; ({}, {}) is repeated",
                    nic.network_card_index, nic.device_index
                ),
            );
        }
    }
    if !interfaces.iter().any(|n| {
        n.network_card_index == 0
            && n.device_index == 0
            && n.interface_type == InterfaceType::Interface
    }) {
        p.add(
            &path,
            "networkInterfaces must include the primary interface: networkCardIndex 0, deviceIndex 0, interfaceType interface",
        );
    }
    if class.associate_public_ip_address.is_some() && interfaces.len() > 1 {
        p.add(
            &spec.field("associatePublicIPAddress"),
            "associatePublicIPAddress cannot be set with more than one networkInterface (EC2 refuses the combination)",
        );
    }
}

fn kubelet_configuration(p: &mut Problems, path: &Path, kubelet: &KubeletConfiguration) {
    let max_pods = match &kubelet.max_pods {
        Some(IntOrString::Int(n)) => Some(*n),
        Some(IntOrString::String(expr)) => {
            if let Err(e) = kubelet_expr::Expr::compile(expr) {
                p.add(
                    &path.field("maxPods"),
                    format!("expression {}: {e}", shown(expr)),
                );
            }
            None
        }
        None => None,
    };
    for (field, value) in [
        ("maxPods", max_pods),
        ("podsPerCore", kubelet.pods_per_core),
    ] {
        if let Some(value) = value
            && value < 0
        {
            p.add(
                &path.field(field),
                format!("may not be negative, got {value}"),
            );
        }
    }
    for (field, map) in [
        ("systemReserved", &kubelet.system_reserved),
        ("kubeReserved", &kubelet.kube_reserved),
    ] {
        let map_path = path.field(field);
        for (key, value) in map {
            if !RESERVED_RESOURCES.contains(&key.as_str()) {
                p.add(
                    &map_path.key(key),
                    format!(
                        "valid keys for {field} are {}",
                        RESERVED_RESOURCES.join(", ")
                    ),
                );
            }
            if kubelet_expr::is_expression(value) {
                if let Err(e) = kubelet_expr::Expr::compile(value) {
                    p.add(
                        &map_path.key(key),
                        format!(
                            "neither a resource quantity nor an expression {}: {e}",
                            shown(value)
                        ),
                    );
                }
            } else if !patterns::is_match(patterns::QUANTITY, value) {
                p.add(
                    &map_path.key(key),
                    format!("{value:?} is not a resource quantity"),
                );
            } else if value.starts_with('-') {
                // A negative reservation would add to allocatable: more room than the node has.
                p.add(
                    &map_path.key(key),
                    format!("{} may not be negative", shown(value)),
                );
            }
        }
    }
    for (field, map) in [
        ("evictionHard", &kubelet.eviction_hard),
        ("evictionSoft", &kubelet.eviction_soft),
    ] {
        let map_path = path.field(field);
        for (key, value) in map {
            if !EVICTION_SIGNALS.contains(&key.as_str()) {
                p.add(
                    &map_path.key(key),
                    format!("valid keys for {field} are {}", EVICTION_SIGNALS.join(", ")),
                );
            }
            if !patterns::is_match(patterns::EVICTION_THRESHOLD, value) {
                p.add(
                    &map_path.key(key),
                    format!("{value:?} must be a percentage such as \"10%\" or a quantity such as \"100Mi\""),
                );
            }
        }
    }
    let grace_path = path.field("evictionSoftGracePeriod");
    for key in kubelet.eviction_soft_grace_period.keys() {
        if !EVICTION_SIGNALS.contains(&key.as_str()) {
            p.add(
                &grace_path.key(key),
                format!(
                    "valid keys for evictionSoftGracePeriod are {}",
                    EVICTION_SIGNALS.join(", ")
                ),
            );
        }
        if !kubelet.eviction_soft.contains_key(key) {
            p.add(
                &grace_path.key(key),
                "every evictionSoftGracePeriod signal needs an evictionSoft threshold",
            );
        }
    }
    for key in kubelet.eviction_soft.keys() {
        if !kubelet.eviction_soft_grace_period.contains_key(key) {
            p.add(
                &path.field("evictionSoft").key(key),
                "every evictionSoft signal needs an evictionSoftGracePeriod",
            );
        }
    }
    count_between(
        p,
        &path.field("clusterDNS"),
        kubelet.cluster_dns.len(),
        0,
        3,
    );
    if let Some(v) = kubelet.eviction_max_pod_grace_period
        && v < 0
    {
        p.add(
            &path.field("evictionMaxPodGracePeriod"),
            format!("may not be negative, got {v}"),
        );
    }
    // Kubelet limits a pod only for a positive value (-1, its default, and 0 mean none); the
    // kernel's own ceiling bounds the rest.
    if let Some(v) = kubelet.pod_pids_limit
        && !(-1..=POD_PIDS_LIMIT_MAX).contains(&v)
    {
        p.add(
            &path.field("podPidsLimit"),
            format!("must be between -1 (no limit) and {POD_PIDS_LIMIT_MAX}, got {v}"),
        );
    }
    for (field, value) in [
        ("eventRecordQPS", kubelet.event_record_qps),
        ("eventBurst", kubelet.event_burst),
        ("kubeAPIQPS", kubelet.kube_api_qps),
        ("kubeAPIBurst", kubelet.kube_api_burst),
    ] {
        if let Some(v) = value
            && v < 0
        {
            p.add(&path.field(field), format!("may not be negative, got {v}"));
        }
    }
    let high = kubelet.image_gc_high_threshold_percent;
    let low = kubelet.image_gc_low_threshold_percent;
    for (field, value) in [
        ("imageGCHighThresholdPercent", high),
        ("imageGCLowThresholdPercent", low),
    ] {
        if let Some(v) = value
            && !(0..=100).contains(&v)
        {
            p.add(
                &path.field(field),
                format!("must be between 0 and 100, got {v}"),
            );
        }
    }
    // Kubelet refuses to start unless low < high, filling in its default for the one not set.
    match (high, low) {
        (Some(h), Some(l)) if l >= h => p.add(
            &path.field("imageGCLowThresholdPercent"),
            format!("must be less than imageGCHighThresholdPercent ({h}), got {l}"),
        ),
        (Some(h), None) if h <= KUBELET_IMAGE_GC_LOW_DEFAULT => p.add(
            &path.field("imageGCHighThresholdPercent"),
            format!(
                "must exceed kubelet's default imageGCLowThresholdPercent ({KUBELET_IMAGE_GC_LOW_DEFAULT}) unless that is set too, got {h}"
            ),
        ),
        (None, Some(l)) if l >= KUBELET_IMAGE_GC_HIGH_DEFAULT => p.add(
            &path.field("imageGCLowThresholdPercent"),
            format!(
                "must be below kubelet's default imageGCHighThresholdPercent ({KUBELET_IMAGE_GC_HIGH_DEFAULT}) unless that is set too, got {l}"
            ),
        ),
        _ => {}
    }
    // Kubelet refuses to start when critical pods' share exceeds the whole shutdown grace; an
    // unset shutdownGracePeriod is kubelet's 0.
    if let Some(critical) = &kubelet.shutdown_grace_period_critical_pods {
        let total = kubelet.shutdown_grace_period.as_ref();
        if total.is_none_or(|t| critical > t) {
            p.add(
                &path.field("shutdownGracePeriodCriticalPods"),
                format!(
                    "{} may not exceed shutdownGracePeriod ({})",
                    critical.as_str(),
                    total.map_or("unset, so 0", |t| t.as_str())
                ),
            );
        }
    }
}

/// Unknown fields reported per object; past it one more entry says how many were left out,
/// so a hostile object with a million stray keys gets a short message.
pub const UNKNOWN_FIELDS_SHOWN: usize = 20;

/// The kinds whose CRD schema [`unknown_fields`] walks.
pub const SCHEMA_KINDS: &[&str] = &[
    "NodePool",
    "NodeClaim",
    "EC2NodeClass",
    "NodeOverlay",
    "CapacityBuffer",
];

/// Each kind's `openAPIV3Schema`, from the same types the committed CRDs are generated from.
fn schemas() -> &'static BTreeMap<String, Value> {
    static SCHEMAS: std::sync::OnceLock<BTreeMap<String, Value>> = std::sync::OnceLock::new();
    SCHEMAS.get_or_init(|| {
        crate::crds::all()
            .into_iter()
            .chain([crate::crds::capacity_buffer()])
            .filter_map(|crd| {
                let version = crd.spec.versions.iter().find(|v| v.storage)?;
                let schema = version.schema.as_ref()?.open_api_v3_schema.as_ref()?;
                Some((
                    crd.spec.names.kind.clone(),
                    serde_json::to_value(schema).ok()?,
                ))
            })
            .collect()
    })
}

/// Fields of `object` (a whole `kind` object as JSON) that its CRD's schema does not declare,
/// each at its path: `spec.template2: unknown field`. The apiserver drops such fields (or,
/// with kubectl's strict field validation, refuses them), and serde ignores them, so a
/// misspelt `requirments` would otherwise vanish without a word. `metadata` is checked
/// against Kubernetes' ObjectMeta (`metadata.lables`); `x-kubernetes-preserve-unknown-fields`
/// is respected. A kind not in [`SCHEMA_KINDS`] has only its metadata checked.
pub fn unknown_fields(kind: &str, object: &Value) -> Vec<FieldError> {
    let mut copy = object.clone();
    let mut found = Unknown::default();
    if let Some(schema) = schemas().get(kind) {
        walk_unknown(schema, &mut copy, &Path(String::new()), &mut found);
    } else if let Some(meta) = copy.get_mut("metadata") {
        object_meta(meta, &mut found);
    }
    found.into_errors()
}

/// The fields of `object`'s `metadata` that Kubernetes' ObjectMeta does not have, every one
/// with its path and value: for a reader that copies metadata field by field (`migrate`) and
/// must say what it did not carry.
pub fn unknown_metadata_fields(object: &Value) -> Vec<(String, Value)> {
    let Some(meta) = object.get("metadata") else {
        return Vec::new();
    };
    let mut meta = meta.clone();
    let mut found = Unknown {
        strip: true,
        ..Unknown::default()
    };
    object_meta(&mut meta, &mut found);
    found.removed.sort_by_key(|(at, _)| *at);
    found
        .errors
        .into_iter()
        .map(|e| e.path)
        .zip(found.removed.into_iter().map(|(_, v)| v))
        .collect()
}

/// Every field of Kubernetes' ObjectMeta (k8s.io/apimachinery `metav1.ObjectMeta`), named in
/// the message for a misspelt one.
pub const OBJECT_META_FIELDS: &[&str] = &[
    "annotations",
    "creationTimestamp",
    "deletionGracePeriodSeconds",
    "deletionTimestamp",
    "finalizers",
    "generateName",
    "generation",
    "labels",
    "managedFields",
    "name",
    "namespace",
    "ownerReferences",
    "resourceVersion",
    "selfLink",
    "uid",
];

/// Checks `metadata` against ObjectMeta by reading it as k8s-openapi's type and writing it
/// back: a key the reading dropped is one Kubernetes does not have (`metadata.lables`), down
/// to `ownerReferences[0].contoller`. A metadata that does not read at all is left to the
/// typed reading of the whole object, which reports it at its path.
fn object_meta(meta: &mut Value, found: &mut Unknown) {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    let Ok(typed) = serde_json::from_value::<ObjectMeta>(meta.clone()) else {
        return;
    };
    let Ok(kept) = serde_json::to_value(&typed) else {
        return;
    };
    walk_dropped(meta, &kept, &Path::new("metadata"), found);
}

/// Fields of `read` (an object as given) that are not in `kept` (the same object read as its
/// typed form and written back), each at its path: the fields the typed reading silently
/// dropped. For Kubernetes' own kinds, whose k8s-openapi types ignore unknown keys and carry
/// no schema at run time. A `null` is not a field (it reads as absent). At most
/// [`UNKNOWN_FIELDS_SHOWN`] are listed.
pub fn dropped_fields(read: &Value, kept: &Value) -> Vec<FieldError> {
    let mut found = Unknown::default();
    let mut copy = read.clone();
    walk_dropped(&mut copy, kept, &Path(String::new()), &mut found);
    found.into_errors()
}

fn walk_dropped(read: &mut Value, kept: &Value, path: &Path, found: &mut Unknown) {
    match (read, kept) {
        (Value::Object(map), Value::Object(kept_map)) => {
            let mut unknown = Vec::new();
            for (key, item) in map.iter_mut() {
                if item.is_null() {
                    continue;
                }
                match kept_map.get(key) {
                    Some(sub) => walk_dropped(item, sub, &child(path, key), found),
                    None => {
                        let at = child(path, key);
                        if at.0.starts_with("metadata.") && !at.0[9..].contains(['.', '[']) {
                            found.add_listed(at.0, OBJECT_META_FIELDS);
                        } else {
                            found.add(at.0, None);
                        }
                        if found.strip {
                            unknown.push((key.clone(), found.errors.len() - 1));
                        }
                    }
                }
            }
            for (key, at) in unknown {
                let gone = map.remove(&key).unwrap_or_default();
                found.removed.push((at, gone));
            }
        }
        (Value::Array(items), Value::Array(kept_items)) if items.len() == kept_items.len() => {
            for (i, (item, sub)) in items.iter_mut().zip(kept_items).enumerate() {
                walk_dropped(item, sub, &path.index(i), found);
            }
        }
        _ => {}
    }
}

/// [`unknown_fields`] as a result naming the object: `NodePool "default" is invalid:
/// spec.template2: unknown field ...`.
pub fn check_unknown_fields(kind: &'static str, object: &Value) -> Result<(), ValidationError> {
    let name = object
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str);
    into_result(kind, name, unknown_fields(kind, object))
}

/// Takes out of `object` every field [`unknown_fields`] reports and returns all their paths
/// with the values taken out:
/// for objects read from a live cluster, where another autoscaler's version of a kind (a
/// Karpenter v1beta1 NodeClaim's `spec.kubelet`) carries fields Adze's lacks, and the reader
/// notes what it left out instead of refusing the whole snapshot.
pub fn strip_unknown_fields(kind: &str, object: &mut Value) -> Vec<(String, Value)> {
    let mut found = Unknown {
        strip: true,
        ..Unknown::default()
    };
    if let Some(schema) = schemas().get(kind) {
        walk_unknown(schema, object, &Path(String::new()), &mut found);
    }
    found
        .errors
        .into_iter()
        .map(|e| e.path)
        .zip({
            // Taken out as each object's walk ends, deeper ones first: back in error order.
            found.removed.sort_by_key(|(at, _)| *at);
            found.removed.into_iter().map(|(_, v)| v)
        })
        .collect()
}

#[derive(Default)]
struct Unknown {
    errors: Vec<FieldError>,
    /// Found past [`UNKNOWN_FIELDS_SHOWN`], not listed.
    more: usize,
    /// Take the fields out and keep every path, not the first few.
    strip: bool,
    /// What was taken out, with the index of its entry in `errors`.
    removed: Vec<(usize, Value)>,
}

impl Unknown {
    fn add(&mut self, path: String, known: Option<&serde_json::Map<String, Value>>) {
        if !self.strip && self.errors.len() >= UNKNOWN_FIELDS_SHOWN {
            self.more += 1;
            return;
        }
        let names: Vec<&str> = known
            .map(|k| k.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let message = if names.is_empty() {
            "unknown field".to_string()
        } else {
            format!("unknown field (known here: {})", names.join(", "))
        };
        self.errors.push(FieldError { path, message });
    }

    fn add_listed(&mut self, path: String, known: &[&str]) {
        if !self.strip && self.errors.len() >= UNKNOWN_FIELDS_SHOWN {
            self.more += 1;
            return;
        }
        self.errors.push(FieldError {
            path,
            message: format!("unknown field (known here: {})", known.join(", ")),
        });
    }

    fn into_errors(mut self) -> Vec<FieldError> {
        if self.more > 0 {
            self.errors.push(FieldError {
                path: "...".to_string(),
                message: format!("{} more unknown field(s) not listed", self.more),
            });
        }
        self.errors
    }
}

/// A child path (no leading dot at the root), the name cut as messages cut input.
fn child(path: &Path, name: &str) -> Path {
    let name = cut(name);
    if path.0.is_empty() {
        Path(name)
    } else {
        path.field(&name)
    }
}

/// Walks `value` against `schema` as the apiserver's pruning does, recording (and when
/// stripping, taking out) every field the schema does not declare.
fn walk_unknown(schema: &Value, value: &mut Value, path: &Path, found: &mut Unknown) {
    if schema
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return;
    }
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties");
            let is_object = schema.get("type").and_then(Value::as_str) == Some("object");
            let mut unknown = Vec::new();
            for (key, item) in map.iter_mut() {
                // The root's apiVersion and kind are every object's, checked by their own
                // rules; metadata is Kubernetes' ObjectMeta, which the CRD schema leaves open.
                if path.0.is_empty() && matches!(key.as_str(), "apiVersion" | "kind") {
                    continue;
                }
                if path.0.is_empty() && key == "metadata" {
                    object_meta(item, found);
                    continue;
                }
                if let Some(sub) = properties.and_then(|p| p.get(key)) {
                    walk_unknown(sub, item, &child(path, key), found);
                } else if let Some(sub) = additional.filter(|a| a.is_object()) {
                    walk_unknown(sub, item, &path.key(&cut(key)), found);
                } else if additional.and_then(Value::as_bool) != Some(true)
                    && (properties.is_some() || is_object)
                {
                    found.add(child(path, key).0, properties);
                    unknown.push((key.clone(), found.errors.len() - 1));
                }
            }
            if found.strip {
                for (key, at) in unknown {
                    let gone = map.remove(&key).unwrap_or_default();
                    found.removed.push((at, gone));
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    walk_unknown(sub, item, &path.index(i), found);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn preserve_unknown_fields_and_open_maps_are_respected() {
        let schema = json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "open": {"type": "object", "additionalProperties": true},
                        "closed": {"type": "object"},
                    },
                },
            },
        });
        let mut value = json!({"spec": {
            "free": {"anything": {"deep": 1}},
            "open": {"any": 2},
            "closed": {"no": 3},
            "other": 4,
        }});
        let mut found = Unknown::default();
        walk_unknown(&schema, &mut value, &Path(String::new()), &mut found);
        let paths: Vec<String> = found.errors.into_iter().map(|e| e.path).collect();
        assert_eq!(paths, ["spec.closed.no", "spec.other"]);
    }
}
