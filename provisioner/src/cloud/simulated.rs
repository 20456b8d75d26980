//! `--cloud-provider simulated`: no cloud at all. Launching a NodeClaim creates a real `Node`
//! after a boot delay (labels from the claim, capacity from the catalog type, Ready, providerID
//! `adze-sim:///<zone>/i-<hex of the name>` (see [`provider_id_for`]), the claim's taints and
//! startup taints) and removes the
//! `node.kubernetes.io/not-ready` taint the apiserver adds. Pair it with
//! [`crate::kubelet`], which plays kubelet for these nodes.
//!
//! The Node objects are the cloud's inventory: `get` and `list` read them (plus the instances
//! still booting in this process), so a restarted provisioner sees every instance there is.
//!
//! With an instance directory ([`Simulated::with_instance_dir`], `--simulated-instance-dir`)
//! the files there are the inventory instead and no Node is created here: a real kubelet
//! started for each record registers it (see [`super::instance_record`]).
//!
//! Status checks (`instance_health`, what node repair reads as EC2's): every instance passes
//! unless its record's `statusChecks` (instance directory) or its Node's
//! [`STATUS_CHECKS_ANNOTATION`] say otherwise — how a test plays an impaired instance.
//!
//! Reboots (`reboot`, node repair's first action with `--reboot-for-repair`): accepted for an
//! instance that exists and counted ([`Simulated::reboots`]), and they mend nothing — an
//! impaired instance stays impaired and a Node's conditions stay as they were, as unkind as a
//! reboot on EC2 that does not help, so repair's replacement after the wait is what a test
//! sees. A reboot of an instance that does not exist is refused.
//!
//! Zonal shifts (`zonal_shifts`, what `--enable-zonal-shift` reads as ARC's): none, unless
//! a zonal-shifts file is given ([`Simulated::with_zonal_shifts_file`],
//! `--simulated-zonal-shifts`): a JSON list of [`SimulatedZonalShift`], read again at every
//! call, so a test starts a shift by writing the file and ends it by removing it (or by
//! letting `expiryTime` pass).

use adze_cloud::sync::MutexExt;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use adze_api::NodeClaim;
use adze_scheduling::{InstanceType, labels};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Node;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;

use super::instance_record::{InstanceRecord, SimulatedCheck, record_for};
use super::{CloudError, CloudProvider, Instance};
use crate::provisioning::snapshot::NOT_READY_TAINT;

pub const PROVIDER_PREFIX: &str = "adze-sim://";

/// On a simulated Node (no instance directory): the instance's status checks, a JSON list of
/// [`SimulatedCheck`], e.g. `[{"kind":"system","status":"failed","impairedSince":"2026-01-01T00:00:00Z"}]`.
/// Only the simulated cloud reads it.
pub const STATUS_CHECKS_ANNOTATION: &str = "adze.sh/simulated-status-checks";

/// The status checks of one simulated instance, from its record's or Node's list.
fn checks_of(
    provider_id: &str,
    list: &[SimulatedCheck],
) -> Result<Vec<adze_cloud::StatusCheck>, CloudError> {
    list.iter()
        .map(|c| c.to_check())
        .collect::<Result<_, _>>()
        .map_err(|e| CloudError::Other(format!("simulated instance {provider_id}: {e}")))
}

/// The providerID of the simulated instance named `name` in `zone`. Shaped like EC2's
/// (`aws:///<zone>/i-…`) so the SQS interruption path finds the NodeClaim by instance id with
/// the simulated cloud too; the id is the name hex-encoded, so the name can be read back.
pub fn provider_id_for(name: &str, zone: &str) -> String {
    let hex: String = name.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{PROVIDER_PREFIX}/{zone}/i-{hex}")
}

/// The Node name a simulated providerID stands for: the decoded instance id, or the rest of an
/// older `adze-sim://<name>` id (nodes made by hand, e.g. a stray node in a test).
pub fn node_name_of(provider_id: &str) -> Option<String> {
    let rest = provider_id.strip_prefix(PROVIDER_PREFIX)?;
    let Some(path) = rest.strip_prefix('/') else {
        return Some(rest.to_string()).filter(|n| !n.is_empty());
    };
    let hex = path.rsplit('/').next()?.strip_prefix("i-")?;
    if hex.len() % 2 != 0 {
        return None;
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    String::from_utf8(bytes).ok().filter(|n| !n.is_empty())
}

pub struct Simulated {
    client: Client,
    catalog: Vec<Arc<InstanceType>>,
    boot_delay: Duration,
    /// Launched here and not yet registered as a Node.
    booting: Arc<Mutex<HashMap<String, Instance>>>,
    /// Offerings whose launch fails with InsufficientCapacity (fault injection for tests).
    unavailable: Vec<OfferingPattern>,
    /// Instances are records in this directory, booted by someone else's kubelet.
    instance_dir: Option<PathBuf>,
    /// The zonal shifts on the simulated cluster, as a JSON file (absent: none).
    zonal_shifts_file: Option<PathBuf>,
    /// Reboots accepted, by providerID.
    reboots: Arc<Mutex<BTreeMap<String, u32>>>,
}

/// One zonal shift in the simulated cloud's file, in the names ARC's GetManagedResource
/// gives it: `{"awayFrom": "us-east-1a", "expiryTime": "2026-01-01T00:00:00Z"}`, optionally
/// with `appliedStatus` (`APPLIED`, the default, or `NOT_APPLIED`) and `shiftType`
/// (`ZONAL_SHIFT`, the default). `awayFrom` may be a zone name or a zone ID.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SimulatedZonalShift {
    pub away_from: String,
    pub expiry_time: String,
    #[serde(default = "applied")]
    pub applied_status: String,
    #[serde(default = "zonal_shift_kind")]
    pub shift_type: String,
}

fn applied() -> String {
    "APPLIED".into()
}

fn zonal_shift_kind() -> String {
    "ZONAL_SHIFT".into()
}

/// The shifts in the file at `path`; no file is no shift. Anything unreadable is an error
/// naming the file and the field (a test's typo should show, not read as "no shift").
pub fn read_zonal_shifts(path: &Path) -> Result<Vec<adze_cloud::ZonalShift>, CloudError> {
    let bytes = match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        r => r.map_err(|e| CloudError::Other(format!("{}: {e}", path.display())))?,
    };
    let list: Vec<SimulatedZonalShift> = serde_json::from_slice(&bytes)
        .map_err(|e| CloudError::Other(format!("{}: {e}", path.display())))?;
    list.into_iter()
        .enumerate()
        .map(|(i, s)| {
            let expires_at = s
                .expiry_time
                .parse::<k8s_openapi::jiff::Timestamp>()
                .map_err(|e| {
                    CloudError::Other(format!(
                        "{}: [{i}].expiryTime: {:?}: {e}",
                        path.display(),
                        s.expiry_time
                    ))
                })?
                .as_second();
            let applied = match s.applied_status.as_str() {
                "APPLIED" => true,
                "NOT_APPLIED" => false,
                other => {
                    return Err(CloudError::Other(format!(
                        "{}: [{i}].appliedStatus: {other:?} is not APPLIED or NOT_APPLIED",
                        path.display()
                    )));
                }
            };
            Ok(adze_cloud::ZonalShift {
                away_from: s.away_from,
                expires_at,
                applied,
                kind: s.shift_type,
            })
        })
        .collect()
}

/// `TYPE:ZONE:CAPACITYTYPE`, each part a value or `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfferingPattern {
    pub instance_type: String,
    pub zone: String,
    pub capacity_type: String,
}

impl std::str::FromStr for OfferingPattern {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.split(':').collect::<Vec<_>>()[..] {
            [t, z, c] if !t.is_empty() && !z.is_empty() && !c.is_empty() => Ok(OfferingPattern {
                instance_type: t.into(),
                zone: z.into(),
                capacity_type: c.into(),
            }),
            _ => Err(format!(
                "{s:?}: expected TYPE:ZONE:CAPACITYTYPE (each a value or *), e.g. m5.large:us-east-1a:spot"
            )),
        }
    }
}

impl OfferingPattern {
    pub fn matches(&self, i: &Instance) -> bool {
        let m = |p: &str, v: &str| p == "*" || p == v;
        m(&self.instance_type, &i.instance_type)
            && m(&self.zone, &i.zone)
            && m(&self.capacity_type, &i.capacity_type)
    }
}

/// The instance a simulated Node stands for.
pub fn instance_of_node(node: &Node) -> Option<Instance> {
    let provider_id = node.spec.as_ref()?.provider_id.clone()?;
    if !provider_id.starts_with(PROVIDER_PREFIX) {
        return None;
    }
    let l = node.metadata.labels.clone().unwrap_or_default();
    let get = |k: &str| l.get(k).cloned().unwrap_or_default();
    let quantities =
        |m: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>| {
            m.map(|m| m.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect())
                .unwrap_or_default()
        };
    let status = node.status.as_ref();
    Some(Instance {
        provider_id,
        instance_type: get(labels::INSTANCE_TYPE),
        zone: get(labels::ZONE),
        capacity_type: get(labels::CAPACITY_TYPE),
        capacity: quantities(status.and_then(|s| s.capacity.as_ref())),
        allocatable: quantities(status.and_then(|s| s.allocatable.as_ref())),
    })
}

impl Simulated {
    pub fn new(client: Client, catalog: Vec<Arc<InstanceType>>, boot_delay: Duration) -> Self {
        Simulated {
            client,
            catalog,
            boot_delay,
            booting: Arc::default(),
            unavailable: Vec::new(),
            instance_dir: None,
            zonal_shifts_file: None,
            reboots: Arc::default(),
        }
    }

    /// How many reboots of `provider_id` this cloud accepted.
    pub fn reboots(&self, provider_id: &str) -> u32 {
        self.reboots
            .lock_or_recover()
            .get(provider_id)
            .copied()
            .unwrap_or(0)
    }

    /// Report the zonal shifts listed in the file at `path` (see the module docs).
    pub fn with_zonal_shifts_file(mut self, path: PathBuf) -> Self {
        self.zonal_shifts_file = Some(path);
        self
    }

    /// Launch by writing a record to `dir` instead of creating the Node (see the module docs).
    pub fn with_instance_dir(mut self, dir: PathBuf) -> Self {
        self.instance_dir = Some(dir);
        self
    }

    /// Launches of offerings matching any pattern fail with InsufficientCapacity.
    pub fn with_unavailable(mut self, patterns: Vec<OfferingPattern>) -> Self {
        self.unavailable = patterns;
        self
    }

    /// The instance a claim gets: the type, zone and capacity type its labels name.
    pub fn instance_for(
        &self,
        claim: &NodeClaim,
    ) -> Result<(Instance, Arc<InstanceType>), CloudError> {
        let name = claim.metadata.name.clone().unwrap_or_default();
        let l = claim.metadata.labels.clone().unwrap_or_default();
        let get = |k: &str| l.get(k).cloned().unwrap_or_default();
        let type_name = get(labels::INSTANCE_TYPE);
        let it = self
            .catalog
            .iter()
            .find(|t| t.name == type_name)
            .ok_or_else(|| CloudError::Other(format!("unknown instance type {type_name:?}")))?;
        let zone = get(labels::ZONE);
        Ok((
            Instance {
                provider_id: provider_id_for(&name, &zone),
                instance_type: type_name,
                zone,
                capacity_type: get(labels::CAPACITY_TYPE),
                capacity: it.capacity.to_quantities(),
                allocatable: it.allocatable().to_quantities(),
            },
            it.clone(),
        ))
    }
}

/// The Node a simulated instance registers as.
pub fn node_object(claim: &NodeClaim, instance: &Instance) -> Node {
    let name = claim.metadata.name.clone().unwrap_or_default();
    let mut node_labels: BTreeMap<String, String> =
        claim.metadata.labels.clone().unwrap_or_default();
    node_labels.insert(labels::HOSTNAME.into(), name.clone());
    node_labels.insert(labels::NODECLAIM.into(), name.clone());
    node_labels.insert(labels::ZONE.into(), instance.zone.clone());
    node_labels.insert(labels::INSTANCE_TYPE.into(), instance.instance_type.clone());
    node_labels.insert(labels::CAPACITY_TYPE.into(), instance.capacity_type.clone());
    let taints: Vec<_> = claim
        .spec
        .taints
        .iter()
        .chain(&claim.spec.startup_taints)
        .map(|t| json!({"key": t.key, "value": t.value, "effect": t.effect.as_str()}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": node_labels},
        "spec": {"providerID": instance.provider_id, "taints": taints},
        "status": {
            "capacity": instance.capacity,
            "allocatable": instance.allocatable,
            "conditions": [{
                "type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "adze simulated kubelet is posting ready status",
                "lastHeartbeatTime": now(), "lastTransitionTime": now(),
            }],
            "nodeInfo": {
                "architecture": node_labels.get(labels::ARCH).cloned().unwrap_or_else(|| "amd64".into()),
                "operatingSystem": "linux", "kubeletVersion": "v1.20.2-adze-sim",
                "kubeProxyVersion": "", "containerRuntimeVersion": "adze-sim://0",
                "bootID": "", "kernelVersion": "", "machineID": "", "osImage": "adze simulated", "systemUUID": "",
            },
        },
    }))
    .expect("node object")
}

pub fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

async fn boot(client: Client, node: Node, delay: Duration) -> Result<(), kube::Error> {
    tokio::time::sleep(delay).await;
    let api: Api<Node> = Api::all(client);
    let name = node.metadata.name.clone().unwrap_or_default();
    let created = match api.create(&PostParams::default(), &node).await {
        Ok(n) => n,
        Err(kube::Error::Api(e)) if e.code == 409 => api.get(&name).await?,
        Err(e) => return Err(e),
    };
    // The apiserver's TaintNodesByCondition admission adds not-ready; a real kubelet would
    // post Ready and the node lifecycle controller would lift it. Here we do — retrying on a
    // conflict, since the lifecycle labels the node and the kubelet heartbeats meanwhile; a
    // node left with the taint would never initialise.
    let mut node = created;
    for attempt in 0.. {
        let taints: Vec<_> = node.spec.clone().and_then(|s| s.taints).unwrap_or_default();
        if !taints.iter().any(|t| t.key == NOT_READY_TAINT) {
            break;
        }
        let kept: Vec<_> = taints
            .into_iter()
            .filter(|t| t.key != NOT_READY_TAINT)
            .collect();
        let patch = json!({
            "metadata": {"resourceVersion": node.metadata.resource_version},
            "spec": {"taints": kept},
        });
        match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => break,
            Err(kube::Error::Api(e)) if e.code == 409 && attempt < 20 => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                node = api.get(&name).await?;
            }
            Err(e) => return Err(e),
        }
    }
    tracing::info!(node = %name, "simulated instance booted; node registered");
    Ok(())
}

fn record_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.json"))
}

/// Written to a temporary name and renamed, so a reader never sees half a record.
fn write_record(dir: &Path, record: &InstanceRecord) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{}.json.tmp", record.name));
    std::fs::write(&tmp, serde_json::to_vec_pretty(record)?)?;
    std::fs::rename(&tmp, record_path(dir, &record.name))
}

fn remove_record(dir: &Path, name: &str) -> std::io::Result<()> {
    match std::fs::remove_file(record_path(dir, name)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Every record in `dir`; a file that is not a record is an error naming it (someone wrote
/// into the cloud's inventory).
fn read_records(dir: &Path) -> std::io::Result<Vec<InstanceRecord>> {
    let entries = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        r => r?,
    };
    let mut out = Vec::new();
    for entry in entries {
        let path = entry?.path();
        let is_record = path.extension().is_some_and(|e| e == "json")
            && !path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if !is_record {
            continue;
        }
        let bytes = match std::fs::read(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            r => r?,
        };
        let record = serde_json::from_slice(&bytes).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: not an instance record: {e}", path.display()),
            )
        })?;
        out.push(record);
    }
    Ok(out)
}

impl CloudProvider for Simulated {
    fn name(&self) -> &'static str {
        "simulated"
    }

    fn create<'a>(&'a self, claim: &'a NodeClaim) -> BoxFuture<'a, Result<Instance, CloudError>> {
        Box::pin(async move {
            let (instance, it) = self.instance_for(claim)?;
            if self.unavailable.iter().any(|p| p.matches(&instance)) {
                return Err(CloudError::InsufficientCapacity {
                    instance_type: instance.instance_type,
                    zone: instance.zone,
                    capacity_type: instance.capacity_type,
                    message: "simulated: offering marked unavailable by --simulated-unavailable"
                        .into(),
                });
            }
            if let Some(dir) = &self.instance_dir {
                let record = record_for(claim, &instance, &it)
                    .map_err(|e| CloudError::Other(e.to_string()))?;
                write_record(dir, &record).map_err(|e| CloudError::Other(e.to_string()))?;
                tracing::info!(nodeclaim = %record.name, provider_id = %record.provider_id, "simulated instance launched; its kubelet is booted outside the provisioner");
                return Ok(instance);
            }
            let node = node_object(claim, &instance);
            self.booting
                .lock_or_recover()
                .insert(instance.provider_id.clone(), instance.clone());
            let (client, delay) = (self.client.clone(), self.boot_delay);
            let (booting, pid) = (self.booting.clone(), instance.provider_id.clone());
            tokio::spawn(async move {
                let name = node.metadata.name.clone().unwrap_or_default();
                match boot(client, node, delay).await {
                    // From now on the Node object is the instance.
                    Ok(()) => {
                        booting.lock_or_recover().remove(&pid);
                    }
                    Err(e) => tracing::warn!(node = %name, error = %e, "simulated boot failed"),
                }
            });
            Ok(instance)
        })
    }

    fn delete<'a>(&'a self, claim: &'a NodeClaim) -> BoxFuture<'a, Result<(), CloudError>> {
        Box::pin(async move {
            let claim_name = claim.metadata.name.clone().unwrap_or_default();
            // The providerID names the instance (a garbage-collected orphan's claim is named
            // after its instance id, not its Node); a claim not yet launched has none.
            let provider_id = claim
                .status
                .as_ref()
                .and_then(|s| s.provider_id.clone())
                .unwrap_or_else(|| {
                    let zone = claim
                        .metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(labels::ZONE).cloned())
                        .unwrap_or_default();
                    provider_id_for(&claim_name, &zone)
                });
            self.booting.lock_or_recover().remove(&provider_id);
            let name = node_name_of(&provider_id).unwrap_or(claim_name);
            if let Some(dir) = &self.instance_dir {
                // Terminating the instance stops its kubelet; the Node goes the way it does on
                // EC2 (termination deletes it once drained).
                return remove_record(dir, &name).map_err(|e| CloudError::Other(e.to_string()));
            }
            let api: Api<Node> = Api::all(self.client.clone());
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
                Err(e) => Err(CloudError::Other(e.to_string())),
            }
        })
    }

    fn get<'a>(
        &'a self,
        provider_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Instance>, CloudError>> {
        Box::pin(async move {
            if let Some(i) = self.booting.lock_or_recover().get(provider_id) {
                return Ok(Some(i.clone()));
            }
            let Some(name) = node_name_of(provider_id) else {
                return Ok(None);
            };
            if let Some(dir) = &self.instance_dir {
                return Ok(read_records(dir)
                    .map_err(|e| CloudError::Other(e.to_string()))?
                    .into_iter()
                    .find(|r| r.name == name && r.provider_id == provider_id)
                    .map(|r| r.instance()));
            }
            let api: Api<Node> = Api::all(self.client.clone());
            let node = api
                .get_opt(&name)
                .await
                .map_err(|e| CloudError::Other(e.to_string()))?;
            // A Node being deleted is a terminated instance: here the Node *is* the instance,
            // and termination releases the Node's finalizer only once the instance is gone.
            Ok(node
                .as_ref()
                .filter(|n| n.metadata.deletion_timestamp.is_none())
                .and_then(instance_of_node)
                .filter(|i| i.provider_id == provider_id))
        })
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<Instance>, CloudError>> {
        Box::pin(async move {
            if let Some(dir) = &self.instance_dir {
                let records = read_records(dir).map_err(|e| CloudError::Other(e.to_string()))?;
                return Ok(records.iter().map(InstanceRecord::instance).collect());
            }
            let api: Api<Node> = Api::all(self.client.clone());
            let nodes = api
                .list(&kube::api::ListParams::default())
                .await
                .map_err(|e| CloudError::Other(e.to_string()))?;
            let mut all: HashMap<String, Instance> = self.booting.lock_or_recover().clone();
            let live = nodes
                .items
                .iter()
                .filter(|n| n.metadata.deletion_timestamp.is_none());
            for i in live.filter_map(instance_of_node) {
                all.insert(i.provider_id.clone(), i);
            }
            Ok(all.into_values().collect())
        })
    }

    fn instance_types(&self) -> Vec<Arc<InstanceType>> {
        self.catalog.clone()
    }

    fn is_drifted<'a>(&'a self, _claim: &'a NodeClaim) -> BoxFuture<'a, Result<bool, CloudError>> {
        Box::pin(async { Ok(false) })
    }

    /// Simulated instances never drift from the cloud's side; answered without a per-claim walk.
    fn drifted_claims<'a>(
        &'a self,
        _claims: &'a [Arc<NodeClaim>],
    ) -> BoxFuture<'a, Result<std::collections::BTreeSet<String>, CloudError>> {
        Box::pin(async { Ok(Default::default()) })
    }

    /// Accepted for an instance that exists, and counted; it changes nothing about the
    /// instance (see the module docs). Refused for one that does not.
    fn reboot<'a>(&'a self, provider_id: &'a str) -> BoxFuture<'a, Result<(), CloudError>> {
        Box::pin(async move {
            if self.get(provider_id).await?.is_none() {
                return Err(CloudError::Other(format!(
                    "simulated instance {provider_id} does not exist: nothing to reboot"
                )));
            }
            *self
                .reboots
                .lock_or_recover()
                .entry(provider_id.to_string())
                .or_default() += 1;
            tracing::info!(
                provider_id,
                "simulated reboot: accepted, and it mends nothing"
            );
            Ok(())
        })
    }

    /// The shifts in the zonal-shifts file, if one was given and exists.
    fn zonal_shifts(&self) -> BoxFuture<'_, Result<Vec<adze_cloud::ZonalShift>, CloudError>> {
        Box::pin(async move {
            match &self.zonal_shifts_file {
                Some(path) => read_zonal_shifts(path),
                None => Ok(Vec::new()),
            }
        })
    }

    /// The checks a record's `statusChecks` or a Node's [`STATUS_CHECKS_ANNOTATION`] list, for
    /// the instances asked about that have any; one that cannot be read fails the call (a
    /// test's typo should show, not read as healthy).
    fn instance_health<'a>(
        &'a self,
        provider_ids: &'a [String],
    ) -> BoxFuture<'a, Result<BTreeMap<String, Vec<adze_cloud::StatusCheck>>, CloudError>> {
        Box::pin(async move {
            let wanted: std::collections::BTreeSet<&str> =
                provider_ids.iter().map(String::as_str).collect();
            let mut out = BTreeMap::new();
            if let Some(dir) = &self.instance_dir {
                let records = read_records(dir).map_err(|e| CloudError::Other(e.to_string()))?;
                for r in records {
                    if wanted.contains(r.provider_id.as_str()) && !r.status_checks.is_empty() {
                        let checks = checks_of(&r.provider_id, &r.status_checks)?;
                        out.insert(r.provider_id, checks);
                    }
                }
                return Ok(out);
            }
            let api: Api<Node> = Api::all(self.client.clone());
            let nodes = api
                .list(&kube::api::ListParams::default())
                .await
                .map_err(|e| CloudError::Other(e.to_string()))?;
            for n in &nodes.items {
                let Some(pid) = n.spec.as_ref().and_then(|s| s.provider_id.as_deref()) else {
                    continue;
                };
                let Some(text) = n.annotations().get(STATUS_CHECKS_ANNOTATION) else {
                    continue;
                };
                if !wanted.contains(pid) {
                    continue;
                }
                let list: Vec<SimulatedCheck> = serde_json::from_str(text).map_err(|e| {
                    CloudError::Other(format!(
                        "node {}: annotation {STATUS_CHECKS_ANNOTATION}: {e}",
                        n.name_any()
                    ))
                })?;
                out.insert(pid.to_string(), checks_of(pid, &list)?);
            }
            Ok(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_zonal_shifts_file_plays_arc_and_its_absence_is_no_shift() {
        let dir = std::env::temp_dir().join(format!("adze-sim-shifts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("zonal-shifts.json");
        let _ = std::fs::remove_file(&path);
        assert!(read_zonal_shifts(&path).unwrap().is_empty());
        std::fs::write(
            &path,
            r#"[{"awayFrom":"us-east-1a","expiryTime":"2026-01-01T00:10:00Z"},
                {"awayFrom":"use1-az2","expiryTime":"2026-01-01T00:10:00Z","appliedStatus":"NOT_APPLIED","shiftType":"PRACTICE_RUN"}]"#,
        )
        .unwrap();
        let shifts = read_zonal_shifts(&path).unwrap();
        assert_eq!(shifts.len(), 2);
        assert_eq!(shifts[0].away_from, "us-east-1a");
        assert_eq!(shifts[0].expires_at, 1_767_226_200);
        assert!(shifts[0].applied && !shifts[1].applied);
        assert_eq!(shifts[1].kind, "PRACTICE_RUN");
        std::fs::write(&path, r#"[{"awayFrom":"us-east-1a","expiryTime":"soon"}]"#).unwrap();
        let err = read_zonal_shifts(&path).unwrap_err().to_string();
        assert!(err.contains("[0].expiryTime"), "{err}");
        std::fs::write(&path, r#"[{"awayFrom":"us-east-1a","expiry":"x"}]"#).unwrap();
        let err = read_zonal_shifts(&path).unwrap_err().to_string();
        assert!(err.contains("expiry"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn offering_pattern_parses_and_matches_with_wildcards() {
        let p: OfferingPattern = "t3a.xlarge:*:on-demand".parse().unwrap();
        let i = |t: &str, z: &str, c: &str| Instance {
            provider_id: String::new(),
            instance_type: t.into(),
            zone: z.into(),
            capacity_type: c.into(),
            capacity: BTreeMap::new(),
            allocatable: BTreeMap::new(),
        };
        assert!(p.matches(&i("t3a.xlarge", "us-east-1b", "on-demand")));
        assert!(!p.matches(&i("t3a.xlarge", "us-east-1b", "spot")));
        assert!(!p.matches(&i("m5.xlarge", "us-east-1b", "on-demand")));
        let err = "t3a.xlarge:spot".parse::<OfferingPattern>().unwrap_err();
        assert!(err.contains("TYPE:ZONE:CAPACITYTYPE"), "{err}");
    }

    #[test]
    fn provider_id_is_ec2_shaped_and_gives_the_node_name_back() {
        let id = provider_id_for("spot-x7k2p", "us-east-1b");
        assert_eq!(id, "adze-sim:///us-east-1b/i-73706f742d78376b3270");
        assert_eq!(node_name_of(&id).as_deref(), Some("spot-x7k2p"));
        #[cfg(feature = "aws")]
        assert_eq!(
            adze_aws::interruption::instance_id_of(&id),
            Some("i-73706f742d78376b3270")
        );
    }

    #[test]
    fn older_and_foreign_provider_ids_map_sensibly() {
        assert_eq!(
            node_name_of("adze-sim://stray-node").as_deref(),
            Some("stray-node")
        );
        assert_eq!(node_name_of("aws:///us-east-1a/i-0abc"), None);
        assert_eq!(node_name_of("adze-sim:///us-east-1a/i-7"), None);
        assert_eq!(node_name_of("adze-sim:///us-east-1a/not-an-id"), None);
    }
}
