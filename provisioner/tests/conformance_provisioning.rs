//! Karpenter's provisioning suite (`pkg/controllers/provisioning/suite_test.go`) and its
//! instance-selection tests (`pkg/controllers/provisioning/scheduling/instance_selection_test.go`),
//! restated as Adze scenarios. The tables are docs/conformance/provisioning_suite.md and
//! docs/conformance/instance_selection.md.
//!
//! Karpenter's fake cloud provider is restated as `InstanceCatalog` documents built below. One
//! difference is deliberate and shapes some sizes: a catalog type carries Adze's kubelet overhead
//! (kube-reserved and the eviction threshold, about 410Mi of memory on a 5-pod type), where
//! Karpenter's fake types reserve 100m and 10Mi. Where a case depends on a type fitting exactly,
//! the sizes are restated so the same type is the only right answer.

#[path = "support/conformance.rs"]
mod conformance;
use conformance::*;

use adze_provisioner::simulate::{self, Scenario};
use adze_scheduling::InstanceType;

// ---------------------------------------------------------------------------------------------
// Scenario builders
// ---------------------------------------------------------------------------------------------

const GIB: f64 = 1_073_741_824.0;

/// Karpenter's fake pricing: 0.1 per core plus 0.1 per 10^9 bytes of memory (plus 1 with a GPU).
fn fake_price(cpu: f64, gib: f64, gpus: i64) -> f64 {
    let gpu = if gpus > 0 { 1.0 } else { 0.0 };
    0.1 * cpu + 0.1 * gib * GIB / 1e9 + gpu
}

/// One instance type of a catalog.
#[derive(Clone)]
struct Ty {
    name: String,
    cpu: f64,
    gib: f64,
    pods: i64,
    arch: String,
    os: String,
    gpus: i64,
    labels: Vec<(String, String)>,
    /// (zone, capacity type, price); empty means the fake provider's default five.
    offerings: Vec<(String, String, f64)>,
}

fn ty(name: &str, cpu: f64, gib: f64) -> Ty {
    Ty {
        name: name.to_string(),
        cpu,
        gib,
        pods: 5,
        arch: "amd64".to_string(),
        os: "linux".to_string(),
        gpus: 0,
        labels: Vec::new(),
        offerings: Vec::new(),
    }
}

impl Ty {
    fn arch(mut self, arch: &str) -> Ty {
        self.arch = arch.to_string();
        self
    }
    fn os(mut self, os: &str) -> Ty {
        self.os = os.to_string();
        self
    }
    fn pods(mut self, pods: i64) -> Ty {
        self.pods = pods;
        self
    }
    fn gpus(mut self, gpus: i64) -> Ty {
        self.gpus = gpus;
        self
    }
    fn label(mut self, key: &str, value: &str) -> Ty {
        self.labels.push((key.to_string(), value.to_string()));
        self
    }
    fn offer(mut self, zone: &str, capacity_type: &str, price: f64) -> Ty {
        self.offerings
            .push((zone.to_string(), capacity_type.to_string(), price));
        self
    }
    /// A single spot offering in one zone, as the minValues cases use.
    fn spot_only(self, price: f64) -> Ty {
        self.offer("test-zone-1-spot", "spot", price)
    }

    fn yaml(&self) -> String {
        let price = fake_price(self.cpu, self.gib, self.gpus);
        let offerings = if self.offerings.is_empty() {
            // The fake provider's default: spot in zones 1 and 2, on-demand in zones 1 to 3.
            [
                ("test-zone-1", "spot"),
                ("test-zone-2", "spot"),
                ("test-zone-1", "on-demand"),
                ("test-zone-2", "on-demand"),
                ("test-zone-3", "on-demand"),
            ]
            .iter()
            .map(|(z, c)| (z.to_string(), c.to_string(), price))
            .collect()
        } else {
            self.offerings.clone()
        };
        let mut s = format!(
            "  - name: {}\n    cpu: {}m\n    memory: {}Mi\n    pods: {}\n    arch: {}\n    gpus: {}\n    labels:\n      kubernetes.io/os: {}\n",
            self.name,
            (self.cpu * 1000.0).round() as i64,
            (self.gib * 1024.0).round() as i64,
            self.pods,
            self.arch,
            self.gpus,
            self.os
        );
        for (k, v) in &self.labels {
            s.push_str(&format!("      {k}: \"{v}\"\n"));
        }
        s.push_str("    offerings:\n");
        for (z, c, p) in offerings {
            s.push_str(&format!(
                "      - {{zone: {z}, capacityType: {c}, price: {p}}}\n"
            ));
        }
        s
    }
}

fn catalog(types: &[Ty]) -> String {
    let mut s = String::from(
        "---\napiVersion: adze.sh/v1alpha1\nkind: InstanceCatalog\nmetadata: {name: fake}\ninstanceTypes:\n",
    );
    for t in types {
        s.push_str(&t.yaml());
    }
    s
}

/// The fake provider's default types. `fake.com/vendor-a` is restated as `nvidia.com/gpu` (the
/// only extended resource a catalog can give); the vendor-b type has no counterpart. The arm
/// type runs Linux here: a catalog type has one `kubernetes.io/os` label, not a set.
fn fake_types() -> Vec<Ty> {
    vec![
        ty("default-instance-type", 4.0, 4.0),
        ty("small-instance-type", 2.0, 2.0),
        ty("gpu-vendor-instance-type", 4.0, 4.0).gpus(2),
        ty("arm-instance-type", 16.0, 128.0).arch("arm64"),
        ty("single-pod-instance-type", 4.0, 4.0).pods(1),
    ]
}

fn fake_catalog() -> String {
    catalog(&fake_types())
}

/// Karpenter's `InstanceTypesAssorted`: every combination of cpu, memory, zone, capacity type,
/// OS and architecture as its own type with one offering, kept when `keep` says so.
fn assorted(keep: impl Fn(&Ty) -> bool) -> String {
    let mut types = Vec::new();
    for cpu in [1, 2, 4, 8, 16, 32, 64] {
        for mem in [1, 2, 4, 8, 16, 32, 64, 128] {
            for zone in ["test-zone-1", "test-zone-2", "test-zone-3"] {
                for ct in ["spot", "on-demand"] {
                    for os in ["linux", "windows"] {
                        for arch in ["amd64", "arm64"] {
                            let name = format!("{cpu}-cpu-{mem}-mem-{arch}-{os}-{zone}-{ct}");
                            let price = fake_price(f64::from(cpu), f64::from(mem), 0);
                            let t = ty(&name, f64::from(cpu), f64::from(mem))
                                .arch(arch)
                                .os(os)
                                .offer(zone, ct, price);
                            if keep(&t) {
                                types.push(t);
                            }
                        }
                    }
                }
            }
        }
    }
    catalog(&types)
}

/// The cheapest price in the assorted catalog (its 1-cpu, 1Gi types).
fn assorted_min_price() -> f64 {
    fake_price(1.0, 1.0, 0)
}

fn zone_of(t: &Ty) -> &str {
    &t.offerings[0].0
}

/// A NodePool. `template` lines sit under `spec.template.spec` (indent 6; `    metadata:` at
/// indent 4 also works), `spec` lines under `spec` (indent 2).
fn nodepool(name: &str, template: &str, spec: &str) -> String {
    format!(
        "---\napiVersion: adze.sh/v1\nkind: NodePool\nmetadata: {{name: {name}}}\nspec:\n  template:\n    spec:\n      nodeClassRef: {{group: aws.adze.sh, kind: EC2NodeClass, name: default}}\n{template}{spec}"
    )
}

/// A pending pod in `default`. `requests` is a flow mapping body (`cpu: "1", memory: 1Gi`),
/// `extra` more entries of the pod spec's flow mapping, each starting with `, `.
fn pod(name: &str, requests: &str, extra: &str) -> String {
    labelled_pod(name, "", requests, extra)
}

/// As [`pod`], with `labels` (a flow mapping body) on the pod.
fn labelled_pod(name: &str, labels: &str, requests: &str, extra: &str) -> String {
    format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, labels: {{{labels}}}}}\nspec: {{containers: [{{name: c, image: app, resources: {{requests: {{{requests}}}}}}}]{extra}}}\n"
    )
}

/// `, affinity: ...` requiring one node selector term of `exprs` (a flow sequence body).
fn required(exprs: &str) -> String {
    format!(
        ", affinity: {{nodeAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: {{nodeSelectorTerms: [{{matchExpressions: [{exprs}]}}]}}}}}}"
    )
}

/// A DaemonSet in `default` whose pod spec is the flow mapping body `spec`.
fn daemonset(name: &str, spec: &str) -> String {
    format!(
        "---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: {name}}}\nspec:\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec: {{{spec}}}\n"
    )
}

fn key(pod: &str) -> String {
    format!("default/{pod}")
}

/// The instance type `pod`'s new claim would launch (the cheapest that fits).
fn type_of(p: &Planned, pod: &str) -> String {
    let k = key(pod);
    match p.claim_of(&k) {
        Some(c) => c.instance_type.clone(),
        None => panic!(
            "{k} is not on a new claim: placed {:?}, unschedulable {:?}",
            p.placed(&k),
            p.unschedulable(&k)
        ),
    }
}

/// Every instance type the claim of `pod` may launch.
fn options<'a>(p: &'a Planned, pod: &str) -> Vec<&'a InstanceType> {
    let claim = p.claim_of(&key(pod)).expect("pod on a new claim");
    claim
        .instance_type_options
        .iter()
        .map(|n| {
            p.scenario
                .instance_types
                .iter()
                .find(|t| &t.name == n)
                .unwrap_or_else(|| panic!("option {n} not in the catalog"))
                .as_ref()
        })
        .collect()
}

/// Asserts every option of `pod`'s claim carries `label=value`.
fn expect_options_labelled(p: &Planned, pod: &str, label: &str, value: &str) {
    for t in options(p, pod) {
        assert_eq!(t.label(label), Some(value), "{} {label}", t.name);
    }
}

/// Asserts every option of `pod`'s claim has an available offering of `capacity_type` in `zone`,
/// and that the claim is planned there.
fn expect_options_offered(p: &Planned, pod: &str, capacity_type: &str, zone: &str) {
    for t in options(p, pod) {
        assert!(
            t.offerings
                .iter()
                .any(|o| o.available && o.zone == zone && o.capacity_type == capacity_type),
            "{} has no {capacity_type} offering in {zone}",
            t.name
        );
    }
    let claim = p.claim_of(&key(pod)).unwrap();
    assert_eq!(claim.zone, zone);
    assert_eq!(claim.capacity_type, capacity_type);
}

fn expect_cheapest(p: &Planned, pod: &str) {
    let claim = p.claim_of(&key(pod)).expect("pod on a new claim");
    assert!(
        (claim.price_per_hour - assorted_min_price()).abs() < 1e-9,
        "{} at {} is not the cheapest ({})",
        claim.instance_type,
        claim.price_per_hour,
        assorted_min_price()
    );
}

/// Plans `yaml` keeping at most `max` instance types per claim.
fn plan_truncated(yaml: &str, max: usize) -> Planned {
    let scenario = Scenario::parse(yaml).unwrap_or_else(|e| panic!("scenario: {e}"));
    let plan = simulate::run(&scenario, max).plan;
    Planned { scenario, plan }
}

const MIB_BYTES: i64 = 1 << 20;

// ---------------------------------------------------------------------------------------------
// Instance Type Selection (instance_selection_test.go)
// ---------------------------------------------------------------------------------------------

/// The selection suite's NodePool: spot and on-demand, arm64 and amd64.
fn selection_pool() -> String {
    nodepool(
        "default",
        "      requirements:\n        - {key: adze.sh/capacity-type, operator: In, values: [spot, on-demand]}\n        - {key: kubernetes.io/arch, operator: In, values: [arm64, amd64]}\n",
        "",
    )
}

/// A NodePool of the selection suite with its requirements replaced by `reqs` (flow items).
fn selection_pool_with(reqs: &[&str]) -> String {
    let mut t = String::from("      requirements:\n");
    for r in reqs {
        t.push_str(&format!("        - {r}\n"));
    }
    nodepool("default", &t, "")
}

fn selection(pool: &str, pod_extra: &str) -> Planned {
    plan(&format!(
        "{}{pool}{}",
        assorted(|_| true),
        pod("p", "", pod_extra)
    ))
}

/// Instance Type Selection > should schedule on one of the cheapest instances
#[test]
fn selection_cheapest() {
    let p = selection(&selection_pool(), "");
    expect_cheapest(&p, "p");
}

/// Instance Type Selection > should schedule on one of the cheapest instances (pod arch = amd64)
#[test]
fn selection_cheapest_pod_arch_amd64() {
    let p = selection(
        &selection_pool(),
        &required("{key: kubernetes.io/arch, operator: In, values: [amd64]}"),
    );
    expect_cheapest(&p, "p");
    expect_options_labelled(&p, "p", "kubernetes.io/arch", "amd64");
}

/// Instance Type Selection > should schedule on one of the cheapest instances (pod arch = arm64)
#[test]
fn selection_cheapest_pod_arch_arm64() {
    let p = selection(
        &selection_pool(),
        &required("{key: kubernetes.io/arch, operator: In, values: [arm64]}"),
    );
    expect_cheapest(&p, "p");
    expect_options_labelled(&p, "p", "kubernetes.io/arch", "arm64");
}

/// Instance Type Selection > should schedule on one of the cheapest instances (prov arch = amd64)
#[test]
fn selection_cheapest_pool_arch_amd64() {
    let p = selection(
        &selection_pool_with(&["{key: kubernetes.io/arch, operator: In, values: [amd64]}"]),
        "",
    );
    expect_cheapest(&p, "p");
    expect_options_labelled(&p, "p", "kubernetes.io/arch", "amd64");
}

/// Instance Type Selection > should schedule on one of the cheapest instances (prov arch = arm64)
#[test]
fn selection_cheapest_pool_arch_arm64() {
    let p = selection(
        &selection_pool_with(&["{key: kubernetes.io/arch, operator: In, values: [arm64]}"]),
        "",
    );
    expect_cheapest(&p, "p");
    expect_options_labelled(&p, "p", "kubernetes.io/arch", "arm64");
}

/// Instance Type Selection > should schedule on one of the cheapest instances (prov os = windows)
#[test]
fn selection_cheapest_pool_os_windows() {
    let p = selection(
        &selection_pool_with(&["{key: kubernetes.io/os, operator: In, values: [windows]}"]),
        "",
    );
    expect_cheapest(&p, "p");
    expect_options_labelled(&p, "p", "kubernetes.io/os", "windows");
}

/// Instance Type Selection > should schedule on one of the cheapest instances (pod os = windows)
#[test]
fn selection_cheapest_pod_os_windows() {
    let p = selection(
        &selection_pool(),
        &required("{key: kubernetes.io/os, operator: In, values: [windows]}"),
    );
    expect_cheapest(&p, "p");
    expect_options_labelled(&p, "p", "kubernetes.io/os", "windows");
}

/// Instance Type Selection > should schedule on one of the cheapest instances (pod os = linux)
#[test]
fn selection_cheapest_pod_os_linux() {
    let p = selection(
        &selection_pool(),
        &required("{key: kubernetes.io/os, operator: In, values: [linux]}"),
    );
    expect_cheapest(&p, "p");
    expect_options_labelled(&p, "p", "kubernetes.io/os", "linux");
}

/// Instance Type Selection > should schedule on one of the cheapest instances (prov zone = test-zone-2)
#[test]
fn selection_cheapest_pool_zone_2() {
    let p = selection(
        &selection_pool_with(&[
            "{key: topology.kubernetes.io/zone, operator: In, values: [test-zone-2]}",
        ]),
        "",
    );
    expect_cheapest(&p, "p");
    for t in options(&p, "p") {
        assert!(
            t.offerings.iter().all(|o| o.zone == "test-zone-2"),
            "{}",
            t.name
        );
    }
    assert_eq!(p.claim_of(&key("p")).unwrap().zone, "test-zone-2");
}

/// Instance Type Selection > should schedule on one of the cheapest instances (pod zone = test-zone-2)
#[test]
fn selection_cheapest_pod_zone_2() {
    let p = selection(
        &selection_pool(),
        &required("{key: topology.kubernetes.io/zone, operator: In, values: [test-zone-2]}"),
    );
    expect_cheapest(&p, "p");
    for t in options(&p, "p") {
        assert!(
            t.offerings.iter().all(|o| o.zone == "test-zone-2"),
            "{}",
            t.name
        );
    }
    assert_eq!(p.claim_of(&key("p")).unwrap().zone, "test-zone-2");
}

/// Instance Type Selection > should schedule on one of the cheapest instances (prov ct = spot)
#[test]
fn selection_cheapest_pool_spot() {
    let p = selection(
        &selection_pool_with(&["{key: adze.sh/capacity-type, operator: In, values: [spot]}"]),
        "",
    );
    expect_cheapest(&p, "p");
    for t in options(&p, "p") {
        assert!(
            t.offerings.iter().all(|o| o.capacity_type == "spot"),
            "{}",
            t.name
        );
    }
    assert_eq!(p.claim_of(&key("p")).unwrap().capacity_type, "spot");
}

/// Instance Type Selection > should schedule on one of the cheapest instances (pod ct = spot)
#[test]
fn selection_cheapest_pod_spot() {
    let p = selection(
        &selection_pool(),
        &required("{key: adze.sh/capacity-type, operator: In, values: [spot]}"),
    );
    expect_cheapest(&p, "p");
    for t in options(&p, "p") {
        assert!(
            t.offerings.iter().all(|o| o.capacity_type == "spot"),
            "{}",
            t.name
        );
    }
    assert_eq!(p.claim_of(&key("p")).unwrap().capacity_type, "spot");
}

/// Instance Type Selection > should schedule on one of the cheapest instances (prov ct = ondemand, prov zone = test-zone-1)
#[test]
fn selection_cheapest_pool_on_demand_zone_1() {
    let p = selection(
        &selection_pool_with(&[
            "{key: adze.sh/capacity-type, operator: In, values: [on-demand]}",
            "{key: topology.kubernetes.io/zone, operator: In, values: [test-zone-1]}",
        ]),
        "",
    );
    expect_cheapest(&p, "p");
    expect_options_offered(&p, "p", "on-demand", "test-zone-1");
}

/// Instance Type Selection > should schedule on one of the cheapest instances (pod ct = spot, pod zone = test-zone-1)
#[test]
fn selection_cheapest_pod_spot_zone_1() {
    let p = selection(
        &selection_pool(),
        &required(
            "{key: adze.sh/capacity-type, operator: In, values: [spot]}, {key: topology.kubernetes.io/zone, operator: In, values: [test-zone-1]}",
        ),
    );
    expect_cheapest(&p, "p");
    expect_options_offered(&p, "p", "spot", "test-zone-1");
}

/// Instance Type Selection > should schedule on one of the cheapest instances (prov ct = spot, pod zone = test-zone-2)
#[test]
fn selection_cheapest_pool_spot_pod_zone_2() {
    let p = selection(
        &selection_pool_with(&["{key: adze.sh/capacity-type, operator: In, values: [spot]}"]),
        &required("{key: topology.kubernetes.io/zone, operator: In, values: [test-zone-2]}"),
    );
    expect_cheapest(&p, "p");
    expect_options_offered(&p, "p", "spot", "test-zone-2");
}

/// Instance Type Selection > should schedule on one of the cheapest instances (prov ct = ondemand/test-zone-1/arm64/windows)
#[test]
fn selection_cheapest_pool_on_demand_zone_1_arm64_windows() {
    let p = selection(
        &selection_pool_with(&[
            "{key: kubernetes.io/arch, operator: In, values: [arm64]}",
            "{key: kubernetes.io/os, operator: In, values: [windows]}",
            "{key: adze.sh/capacity-type, operator: In, values: [on-demand]}",
            "{key: topology.kubernetes.io/zone, operator: In, values: [test-zone-1]}",
        ]),
        "",
    );
    expect_cheapest(&p, "p");
    expect_options_offered(&p, "p", "on-demand", "test-zone-1");
    expect_options_labelled(&p, "p", "kubernetes.io/os", "windows");
    expect_options_labelled(&p, "p", "kubernetes.io/arch", "arm64");
}

/// Instance Type Selection > should schedule on one of the cheapest instances (prov = spot/test-zone-2, pod = amd64/linux)
#[test]
fn selection_cheapest_pool_amd64_linux_pod_spot_zone_2() {
    // Karpenter's case puts arch and OS on the pool and capacity type and zone on the pod,
    // whatever its title says.
    let p = selection(
        &selection_pool_with(&[
            "{key: kubernetes.io/arch, operator: In, values: [amd64]}",
            "{key: kubernetes.io/os, operator: In, values: [linux]}",
        ]),
        &required(
            "{key: adze.sh/capacity-type, operator: In, values: [spot]}, {key: topology.kubernetes.io/zone, operator: In, values: [test-zone-2]}",
        ),
    );
    expect_cheapest(&p, "p");
    expect_options_offered(&p, "p", "spot", "test-zone-2");
    expect_options_labelled(&p, "p", "kubernetes.io/os", "linux");
    expect_options_labelled(&p, "p", "kubernetes.io/arch", "amd64");
}

/// Instance Type Selection > should schedule on one of the cheapest instances (pod ct = spot/test-zone-2/amd64/linux)
#[test]
fn selection_cheapest_pod_spot_zone_2_amd64_linux() {
    let p = selection(
        &selection_pool(),
        &required(
            "{key: kubernetes.io/arch, operator: In, values: [amd64]}, {key: kubernetes.io/os, operator: In, values: [linux]}, {key: adze.sh/capacity-type, operator: In, values: [spot]}, {key: topology.kubernetes.io/zone, operator: In, values: [test-zone-2]}",
        ),
    );
    expect_cheapest(&p, "p");
    expect_options_offered(&p, "p", "spot", "test-zone-2");
    expect_options_labelled(&p, "p", "kubernetes.io/os", "linux");
    expect_options_labelled(&p, "p", "kubernetes.io/arch", "amd64");
}

/// Instance Type Selection > should not schedule if no instance type matches selector (pod arch = arm)
#[test]
fn selection_no_type_pod_arch_arm() {
    let p = plan(&format!(
        "{}{}{}",
        assorted(|t| t.arch == "amd64"),
        selection_pool(),
        pod(
            "p",
            "",
            &required("{key: kubernetes.io/arch, operator: In, values: [arm64]}")
        )
    ));
    p.expect_unschedulable(&key("p"));
    assert!(p.plan.new_claims.is_empty());
}

/// Instance Type Selection > should not schedule if no instance type matches selector (pod arch = arm zone=test-zone-2)
#[test]
fn selection_no_type_pod_arch_arm_zone_2() {
    let p = plan(&format!(
        "{}{}{}",
        assorted(|t| zone_of(t) != "test-zone-2" || t.arch == "amd64"),
        selection_pool(),
        pod(
            "p",
            "",
            &required(
                "{key: kubernetes.io/arch, operator: In, values: [arm64]}, {key: topology.kubernetes.io/zone, operator: In, values: [test-zone-2]}"
            )
        )
    ));
    p.expect_unschedulable(&key("p"));
    assert!(p.plan.new_claims.is_empty());
}

/// Instance Type Selection > should not schedule if no instance type matches selector (prov arch = arm / pod zone=test-zone-2)
#[test]
fn selection_no_type_pool_arch_arm_pod_zone_2() {
    let p = plan(&format!(
        "{}{}{}",
        assorted(|t| zone_of(t) != "test-zone-2" || t.arch == "amd64"),
        selection_pool_with(&["{key: kubernetes.io/arch, operator: In, values: [arm64]}"]),
        pod(
            "p",
            "",
            &required("{key: topology.kubernetes.io/zone, operator: In, values: [test-zone-2]}")
        )
    ));
    p.expect_unschedulable(&key("p"));
    assert!(p.plan.new_claims.is_empty());
}

/// Instance Type Selection > should schedule on an instance with enough resources
#[test]
fn selection_enough_resources() {
    let catalog = assorted(|_| true);
    let mut wrong = Vec::new();
    for cpu in ["0.1", "1.0", "2.0", "2.5", "4.0", "8.0", "16.0"] {
        for mem in ["0.1", "1.0", "2.0", "4.0", "8.0", "16.0", "32.0"] {
            let requests = format!("cpu: \"{cpu}\", memory: {mem}Gi");
            let mut yaml = format!("{catalog}{}", selection_pool());
            for i in 0..3 {
                yaml.push_str(&pod(&format!("p{i}"), &requests, ""));
            }
            let p = plan(&yaml);
            let claims: std::collections::BTreeSet<&str> = (0..3)
                .map(|i| p.expect_placed(&key(&format!("p{i}"))))
                .collect();
            if claims.len() != 1 {
                wrong.push(format!("{cpu} cpu/{mem}Gi on {} nodes", claims.len()));
                continue;
            }
            let want_cpu = 3.0 * cpu.parse::<f64>().unwrap() * 1000.0;
            let want_mem = 3.0 * mem.parse::<f64>().unwrap() * GIB;
            for t in options(&p, "p0") {
                let a = t.allocatable();
                assert!(a.cpu as f64 >= want_cpu, "{} cpu for {cpu}", t.name);
                assert!(a.memory as f64 >= want_mem, "{} memory for {mem}Gi", t.name);
            }
        }
    }
    assert!(wrong.is_empty(), "three pods not on one node: {wrong:?}");
}

/// Instance Type Selection > should schedule on cheaper on-demand instance even when spot price ordering would place other instance types first
#[test]
fn selection_cheaper_on_demand_despite_spot_order() {
    let types = [
        ty("test-instance1", 1.0, 2.0)
            .offer("test-zone-1a", "on-demand", 1.0)
            .offer("test-zone-1a", "spot", 0.2),
        ty("test-instance2", 1.0, 2.0)
            .offer("test-zone-1a", "on-demand", 1.3)
            .offer("test-zone-1a", "spot", 0.1),
    ];
    let p = plan(&format!(
        "{}{}{}",
        catalog(&types),
        selection_pool_with(&["{key: adze.sh/capacity-type, operator: In, values: [on-demand]}"]),
        pod("p", "", "")
    ));
    assert_eq!(type_of(&p, "p"), "test-instance1");
}

// MinValues. Karpenter's smallest types here have 1 cpu and 1Gi; the pods ask 0.9 cpu and 0.9Gi,
// which a 1Gi type less Adze's ~410Mi overhead cannot hold, so those types get 2Gi instead: one
// pod still fits them, two do not.

const MIN_POD: &str = "cpu: 900m, memory: 920Mi";

fn two_min_pods(extra: &str) -> String {
    format!("{}{}", pod("p1", MIN_POD, extra), pod("p2", MIN_POD, extra))
}

/// Asserts the two pods got claims of their own, each with at least `at_least` types.
fn expect_split(p: &Planned, at_least: usize) {
    let a = p.expect_placed(&key("p1")).to_string();
    let b = p.expect_placed(&key("p2")).to_string();
    assert_ne!(a, b, "both pods on one claim");
    for pod in ["p1", "p2"] {
        let n = p.claim_of(&key(pod)).unwrap().instance_type_options.len();
        assert!(n >= at_least, "{pod}: {n} options");
    }
}

/// Instance Type Selection > MinValues > should schedule respecting the minValues from instance-type requirements
#[test]
fn min_values_instance_type() {
    let types = [
        ty("instance-type-1", 1.0, 2.0)
            .arch("arm64")
            .spot_only(0.52),
        ty("instance-type-2", 4.0, 4.0).arch("arm64").spot_only(1.0),
    ];
    let p = plan(&format!(
        "{}{}{}",
        catalog(&types),
        selection_pool_with(&[
            "{key: node.kubernetes.io/instance-type, operator: In, values: [instance-type-1, instance-type-2], minValues: 2}"
        ]),
        two_min_pods("")
    ));
    expect_split(&p, 2);
}

const NUMERIC: &str = "karpenter/numerical-value";

/// Instance Type Selection > MinValues > should schedule respecting the minValues in Gt operator
#[test]
fn min_values_gt() {
    let types = [
        ty("instance-type-1", 1.0, 2.0)
            .arch("arm64")
            .label(NUMERIC, "2")
            .spot_only(0.52),
        ty("instance-type-2", 1.0, 2.0)
            .arch("arm64")
            .label(NUMERIC, "3")
            .spot_only(1.0),
        ty("instance-type-3", 4.0, 4.0)
            .arch("arm64")
            .label(NUMERIC, "4")
            .spot_only(1.2),
    ];
    let p = plan(&format!(
        "{}{}{}",
        catalog(&types),
        selection_pool_with(&[&format!(
            "{{key: {NUMERIC}, operator: Gt, values: [\"2\"], minValues: 2}}"
        )]),
        two_min_pods("")
    ));
    expect_split(&p, 2);
    for pod in ["p1", "p2"] {
        for t in options(&p, pod) {
            assert_ne!(t.name, "instance-type-1");
        }
    }
}

/// Instance Type Selection > MinValues > scheduler should fail if the minValues in Gt operator is not satisfied
#[test]
fn min_values_gt_unsatisfied() {
    let types = [
        ty("instance-type-1", 1.0, 2.0)
            .arch("arm64")
            .label(NUMERIC, "2")
            .spot_only(0.52),
        ty("instance-type-2", 4.0, 4.0)
            .arch("arm64")
            .label(NUMERIC, "3")
            .spot_only(1.0),
    ];
    let p = plan(&format!(
        "{}{}{}",
        catalog(&types),
        selection_pool_with(&[&format!(
            "{{key: {NUMERIC}, operator: Exists, minValues: 2}}"
        )]),
        two_min_pods(&required(&format!(
            "{{key: {NUMERIC}, operator: Gt, values: [\"2\"]}}"
        )))
    ));
    p.expect_unschedulable(&key("p1"));
    p.expect_unschedulable(&key("p2"));
}

/// Instance Type Selection > MinValues > should schedule respecting the minValues in Lt operator
#[test]
fn min_values_lt() {
    let types = [
        ty("instance-type-1", 1.0, 2.0)
            .arch("arm64")
            .label(NUMERIC, "2")
            .spot_only(0.52),
        ty("instance-type-2", 2.0, 2.0)
            .arch("arm64")
            .label(NUMERIC, "3")
            .spot_only(1.0),
        ty("instance-type-3", 4.0, 4.0)
            .arch("arm64")
            .label(NUMERIC, "4")
            .spot_only(1.2),
    ];
    let p = plan(&format!(
        "{}{}{}",
        catalog(&types),
        selection_pool_with(&[&format!(
            "{{key: {NUMERIC}, operator: Lt, values: [\"4\"], minValues: 2}}"
        )]),
        two_min_pods("")
    ));
    expect_split(&p, 2);
}

/// Instance Type Selection > MinValues > scheduler should fail if the minValues in Lt operator is not satisfied
#[test]
fn min_values_lt_unsatisfied() {
    let types = [
        ty("instance-type-1", 2.0, 2.0)
            .arch("arm64")
            .label(NUMERIC, "2")
            .spot_only(0.52),
        ty("instance-type-2", 4.0, 4.0)
            .arch("arm64")
            .label(NUMERIC, "4")
            .spot_only(1.2),
    ];
    let p = plan(&format!(
        "{}{}{}",
        catalog(&types),
        selection_pool_with(&[&format!(
            "{{key: {NUMERIC}, operator: Lt, values: [\"4\"], minValues: 2}}"
        )]),
        two_min_pods("")
    ));
    p.expect_unschedulable(&key("p1"));
    p.expect_unschedulable(&key("p2"));
}

/// Instance Type Selection > MinValues > should schedule considering the max of the minValues of In and NotIn operators in the instance-type requirements
#[test]
fn min_values_max_of_in_and_not_in() {
    let types = [
        ty("instance-type-1", 1.0, 2.0)
            .arch("arm64")
            .spot_only(0.52),
        ty("instance-type-2", 2.0, 2.0).arch("arm64").spot_only(1.0),
        ty("instance-type-3", 4.0, 4.0).arch("arm64").spot_only(1.2),
    ];
    let p = plan(&format!(
        "{}{}{}",
        catalog(&types),
        selection_pool_with(&[
            "{key: node.kubernetes.io/instance-type, operator: In, values: [instance-type-1, instance-type-2, instance-type-3], minValues: 1}",
            "{key: node.kubernetes.io/instance-type, operator: NotIn, values: [instance-type-3], minValues: 2}",
        ]),
        two_min_pods("")
    ));
    expect_split(&p, 2);
}

/// Instance Type Selection > MinValues > should schedule considering the max of the minValues of Gt and Lt operators.
#[test]
fn min_values_max_of_gt_and_lt() {
    // Karpenter builds its fourth type from the third's options (same name); here it is named
    // instance-type-4, as a catalog refuses duplicate names.
    let types = [
        ty("instance-type-1", 1.0, 2.0)
            .arch("arm64")
            .label(NUMERIC, "2")
            .spot_only(0.52),
        ty("instance-type-2", 1.0, 2.0)
            .arch("arm64")
            .label(NUMERIC, "3")
            .spot_only(1.0),
        ty("instance-type-3", 4.0, 4.0)
            .arch("arm64")
            .label(NUMERIC, "4")
            .spot_only(1.2),
        ty("instance-type-4", 4.0, 4.0)
            .arch("arm64")
            .label(NUMERIC, "5")
            .spot_only(1.2),
    ];
    let p = plan(&format!(
        "{}{}{}",
        catalog(&types),
        selection_pool_with(&[
            &format!("{{key: {NUMERIC}, operator: Gt, values: [\"2\"], minValues: 1}}"),
            &format!("{{key: {NUMERIC}, operator: Lt, values: [\"5\"], minValues: 2}}"),
        ]),
        two_min_pods("")
    ));
    expect_split(&p, 2);
}

/// Instance Type Selection > MinValues > schedule should fail if minimum number of InstanceTypes is not met as per the minValues in the requirement
#[test]
fn min_values_more_than_types() {
    // Ten types, as Karpenter keeps the first ten of its assorted list.
    let types: Vec<Ty> = (1..=10)
        .map(|i| ty(&format!("type-{i}"), f64::from(i), 4.0))
        .collect();
    let p = plan(&format!(
        "{}{}{}",
        catalog(&types),
        selection_pool_with(&[
            "{key: node.kubernetes.io/instance-type, operator: Exists, minValues: 11}"
        ]),
        pod("p", "", "")
    ));
    p.expect_unschedulable(&key("p"));
}

/// Instance Type Selection > MinValues > schedule should fail if minimum number of InstanceTypes is not met as per the minValues in the requirement after truncation
#[test]
fn min_values_after_truncation() {
    // Adze never truncates a claim's types below what minValues needs (simulate::run keeps
    // more than the maximum for minValues), so with a maximum of one type both pods are still
    // placed, each on a claim keeping both types.
    let types = [
        ty("instance-type-1", 1.0, 2.0)
            .arch("arm64")
            .spot_only(0.52),
        ty("instance-type-2", 4.0, 4.0).arch("arm64").spot_only(1.0),
    ];
    let p = plan_truncated(
        &format!(
            "{}{}{}",
            catalog(&types),
            selection_pool_with(&[
                "{key: node.kubernetes.io/instance-type, operator: In, values: [instance-type-1, instance-type-2], minValues: 2}"
            ]),
            two_min_pods("")
        ),
        1,
    );
    expect_split(&p, 2);
}

/// Instance Type Selection > MinValues > should schedule and pick the max of minValues of InstanceTypes if multiple operators are used for the same requirement.
#[test]
fn min_values_max_of_exists_and_in() {
    let types = [
        ty("instance-type-1", 1.0, 2.0)
            .arch("arm64")
            .spot_only(0.52),
        ty("instance-type-2", 4.0, 4.0).arch("arm64").spot_only(1.0),
    ];
    let p = plan(&format!(
        "{}{}{}",
        catalog(&types),
        selection_pool_with(&[
            "{key: node.kubernetes.io/instance-type, operator: Exists, minValues: 1}",
            "{key: node.kubernetes.io/instance-type, operator: In, values: [instance-type-1, instance-type-2], minValues: 2}",
        ]),
        two_min_pods("")
    ));
    expect_split(&p, 2);
}

/// Instance Type Selection > MinValues > should schedule and respect multiple requirement keys with minValues
#[test]
fn min_values_several_keys() {
    let types = [
        ty("instance-type-1", 1.0, 2.0)
            .arch("arm64")
            .spot_only(0.52),
        ty("instance-type-2", 4.0, 4.0).arch("amd64").spot_only(1.0),
    ];
    let p = plan(&format!(
        "{}{}{}",
        catalog(&types),
        selection_pool_with(&[
            "{key: kubernetes.io/arch, operator: Exists, minValues: 2}",
            "{key: node.kubernetes.io/instance-type, operator: In, values: [instance-type-1, instance-type-2], minValues: 1}",
        ]),
        two_min_pods("")
    ));
    expect_split(&p, 2);
}

// ---------------------------------------------------------------------------------------------
// Provisioning (suite_test.go)
// ---------------------------------------------------------------------------------------------

fn default_pool() -> String {
    nodepool("default", "", "")
}

/// The fake catalog, `rest`, planned.
fn fake(rest: &str) -> Planned {
    plan(&format!("{}{rest}", fake_catalog()))
}

/// [`fake`] under placement policies.
fn fake_with(policies: &Policies, rest: &str) -> Planned {
    plan_with(&format!("{}{rest}", fake_catalog()), policies)
}

/// Provisioning > should provision nodes
#[test]
fn provision_nodes() {
    let p = fake(&format!("{}{}", default_pool(), pod("p", "", "")));
    p.expect_placed(&key("p"));
    assert_eq!(p.plan.new_claims.len(), 1);
}

/// Provisioning > should ignore NodePools that are deleting
#[test]
fn ignore_deleting_nodepool() {
    let pool = default_pool().replace(
        "metadata: {name: default}",
        "metadata: {name: default, deletionTimestamp: \"2024-01-01T00:00:00Z\", finalizers: [adze.sh/termination]}",
    );
    let p = fake(&format!("{pool}{}", pod("p", "", "")));
    p.expect_unschedulable(&key("p"));
    assert!(p.plan.new_claims.is_empty());
}

const SCHEDULABLE_SELECTORS: &[(&str, &str)] = &[
    ("adze.sh/nodepool", "default"),
    ("topology.kubernetes.io/zone", "test-zone-1"),
    ("node.kubernetes.io/instance-type", "default-instance-type"),
    ("kubernetes.io/arch", "arm64"),
    ("kubernetes.io/os", "linux"),
];

const UNSCHEDULABLE_SELECTORS: &[(&str, &str)] = &[
    ("adze.sh/nodepool", "unknown"),
    ("topology.kubernetes.io/zone", "unknown"),
    ("node.kubernetes.io/instance-type", "unknown"),
    ("kubernetes.io/arch", "unknown"),
    ("kubernetes.io/os", "unknown"),
    ("adze.sh/capacity-type", "unknown"),
    ("foo", "bar"),
];

/// Plans one pod per (key, value), each constrained by `constraint(key, value)`.
fn per_selector(selectors: &[(&str, &str)], constraint: impl Fn(&str, &str) -> String) -> Planned {
    let mut yaml = default_pool();
    for (i, (k, v)) in selectors.iter().enumerate() {
        yaml.push_str(&pod(&format!("p{i}"), "", &constraint(k, v)));
    }
    fake(&yaml)
}

/// Provisioning > should provision nodes for pods with supported node selectors
#[test]
fn supported_node_selectors() {
    let selector = |k: &str, v: &str| format!(", nodeSelector: {{{k}: {v}}}");
    let p = per_selector(SCHEDULABLE_SELECTORS, selector);
    for (i, (k, v)) in SCHEDULABLE_SELECTORS.iter().enumerate() {
        p.expect_placed(&key(&format!("p{i}")));
        assert_eq!(p.claim_label(&key(&format!("p{i}")), k), Some(*v));
    }
    let p = per_selector(UNSCHEDULABLE_SELECTORS, selector);
    for i in 0..UNSCHEDULABLE_SELECTORS.len() {
        p.expect_unschedulable(&key(&format!("p{i}")));
    }
}

/// Provisioning > should provision nodes for pods with supported node affinities
#[test]
fn supported_node_affinities() {
    let affinity =
        |k: &str, v: &str| required(&format!("{{key: {k}, operator: In, values: [{v}]}}"));
    let p = per_selector(SCHEDULABLE_SELECTORS, affinity);
    for (i, (k, v)) in SCHEDULABLE_SELECTORS.iter().enumerate() {
        p.expect_placed(&key(&format!("p{i}")));
        assert_eq!(p.claim_label(&key(&format!("p{i}")), k), Some(*v));
    }
    let p = per_selector(UNSCHEDULABLE_SELECTORS, affinity);
    for i in 0..UNSCHEDULABLE_SELECTORS.len() {
        p.expect_unschedulable(&key(&format!("p{i}")));
    }
}

/// Provisioning > should provision nodes for accelerators
#[test]
fn provision_accelerators() {
    // Karpenter's two fake GPU vendors are restated as one, nvidia.com/gpu (requested at its
    // limit): a catalog type has no other extended resource.
    let p = fake(&format!("{}{}", default_pool(), gpu_pod("gpu")));
    assert_eq!(type_of(&p, "gpu"), "gpu-vendor-instance-type");
}

/// A pending pod asking one `nvidia.com/gpu` through its limit only.
fn gpu_pod(name: &str) -> String {
    format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec: {{containers: [{{name: c, image: app, resources: {{limits: {{nvidia.com/gpu: \"1\"}}}}}}]}}\n"
    )
}

/// Provisioning > should provision multiple nodes when maxPods is set
#[test]
fn multiple_nodes_when_max_pods_set() {
    let pool = nodepool(
        "default",
        "      requirements:\n        - {key: node.kubernetes.io/instance-type, operator: In, values: [single-pod-instance-type]}\n",
        "",
    );
    let p = fake(&format!(
        "{pool}{}{}{}",
        pod("a", "", ""),
        pod("b", "", ""),
        pod("c", "", "")
    ));
    assert_eq!(p.plan.new_claims.len(), 3);
    for x in ["a", "b", "c"] {
        assert_eq!(type_of(&p, x), "single-pod-instance-type");
    }
}

/// Provisioning > should schedule all pods on one inflight node when node is in deleting state
#[test]
fn deleting_node_gets_no_pods() {
    let node = "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: old\n  deletionTimestamp: \"2024-01-01T00:00:00Z\"\n  finalizers: [adze.sh/termination]\n  labels: {adze.sh/nodepool: default, node.kubernetes.io/instance-type: default-instance-type, kubernetes.io/arch: amd64, kubernetes.io/os: linux, topology.kubernetes.io/zone: test-zone-1}\nstatus: {capacity: {cpu: \"4\", memory: 4Gi, pods: \"5\"}, allocatable: {cpu: \"4\", memory: 4Gi, pods: \"5\"}}\n";
    let mut yaml = format!("{}{node}", default_pool());
    for i in 0..3 {
        yaml.push_str(&pod(&format!("bound{i}"), "", ", nodeName: old"));
    }
    yaml.push_str(&pod("new1", "", ""));
    yaml.push_str(&pod("new2", "", ""));
    let p = fake(&yaml);
    let a = p.claim_of(&key("new1")).expect("new1 on a new claim");
    let b = p.claim_of(&key("new2")).expect("new2 on a new claim");
    assert_eq!(a.name, b.name);
    assert_eq!(p.plan.new_claims.len(), 1);
}

/// Three types around the sidecar cases' answer (10.9 cpu, 4.9Gi): one too small, one that
/// fits with Adze's overhead, one bigger.
fn sidecar_catalog() -> String {
    let mut types = fake_types();
    types.push(ty("cpu-10", 10.0, 4.5));
    types.push(ty("cpu-11", 11.0, 5.5));
    types.push(ty("cpu-12", 12.0, 6.5));
    catalog(&types)
}

fn sidecar_pod(init: &[(&str, &str, bool)], main: (&str, &str)) -> String {
    let inits: Vec<String> = init
        .iter()
        .enumerate()
        .map(|(i, (cpu, mem, sidecar))| {
            let restart = if *sidecar { ", restartPolicy: Always" } else { "" };
            format!(
                "{{name: i{i}, image: app{restart}, resources: {{requests: {{cpu: \"{cpu}\", memory: {mem}}}, limits: {{cpu: \"{cpu}\", memory: {mem}}}}}}}"
            )
        })
        .collect();
    format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec: {{initContainers: [{}], containers: [{{name: c, image: app, resources: {{requests: {{cpu: \"{}\", memory: {}}}, limits: {{cpu: \"{}\", memory: {}}}}}}}]}}\n",
        inits.join(", "),
        main.0,
        main.1,
        main.0,
        main.1
    )
}

/// Provisioning > should schedule based on the max resource requests of containers and initContainers with sidecar containers when initcontainer comes first
#[test]
fn sidecar_init_first() {
    let p = plan(&format!(
        "{}{}{}",
        sidecar_catalog(),
        default_pool(),
        sidecar_pod(
            &[("10", "4Gi", false), ("4.9", "2.9Gi", true)],
            ("6", "2Gi")
        )
    ));
    assert_eq!(type_of(&p, "p"), "cpu-11");
}

/// Provisioning > should schedule based on the max resource requests of containers and initContainers with sidecar containers when sidecar container comes first and init container resources are smaller than container resources
#[test]
fn sidecar_first_init_smaller() {
    let p = plan(&format!(
        "{}{}{}",
        sidecar_catalog(),
        default_pool(),
        sidecar_pod(&[("4.9", "2.9Gi", true), ("5", "1Gi", false)], ("6", "2Gi"))
    ));
    assert_eq!(type_of(&p, "p"), "cpu-11");
}

/// Provisioning > should schedule based on the max resource requests of containers and initContainers with sidecar containers when sidecar container comes first and init container resources are bigger than container resources
#[test]
fn sidecar_first_init_bigger() {
    let p = plan(&format!(
        "{}{}{}",
        sidecar_catalog(),
        default_pool(),
        sidecar_pod(&[("4.9", "2.9Gi", true), ("6", "2Gi", false)], ("5", "1Gi"))
    ));
    assert_eq!(type_of(&p, "p"), "cpu-11");
}

// Resource Limits

fn limited_pool(limits: &str) -> String {
    nodepool("default", "", &format!("  limits: {{{limits}}}\n"))
}

/// Provisioning > Resource Limits > should not schedule when limits are exceeded
#[test]
fn limits_already_exceeded() {
    // Karpenter sets the pool's status to 100 cpu in use; here a node of the pool holds them
    // (tainted, so the pod cannot simply join it).
    let node = "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: big\n  labels: {adze.sh/nodepool: default, kubernetes.io/arch: amd64, kubernetes.io/os: linux}\nspec: {taints: [{key: full, effect: NoSchedule}]}\nstatus: {capacity: {cpu: \"100\", memory: 400Gi, pods: \"100\"}, allocatable: {cpu: \"100\", memory: 400Gi, pods: \"100\"}}\n";
    let p = fake(&format!(
        "{}{node}{}",
        limited_pool("cpu: \"20\""),
        pod("p", "", "")
    ));
    p.expect_unschedulable(&key("p"));
}

/// Provisioning > Resource Limits > should schedule if limits would be met
#[test]
fn limits_met() {
    let p = fake(&format!(
        "{}{}",
        limited_pool("cpu: \"2\""),
        pod("p", "cpu: 1.75", "")
    ));
    assert_eq!(type_of(&p, "p"), "small-instance-type");
}

/// Provisioning > Resource Limits > should partially schedule if limits would be exceeded
#[test]
fn limits_partially_schedule() {
    let anti = ", affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: foo}}}]}}";
    let p = fake(&format!(
        "{}{}{}",
        limited_pool("cpu: \"3\""),
        labelled_pod("a", "app: foo", "cpu: 1.5", anti),
        labelled_pod("b", "app: foo", "cpu: 1.5", anti)
    ));
    let placed = ["a", "b"]
        .iter()
        .filter(|x| p.placed(&key(x)).is_some())
        .count();
    assert_eq!(placed, 1);
    assert_eq!(p.plan.unschedulable.len(), 1);
}

/// Provisioning > Resource Limits > should not schedule if limits would be exceeded
#[test]
fn limits_would_be_exceeded() {
    let p = fake(&format!(
        "{}{}",
        limited_pool("cpu: \"2\""),
        pod("p", "cpu: 2.1", "")
    ));
    p.expect_unschedulable(&key("p"));
}

/// Provisioning > Resource Limits > should not schedule if limits would be exceeded (GPU)
#[test]
fn limits_would_be_exceeded_gpu() {
    // A pods limit of 1 against a GPU type holding 5 pods.
    let p = fake(&format!("{}{}", limited_pool("pods: \"1\""), gpu_pod("p")));
    p.expect_unschedulable(&key("p"));
}

/// Provisioning > Resource Limits > should not schedule to a nodepool after a scheduling round if limits would be exceeded
#[test]
fn limits_after_a_round() {
    // The first round's node (2 cpu, holding the first pod) is in the scenario.
    let node = "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: first\n  labels: {adze.sh/nodepool: default, node.kubernetes.io/instance-type: small-instance-type, kubernetes.io/arch: amd64, kubernetes.io/os: linux, topology.kubernetes.io/zone: test-zone-1}\nstatus: {capacity: {cpu: \"2\", memory: 2Gi, pods: \"5\"}, allocatable: {cpu: 1900m, memory: 2038Mi, pods: \"5\"}}\n";
    let p = fake(&format!(
        "{}{node}{}{}",
        limited_pool("cpu: \"2\""),
        pod("first-pod", "cpu: 1.75", ", nodeName: first"),
        pod("p", "cpu: 1.75", "")
    ));
    p.expect_unschedulable(&key("p"));
}

// Daemonsets

const ONE_AND_ONE: &str = "cpu: \"1\", memory: 1Gi";
const TWO_AND_TWO: &str = "cpu: \"2\", memory: 2Gi";

fn ds_requests(requests: &str) -> String {
    format!("containers: [{{name: d, image: agent, resources: {{requests: {{{requests}}}}}}}]")
}

// The daemons of this section ask 2 cpu and 2Gi: with a 1-cpu, 1Gi pod they need the 4-cpu
// default type; uncounted, the pod alone fits the 2-cpu small type.

/// Provisioning > Daemonsets > should account for daemonsets
#[test]
fn daemonset_overhead() {
    let p = fake(&format!(
        "{}{}{}",
        default_pool(),
        daemonset("ds", &ds_requests(TWO_AND_TWO)),
        pod("p", ONE_AND_ONE, "")
    ));
    assert_eq!(type_of(&p, "p"), "default-instance-type");
}

/// Provisioning > Daemonsets > should account for daemonset hostports
#[test]
fn daemonset_host_port_reserved() {
    let ds = "containers: [{name: d, image: agent, ports: [{containerPort: 8080, hostPort: 8080}], resources: {requests: {cpu: \"2\", memory: 2Gi}}}]";
    let p = fake(&format!(
        "{}{}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec: {{containers: [{{name: c, image: app, ports: [{{containerPort: 8080, hostPort: 8080}}], resources: {{requests: {{{ONE_AND_ONE}}}}}}}]}}\n",
        default_pool(),
        daemonset("ds", ds),
    ));
    p.expect_unschedulable(&key("p"));
    assert!(p.plan.new_claims.is_empty());
}

/// Provisioning > Daemonsets > should account for daemonsets (with startup taint)
#[test]
fn daemonset_overhead_with_startup_taint() {
    let pool = nodepool(
        "default",
        "      startupTaints: [{key: foo.com/taint, effect: NoSchedule}]\n",
        "",
    );
    let p = fake(&format!(
        "{pool}{}{}",
        daemonset("ds", &ds_requests(TWO_AND_TWO)),
        pod("p", ONE_AND_ONE, "")
    ));
    assert_eq!(type_of(&p, "p"), "default-instance-type");
}

/// Provisioning > Daemonsets > should not schedule if daemonset overhead is too large
#[test]
fn daemonset_overhead_too_large() {
    let p = fake(&format!(
        "{}{}{}",
        default_pool(),
        daemonset("ds", &ds_requests("cpu: \"10000\", memory: 10000Gi")),
        pod("p", "", "")
    ));
    p.expect_unschedulable(&key("p"));
}

/// A pending pod of DaemonSet `ds` (as the DaemonSet controller creates it, pinned to a node
/// by `metadata.name` affinity), asking `requests`.
fn live_daemon_pod(requests: &str) -> String {
    format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: ds-live\n  ownerReferences: [{{apiVersion: apps/v1, kind: DaemonSet, name: ds, uid: \"1\", controller: true}}]\nspec: {{{}, affinity: {{nodeAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: {{nodeSelectorTerms: [{{matchFields: [{{key: metadata.name, operator: In, values: [node-name]}}]}}]}}}}}}}}\n",
        ds_requests(requests)
    )
}

/// Provisioning > Daemonsets > should account for overhead using daemonset pod spec instead of daemonset spec
#[test]
fn daemonset_overhead_from_live_pod() {
    // Template 4 cpu/4Gi, live pod 2 cpu/2Gi: with the live pod's requests the 4-cpu default
    // type holds daemon and pod; with the template's only the 16-cpu arm type does.
    let p = fake(&format!(
        "{}{}{}{}",
        default_pool(),
        daemonset("ds", &ds_requests("cpu: \"4\", memory: 4Gi")),
        live_daemon_pod(TWO_AND_TWO),
        pod(
            "p",
            ONE_AND_ONE,
            ", nodeSelector: {adze.sh/nodepool: default}"
        )
    ));
    assert_eq!(type_of(&p, "p"), "default-instance-type");
}

/// Provisioning > Daemonsets > should not schedule if resource requests are not defined and limits (requests) are too large
#[test]
fn daemonset_limits_as_requests_too_large() {
    let ds = "containers: [{name: d, image: agent, resources: {requests: {cpu: \"1\"}, limits: {cpu: \"10000\", memory: 10000Gi}}}]";
    let p = fake(&format!(
        "{}{}{}",
        default_pool(),
        daemonset("ds", ds),
        pod("p", "", "")
    ));
    p.expect_unschedulable(&key("p"));
}

/// Provisioning > Daemonsets > should schedule based on the max resource requests of containers and initContainers
#[test]
fn daemonset_max_of_containers_and_init() {
    // Container: 1 cpu and 1Gi (memory from its limit); init: 3 cpu and 3Gi (memory from its
    // limit). The daemon needs 3 cpu and 3Gi: more than the small type holds.
    let ds = "containers: [{name: d, image: agent, resources: {requests: {cpu: \"1\"}, limits: {cpu: \"10000\", memory: 1Gi}}}], initContainers: [{name: i, image: agent, resources: {requests: {cpu: \"3\"}, limits: {cpu: \"10000\", memory: 3Gi}}}]";
    let p = fake(&format!(
        "{}{}{}",
        default_pool(),
        daemonset("ds", ds),
        pod("p", "", "")
    ));
    assert_eq!(type_of(&p, "p"), "default-instance-type");
}

/// Provisioning > Daemonsets > should not schedule if combined max resources are too large for any node
#[test]
fn daemonset_combined_max_too_large() {
    let ds = "containers: [{name: d, image: agent, resources: {requests: {cpu: \"1\"}, limits: {cpu: \"10000\", memory: 1Gi}}}], initContainers: [{name: i, image: agent, resources: {requests: {cpu: \"1\"}, limits: {cpu: \"10000\", memory: 10000Gi}}}]";
    let p = fake(&format!(
        "{}{}{}",
        default_pool(),
        daemonset("ds", ds),
        pod("p", "", "")
    ));
    p.expect_unschedulable(&key("p"));
}

/// Provisioning > Daemonsets > should not schedule if initContainer resources are too large
#[test]
fn daemonset_init_too_large() {
    let ds = "containers: [{name: d, image: agent}], initContainers: [{name: i, image: agent, resources: {requests: {cpu: \"10000\", memory: 10000Gi}}}]";
    let p = fake(&format!(
        "{}{}{}",
        default_pool(),
        daemonset("ds", ds),
        pod("p", "", "")
    ));
    p.expect_unschedulable(&key("p"));
}

/// Provisioning > Daemonsets > should be able to schedule pods if resource requests and limits are not defined
#[test]
fn daemonset_without_requests() {
    let p = fake(&format!(
        "{}{}{}",
        default_pool(),
        daemonset("ds", "containers: [{name: d, image: agent}]"),
        pod("p", "", "")
    ));
    p.expect_placed(&key("p"));
}

/// Provisioning > Daemonsets > should ignore daemonsets without matching tolerations
#[test]
fn daemonset_without_toleration_ignored() {
    let pool = nodepool(
        "default",
        "      taints: [{key: foo, value: bar, effect: NoSchedule}]\n",
        "",
    );
    let p = fake(&format!(
        "{pool}{}{}",
        daemonset("ds", &ds_requests(TWO_AND_TWO)),
        pod("p", ONE_AND_ONE, ", tolerations: [{operator: Exists}]")
    ));
    assert_eq!(type_of(&p, "p"), "small-instance-type");
}

/// Provisioning > Daemonsets > should ignore daemonsets with an invalid selector
#[test]
fn daemonset_with_unmatched_selector_ignored() {
    let p = fake(&format!(
        "{}{}{}",
        default_pool(),
        daemonset(
            "ds",
            &format!(
                "nodeSelector: {{node: invalid}}, {}",
                ds_requests(TWO_AND_TWO)
            )
        ),
        pod("p", ONE_AND_ONE, "")
    ));
    assert_eq!(type_of(&p, "p"), "small-instance-type");
}

/// Provisioning > Daemonsets > should account daemonsets with NotIn operator and unspecified key
#[test]
fn daemonset_not_in_absent_key_counted() {
    let p = fake(&format!(
        "{}{}{}",
        default_pool(),
        daemonset(
            "ds",
            &format!(
                "{}{}",
                ds_requests(TWO_AND_TWO),
                required("{key: foo, operator: NotIn, values: [bar]}")
            )
        ),
        pod(
            "p",
            ONE_AND_ONE,
            &required("{key: topology.kubernetes.io/zone, operator: In, values: [test-zone-2]}")
        )
    ));
    assert_eq!(type_of(&p, "p"), "default-instance-type");
}

/// Provisioning > Daemonsets > should remove daemonset node hostname affinity when considering daemonset schedulability
#[test]
fn daemonset_live_pod_pinned_to_a_node_still_counted() {
    // The daemon selects foo=bar (the pool's label); its live pod asks 2 cpu/2Gi (template:
    // 4 cpu/4Gi) and is pinned to another node by name. Counted with the live pod's requests
    // and the DaemonSet's own selector, the pod needs the 4-cpu default type.
    let pool = nodepool("default", "    metadata: {labels: {foo: bar}}\n", "");
    let p = fake(&format!(
        "{pool}{}{}{}",
        daemonset(
            "ds",
            &format!(
                "{}{}",
                ds_requests("cpu: \"4\", memory: 4Gi"),
                required("{key: foo, operator: In, values: [bar]}")
            )
        ),
        live_daemon_pod(TWO_AND_TWO),
        pod("p", ONE_AND_ONE, ", nodeSelector: {foo: bar}")
    ));
    assert_eq!(type_of(&p, "p"), "default-instance-type");
}

/// Provisioning > Daemonsets > should consider a daemonset schedulable with multiple node affinity terms
#[test]
fn daemonset_second_affinity_term_counted() {
    let pool = nodepool("default", "    metadata: {labels: {foo: bar}}\n", "");
    let terms = ", affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: foo, operator: In, values: [voo]}]}, {matchExpressions: [{key: foo, operator: In, values: [bar]}]}]}}}";
    let p = fake(&format!(
        "{pool}{}{}",
        daemonset("ds", &format!("{}{terms}", ds_requests(TWO_AND_TWO))),
        pod("p", ONE_AND_ONE, "")
    ));
    assert_eq!(type_of(&p, "p"), "default-instance-type");
}

/// Provisioning > Daemonsets > should consider a daemonset schedulable with an incompatible node affinity preference
#[test]
fn daemonset_unmet_preference_still_counted() {
    let pref = ", affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchExpressions: [{key: node, operator: In, values: [invalid]}]}}]}}";
    let p = fake(&format!(
        "{}{}{}",
        default_pool(),
        daemonset("ds", &format!("{}{pref}", ds_requests(TWO_AND_TWO))),
        pod("p", ONE_AND_ONE, "")
    ));
    assert_eq!(type_of(&p, "p"), "default-instance-type");
}

/// Provisioning > Daemonsets > should consider a daemonset schedulable with a PreferNoSchedule taint
#[test]
fn daemonset_prefer_no_schedule_taint_still_counted() {
    let pool = nodepool(
        "default",
        "      taints: [{key: test, effect: PreferNoSchedule}]\n",
        "",
    );
    let p = fake(&format!(
        "{pool}{}{}",
        daemonset("ds", &ds_requests(TWO_AND_TWO)),
        pod("p", ONE_AND_ONE, "")
    ));
    assert_eq!(type_of(&p, "p"), "default-instance-type");
}

/// Provisioning > Daemonsets and Node Overhead > should account for daemonset spec affinity
/// (earlier revision of the suite)
#[test]
fn daemonset_affinity_selects_other_pool_only() {
    // The daemon (4 cpu) only selects the foo=bar pool; a pod for the foo=voo pool, limited to
    // 2 cpu, still fits a 2-cpu node there.
    let voo = nodepool(
        "voo",
        "    metadata: {labels: {foo: voo}}\n",
        "  limits: {cpu: \"2\"}\n",
    );
    let bar = nodepool("bar", "    metadata: {labels: {foo: bar}}\n", "");
    let p = fake(&format!(
        "{voo}{bar}{}{}",
        daemonset(
            "ds",
            &format!(
                "{}{}",
                ds_requests("cpu: \"4\", memory: 4Gi"),
                required("{key: foo, operator: In, values: [bar]}")
            )
        ),
        pod("p", ONE_AND_ONE, ", nodeSelector: {foo: voo}")
    ));
    assert_eq!(p.claim_label(&key("p"), "adze.sh/nodepool"), Some("voo"));
    assert_eq!(type_of(&p, "p"), "small-instance-type");
}

// Labels

/// Provisioning > Labels > should label nodes
#[test]
fn label_nodes() {
    let pool = nodepool(
        "default",
        "      requirements:\n        - {key: test-key-2, operator: In, values: [test-value-2]}\n        - {key: test-key-3, operator: NotIn, values: [test-value-3]}\n        - {key: test-key-4, operator: Lt, values: [\"4\"]}\n        - {key: test-key-5, operator: Gt, values: [\"5\"]}\n        - {key: test-key-6, operator: Exists}\n        - {key: test-key-7, operator: DoesNotExist}\n    metadata: {labels: {test-key-1: test-value-1}}\n",
        "",
    );
    let p = fake(&format!("{pool}{}", pod("p", "", "")));
    let k = key("p");
    assert_eq!(p.claim_label(&k, "adze.sh/nodepool"), Some("default"));
    assert_eq!(p.claim_label(&k, "test-key-1"), Some("test-value-1"));
    assert_eq!(p.claim_label(&k, "test-key-2"), Some("test-value-2"));
    // Karpenter invents a value for a NotIn-only key; Adze leaves the label off, which NotIn
    // allows (a pod requiring the key to exist gets a value chosen for it).
    assert_ne!(p.claim_label(&k, "test-key-3"), Some("test-value-3"));
    let v4: i64 = p
        .claim_label(&k, "test-key-4")
        .expect("test-key-4 set")
        .parse()
        .unwrap();
    assert!(v4 < 4);
    let v5: i64 = p
        .claim_label(&k, "test-key-5")
        .expect("test-key-5 set")
        .parse()
        .unwrap();
    assert!(v5 > 5);
    assert!(p.claim_label(&k, "test-key-6").is_some());
    assert!(p.claim_label(&k, "test-key-7").is_none());
}

/// Provisioning > Labels > should label nodes with labels in the LabelDomainExceptions list
#[test]
fn label_domain_exceptions() {
    // Karpenter's exceptions to its restricted domains: node-restriction.kubernetes.io,
    // kops.k8s.io and node.kubernetes.io. Labels kubelet may not set itself are set on the
    // Node at registration.
    for domain in [
        "node-restriction.kubernetes.io",
        "kops.k8s.io",
        "node.kubernetes.io",
    ] {
        let label = format!("{domain}/test");
        let pool = nodepool(
            "default",
            &format!("    metadata: {{labels: {{{label}: test-value}}}}\n"),
            "",
        );
        let p = fake(&format!(
            "{pool}{}",
            pod(
                "p",
                "",
                &required(&format!(
                    "{{key: {label}, operator: In, values: [test-value]}}"
                ))
            )
        ));
        assert_eq!(
            p.claim_label(&key("p"), &label),
            Some("test-value"),
            "{domain}"
        );
    }
}

/// Provisioning > Labels > should label nodes with labels in the subdomain from LabelDomainExceptions list
#[test]
fn label_domain_exception_subdomains() {
    let pool = nodepool(
        "default",
        "    metadata: {labels: {subdomain.node-restriction.kubernetes.io/test: test-value}}\n",
        "",
    );
    let p = fake(&format!(
        "{pool}{}",
        pod(
            "p",
            "",
            &required(
                "{key: subdomain.node-restriction.kubernetes.io/test, operator: In, values: [test-value]}"
            )
        )
    ));
    assert_eq!(
        p.claim_label(&key("p"), "subdomain.node-restriction.kubernetes.io/test"),
        Some("test-value")
    );
}

// Taints

/// Provisioning > Taints > should schedule pods that tolerate taints
#[test]
fn tolerating_pods_scheduled() {
    let pool = nodepool(
        "default",
        "      taints: [{key: nvidia.com/gpu, value: \"true\", effect: NoSchedule}]\n",
        "",
    );
    let tolerations = [
        "[{key: nvidia.com/gpu, operator: Equal, value: \"true\", effect: NoSchedule}]",
        "[{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]",
        "[{key: nvidia.com/gpu, operator: Exists}]",
        "[{operator: Exists}]",
    ];
    let mut yaml = pool;
    for (i, t) in tolerations.iter().enumerate() {
        yaml.push_str(&pod(&format!("p{i}"), "", &format!(", tolerations: {t}")));
    }
    let p = fake(&yaml);
    for i in 0..tolerations.len() {
        p.expect_placed(&key(&format!("p{i}")));
    }
}

// NodeClaim Creation

fn all_fake_names() -> Vec<String> {
    let mut v: Vec<String> = fake_types().into_iter().map(|t| t.name).collect();
    v.sort();
    v
}

fn sorted_options(p: &Planned, pod: &str) -> Vec<String> {
    let mut v = p.claim_of(&key(pod)).unwrap().instance_type_options.clone();
    v.sort();
    v
}

/// Provisioning > NodeClaim Creation > should create a nodeclaim request with expected requirements
#[test]
fn nodeclaim_requirements() {
    let p = fake(&format!("{}{}", default_pool(), pod("p", "", "")));
    assert_eq!(sorted_options(&p, "p"), all_fake_names());
    let claim = p.claim_of(&key("p")).unwrap();
    assert_eq!(claim.nodepool, "default");
    assert_eq!(
        p.claim_label(&key("p"), "adze.sh/nodepool"),
        Some("default")
    );
}

/// Provisioning > NodeClaim Creation > should create a nodeclaim request with additional expected requirements
#[test]
fn nodeclaim_additional_requirements() {
    let pool = nodepool(
        "default",
        "      requirements:\n        - {key: custom-requirement-key, operator: In, values: [value]}\n        - {key: custom-requirement-key2, operator: In, values: [value]}\n",
        "",
    );
    let p = fake(&format!("{pool}{}", pod("p", "", "")));
    assert_eq!(sorted_options(&p, "p"), all_fake_names());
    let claim = p.claim_of(&key("p")).unwrap();
    for k in ["custom-requirement-key", "custom-requirement-key2"] {
        let r = claim.requirements.get(k).expect("requirement carried");
        assert_eq!(r.single_value(), Some("value"));
        assert_eq!(p.claim_label(&key("p"), k), Some("value"));
    }
}

/// Provisioning > NodeClaim Creation > should create a nodeclaim request restricting instance types on architecture
#[test]
fn nodeclaim_restricted_by_arch() {
    let pool = nodepool(
        "default",
        "      requirements:\n        - {key: kubernetes.io/arch, operator: In, values: [arm64]}\n",
        "",
    );
    let p = fake(&format!("{pool}{}", pod("p", "", "")));
    assert_eq!(
        sorted_options(&p, "p"),
        vec!["arm-instance-type".to_string()]
    );
    assert_eq!(
        p.claim_label(&key("p"), "kubernetes.io/arch"),
        Some("arm64")
    );
}

/// Provisioning > NodeClaim Creation > should create a nodeclaim request restricting instance types on operating system
#[test]
fn nodeclaim_restricted_by_os() {
    // Karpenter's arm type lists several operating systems, ios among them; a catalog type has
    // one, so the arm type runs ios here.
    let mut types = fake_types();
    types[3] = types[3].clone().os("ios");
    let pool = nodepool(
        "default",
        "      requirements:\n        - {key: kubernetes.io/os, operator: In, values: [ios]}\n",
        "",
    );
    let p = plan(&format!("{}{pool}{}", catalog(&types), pod("p", "", "")));
    assert_eq!(
        sorted_options(&p, "p"),
        vec!["arm-instance-type".to_string()]
    );
    assert_eq!(p.claim_label(&key("p"), "kubernetes.io/os"), Some("ios"));
}

/// Provisioning > NodeClaim Creation > should create a nodeclaim request restricting instance types based on pod resource requests
#[test]
fn nodeclaim_restricted_by_requests() {
    let p = fake(&format!(
        "{}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec: {{containers: [{{name: c, image: app, resources: {{requests: {{nvidia.com/gpu: \"1\"}}, limits: {{nvidia.com/gpu: \"1\"}}}}}}]}}\n",
        default_pool()
    ));
    assert_eq!(
        sorted_options(&p, "p"),
        vec!["gpu-vendor-instance-type".to_string()]
    );
}

/// Provisioning > NodeClaim Creation > should create a nodeclaim with resource requests
#[test]
fn nodeclaim_resource_requests() {
    let p = fake(&format!(
        "{}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec: {{containers: [{{name: c, image: app, resources: {{requests: {{cpu: \"1\", memory: 1Mi, nvidia.com/gpu: \"1\"}}, limits: {{nvidia.com/gpu: \"1\"}}}}}}]}}\n",
        default_pool()
    ));
    let r = &p.claim_of(&key("p")).unwrap().requests;
    assert_eq!(r.cpu, 1000);
    assert_eq!(r.memory, MIB_BYTES);
    assert_eq!(r.get("nvidia.com/gpu"), 1);
    assert_eq!(r.pods, 1);
}

/// Provisioning > NodeClaim Creation > should create a nodeclaim with resource requests with daemon overhead
#[test]
fn nodeclaim_resource_requests_with_daemon() {
    let p = fake(&format!(
        "{}{}{}",
        default_pool(),
        daemonset("ds", &ds_requests("cpu: \"1\", memory: 1Mi")),
        pod("p", "cpu: \"1\", memory: 1Mi", "")
    ));
    let r = &p.claim_of(&key("p")).unwrap().requests;
    assert_eq!(r.cpu, 2000);
    assert_eq!(r.memory, 2 * MIB_BYTES);
    assert_eq!(r.pods, 2);
}

// Volume Topology Requirements

/// A StorageClass binding at first consumer (a claim of it is created where its pod lands),
/// allowed in `zones` (none: anywhere), of `provisioner`.
fn storage_class(name: &str, provisioner: &str, zones: &[&str]) -> String {
    let topologies = if zones.is_empty() {
        String::new()
    } else {
        format!(
            "allowedTopologies: [{{matchLabelExpressions: [{{key: topology.kubernetes.io/zone, values: [{}]}}]}}]\n",
            zones.join(", ")
        )
    };
    format!(
        "---\napiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {{name: {name}}}\nprovisioner: {provisioner}\nvolumeBindingMode: WaitForFirstConsumer\n{topologies}"
    )
}

/// The suite's class: zones test-zone-2 and -3.
fn zonal_class() -> String {
    storage_class("zonal", "test-provisioner", &["test-zone-2", "test-zone-3"])
}

/// A claim in `default`: of class `class` (`None`: no `storageClassName`; `Some("")`: the
/// empty class), bound to `volume` if given.
fn claim(name: &str, class: Option<&str>, volume: Option<&str>) -> String {
    let mut spec =
        String::from("accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}");
    if let Some(c) = class {
        spec.push_str(&format!(", storageClassName: \"{c}\""));
    }
    if let Some(v) = volume {
        spec.push_str(&format!(", volumeName: {v}"));
    }
    format!(
        "---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: {name}, namespace: default}}\nspec: {{{spec}}}\n"
    )
}

/// A PersistentVolume of `source` (a flow mapping entry, e.g. `csi: {driver: d, volumeHandle:
/// h}`), with node affinity `affinity` (flow sequence body of match expressions) if not empty.
fn volume(name: &str, source: &str, affinity: &str) -> String {
    let affinity = if affinity.is_empty() {
        String::new()
    } else {
        format!(
            ", nodeAffinity: {{required: {{nodeSelectorTerms: [{{matchExpressions: [{affinity}]}}]}}}}"
        )
    };
    format!(
        "---\napiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: {name}}}\nspec: {{capacity: {{storage: 100Gi}}, accessModes: [ReadWriteOnce], {source}{affinity}}}\n"
    )
}

/// A CSI volume (Karpenter's test volume: driver `test.driver`) in `zones`.
fn csi_volume(name: &str, zones: &[&str]) -> String {
    let affinity = if zones.is_empty() {
        String::new()
    } else {
        format!(
            "{{key: topology.kubernetes.io/zone, operator: In, values: [{}]}}",
            zones.join(", ")
        )
    };
    volume(
        name,
        "csi: {driver: test.driver, volumeHandle: test-handle}",
        &affinity,
    )
}

/// `, volumes: [...]` naming claims.
fn claim_volumes(claims: &[&str]) -> String {
    let v: Vec<String> = claims
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{{name: v{i}, persistentVolumeClaim: {{claimName: {c}}}}}"))
        .collect();
    format!(", volumes: [{}]", v.join(", "))
}

/// `, volumes: [...]` with one ephemeral volume `data` of class `class` (its claim is
/// `<pod>-data`).
fn ephemeral_volume(class: &str) -> String {
    format!(
        ", volumes: [{{name: data, ephemeral: {{volumeClaimTemplate: {{spec: {{accessModes: [ReadWriteOnce], storageClassName: {class}, resources: {{requests: {{storage: 1Gi}}}}}}}}}}}}]"
    )
}

fn zone_in(zones: &str) -> String {
    required(&format!(
        "{{key: topology.kubernetes.io/zone, operator: In, values: [{zones}]}}"
    ))
}

/// Provisioning > Volume Topology Requirements > should not schedule if invalid pvc
#[test]
fn volume_invalid_pvc_not_scheduled() {
    let p = fake(&format!(
        "{}{}",
        default_pool(),
        pod("p", "", &claim_volumes(&["invalid"]))
    ));
    let why = p.expect_unschedulable(&key("p"));
    assert_eq!(why, "persistentvolumeclaim default/invalid not found");
    assert!(p.plan.new_claims.is_empty());
}

/// Provisioning > Volume Topology Requirements > should schedule with an empty storage class if the pvc is bound
#[test]
fn volume_empty_class_bound_pvc_scheduled() {
    let p = fake(&format!(
        "{}{}{}{}",
        default_pool(),
        claim("c", Some(""), Some("test-volume")),
        csi_volume("test-volume", &[]),
        pod("p", "", &claim_volumes(&["c"]))
    ));
    p.expect_placed(&key("p"));
}

/// Provisioning > Volume Topology Requirements > should not schedule with an empty storage class if the pvc is not bound
#[test]
fn volume_empty_class_unbound_pvc_not_scheduled() {
    let p = fake(&format!(
        "{}{}{}",
        default_pool(),
        claim("c", Some(""), None),
        pod("p", "", &claim_volumes(&["c"]))
    ));
    let why = p.expect_unschedulable(&key("p"));
    assert!(
        why.contains("unbound immediate persistentvolumeclaim default/c"),
        "{why}"
    );
}

/// Provisioning > Volume Topology Requirements > should schedule with a missing storage class if the pvc is bound
#[test]
fn volume_missing_class_bound_pvc_scheduled() {
    let p = fake(&format!(
        "{}{}{}{}",
        default_pool(),
        claim("c", Some("missing-storage-class"), Some("test-volume")),
        csi_volume("test-volume", &[]),
        pod("p", "", &claim_volumes(&["c"]))
    ));
    p.expect_placed(&key("p"));
}

/// Provisioning > Volume Topology Requirements > should not schedule with a missing storage class if the pvc is not bound
#[test]
fn volume_missing_class_unbound_pvc_not_scheduled() {
    let p = fake(&format!(
        "{}{}{}",
        default_pool(),
        claim("c", Some("missing-storage-class"), None),
        pod("p", "", &claim_volumes(&["c"]))
    ));
    assert_eq!(
        p.expect_unschedulable(&key("p")),
        "storageclass missing-storage-class of persistentvolumeclaim default/c not found"
    );
}

/// The valid pod of the three "invalid pvc is encountered" cases is placed beside the
/// invalid one, which is left out.
fn expect_valid_pod_placed(objects: &str) {
    let p = fake(&format!(
        "{}{objects}{}{}",
        default_pool(),
        pod("invalid", "", &claim_volumes(&["c"])),
        pod("valid", "", "")
    ));
    p.expect_unschedulable(&key("invalid"));
    p.expect_placed(&key("valid"));
}

/// Provisioning > Volume Topology Requirements > should schedule valid pods when a pod with an invalid pvc is encountered (pvc)
#[test]
fn volume_invalid_pvc_does_not_block_valid_pods() {
    expect_valid_pod_placed("");
}

/// Provisioning > Volume Topology Requirements > should schedule valid pods when a pod with an invalid pvc is encountered (storage class)
#[test]
fn volume_invalid_class_does_not_block_valid_pods() {
    expect_valid_pod_placed(&claim("c", Some("invalid-storage-class"), None));
}

/// Provisioning > Volume Topology Requirements > should schedule valid pods when a pod with an invalid pvc is encountered (volume name)
#[test]
fn volume_invalid_volume_name_does_not_block_valid_pods() {
    expect_valid_pod_placed(&claim("c", None, Some("invalid-volume-name")));
}

/// Provisioning > Volume Topology Requirements > should schedule to storage class zones if volume does not exist
#[test]
fn volume_storage_class_zones() {
    let p = fake(&format!(
        "{}{}{}{}",
        default_pool(),
        zonal_class(),
        claim("c", Some("zonal"), None),
        pod(
            "p",
            "",
            &format!(
                "{}{}",
                claim_volumes(&["c"]),
                zone_in("test-zone-1, test-zone-3")
            )
        )
    ));
    assert_eq!(
        p.claim_label(&key("p"), "topology.kubernetes.io/zone"),
        Some("test-zone-3")
    );
}

/// Provisioning > Volume Topology Requirements > should schedule to storage class zones if volume does not exist (ephemeral volume)
#[test]
fn volume_storage_class_zones_ephemeral() {
    let p = fake(&format!(
        "{}{}{}{}",
        default_pool(),
        zonal_class(),
        claim("p-data", Some("zonal"), None),
        pod(
            "p",
            "",
            &format!(
                "{}{}",
                ephemeral_volume("zonal"),
                zone_in("test-zone-1, test-zone-3")
            )
        )
    ));
    assert_eq!(
        p.claim_label(&key("p"), "topology.kubernetes.io/zone"),
        Some("test-zone-3")
    );
}

/// Provisioning > Volume Topology Requirements > should not schedule if storage class zones are incompatible
#[test]
fn volume_storage_class_zones_incompatible() {
    let p = fake(&format!(
        "{}{}{}{}",
        default_pool(),
        zonal_class(),
        claim("c", Some("zonal"), None),
        pod(
            "p",
            "",
            &format!("{}{}", claim_volumes(&["c"]), zone_in("test-zone-1"))
        )
    ));
    let why = p.expect_unschedulable(&key("p"));
    assert!(
        why.contains("needs a node with topology.kubernetes.io/zone In [test-zone-2, test-zone-3]"),
        "{why}"
    );
}

/// Provisioning > Volume Topology Requirements > should not schedule if storage class zones are incompatible (ephemeral volume)
#[test]
fn volume_storage_class_zones_incompatible_ephemeral() {
    let p = fake(&format!(
        "{}{}{}{}",
        default_pool(),
        zonal_class(),
        claim("p-data", Some("zonal"), None),
        pod(
            "p",
            "",
            &format!("{}{}", ephemeral_volume("zonal"), zone_in("test-zone-1"))
        )
    ));
    p.expect_unschedulable(&key("p"));
    assert!(p.plan.new_claims.is_empty());
}

/// Provisioning > Volume Topology Requirements > should schedule to volume zones if volume already bound
#[test]
fn volume_bound_volume_zones() {
    let p = fake(&format!(
        "{}{}{}{}{}",
        default_pool(),
        zonal_class(),
        csi_volume("pv", &["test-zone-3"]),
        claim("c", Some("zonal"), Some("pv")),
        pod("p", "", &claim_volumes(&["c"]))
    ));
    assert_eq!(
        p.claim_label(&key("p"), "topology.kubernetes.io/zone"),
        Some("test-zone-3")
    );
}

/// Provisioning > Volume Topology Requirements > should schedule to volume zones if volume already bound (ephemeral volume)
#[test]
fn volume_bound_volume_zones_ephemeral() {
    let p = fake(&format!(
        "{}{}{}{}{}",
        default_pool(),
        zonal_class(),
        csi_volume("pv", &["test-zone-3"]),
        claim("p-data", Some("zonal"), Some("pv")),
        pod("p", "", &ephemeral_volume("zonal"))
    ));
    assert_eq!(
        p.claim_label(&key("p"), "topology.kubernetes.io/zone"),
        Some("test-zone-3")
    );
}

/// A volume on one host (`source`: `local` or `hostPath`) with hostname affinity to a node
/// that does not exist, claimed by pod `p` directly or as its ephemeral volume.
fn host_volume_case(source: &str, ephemeral: bool) -> Planned {
    let class = storage_class("local-path", "kubernetes.io/no-provisioner", &[]);
    let pv = volume(
        "pv",
        source,
        "{key: kubernetes.io/hostname, operator: In, values: [node-that-is-gone]}",
    );
    let (claim_name, volumes) = if ephemeral {
        ("p-data", ephemeral_volume("local-path"))
    } else {
        ("c", claim_volumes(&["c"]))
    };
    fake(&format!(
        "{}{class}{pv}{}{}",
        default_pool(),
        claim(claim_name, Some("local-path"), Some("pv")),
        pod("p", "", &volumes)
    ))
}

/// Provisioning > Volume Topology Requirements > should ignore hostname affinity scheduling when using local path volumes > when using local volumes
#[test]
fn volume_local_hostname_affinity_ignored() {
    host_volume_case("local: {path: /mnt/disks/ssd1}", false).expect_placed(&key("p"));
}

/// Provisioning > Volume Topology Requirements > should ignore hostname affinity scheduling when using local path volumes > when using hostpath volumes
#[test]
fn volume_hostpath_hostname_affinity_ignored() {
    host_volume_case("hostPath: {path: /tmp/data}", false).expect_placed(&key("p"));
}

/// Provisioning > Volume Topology Requirements > should ignore hostname affinity scheduling when using local path volumes (ephemeral volume) > when using local volumes
#[test]
fn volume_local_hostname_affinity_ignored_ephemeral() {
    host_volume_case("local: {path: /mnt/disks/ssd1}", true).expect_placed(&key("p"));
}

/// Provisioning > Volume Topology Requirements > should ignore hostname affinity scheduling when using local path volumes (ephemeral volume) > when using hostpath volumes
#[test]
fn volume_hostpath_hostname_affinity_ignored_ephemeral() {
    host_volume_case("hostPath: {path: /tmp/data}", true).expect_placed(&key("p"));
}

/// Provisioning > Volume Topology Requirements > should not ignore hostname affinity when using non-local path volumes
#[test]
fn volume_csi_hostname_affinity_kept() {
    let p = fake(&format!(
        "{}{}{}{}{}",
        default_pool(),
        zonal_class(),
        volume(
            "pv",
            "csi: {driver: test.driver, volumeHandle: test-handle}",
            "{key: kubernetes.io/hostname, operator: In, values: [node-that-is-gone]}"
        ),
        claim("c", Some("zonal"), Some("pv")),
        pod("p", "", &claim_volumes(&["c"]))
    ));
    p.expect_unschedulable(&key("p"));
    assert!(p.plan.new_claims.is_empty());
}

/// Provisioning > Volume Topology Requirements > should not schedule if volume zones are incompatible
#[test]
fn volume_zones_incompatible() {
    let p = fake(&format!(
        "{}{}{}{}{}",
        default_pool(),
        zonal_class(),
        csi_volume("pv", &["test-zone-3"]),
        claim("c", Some("zonal"), Some("pv")),
        pod(
            "p",
            "",
            &format!("{}{}", claim_volumes(&["c"]), zone_in("test-zone-1"))
        )
    ));
    let why = p.expect_unschedulable(&key("p"));
    assert!(
        why.contains("volume v0 (persistentvolumeclaim default/c)"),
        "{why}"
    );
}

/// Provisioning > Volume Topology Requirements > should not schedule if volume zones are incompatible (ephemeral volume)
#[test]
fn volume_zones_incompatible_ephemeral() {
    let p = fake(&format!(
        "{}{}{}{}{}",
        default_pool(),
        zonal_class(),
        csi_volume("pv", &["test-zone-3"]),
        claim("p-data", Some("zonal"), Some("pv")),
        pod(
            "p",
            "",
            &format!("{}{}", ephemeral_volume("zonal"), zone_in("test-zone-1"))
        )
    ));
    p.expect_unschedulable(&key("p"));
    assert!(p.plan.new_claims.is_empty());
}

/// Provisioning > Volume Topology Requirements > should not relax an added volume topology zone node-selector away
#[test]
fn volume_zone_not_relaxed_away() {
    let terms = ", affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: example.com/label, operator: In, values: [unsupported]}]}, {matchExpressions: [{key: adze.sh/capacity-type, operator: In, values: [on-demand]}]}]}}}";
    let p = fake(&format!(
        "{}{}{}{}{}",
        default_pool(),
        zonal_class(),
        csi_volume("pv", &["test-zone-3"]),
        claim("c", Some("zonal"), Some("pv")),
        pod("p", "", &format!("{}{terms}", claim_volumes(&["c"])))
    ));
    assert_eq!(
        p.claim_label(&key("p"), "topology.kubernetes.io/zone"),
        Some("test-zone-3")
    );
}

// Preferential Fallback

/// Provisioning > Preferential Fallback > Required > should not relax the final term
#[test]
fn fallback_required_final_term_kept() {
    let pool = nodepool(
        "default",
        "      requirements:\n        - {key: topology.kubernetes.io/zone, operator: In, values: [test-zone-1]}\n",
        "",
    );
    let p = fake(&format!(
        "{pool}{}",
        pod(
            "p",
            "",
            &required("{key: topology.kubernetes.io/zone, operator: In, values: [invalid]}")
        )
    ));
    p.expect_unschedulable(&key("p"));
}

/// Provisioning > Preferential Fallback > Required > should relax multiple terms
#[test]
fn fallback_required_terms_in_order() {
    let terms = ", affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [invalid]}]}, {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [invalid]}]}, {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [test-zone-1]}]}, {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [test-zone-2]}]}]}}}";
    let p = fake(&format!("{}{}", default_pool(), pod("p", "", terms)));
    assert_eq!(
        p.claim_label(&key("p"), "topology.kubernetes.io/zone"),
        Some("test-zone-1")
    );
}

fn preferred(terms: &[(i32, &str)]) -> String {
    let t: Vec<String> = terms
        .iter()
        .map(|(w, e)| format!("{{weight: {w}, preference: {{matchExpressions: [{e}]}}}}"))
        .collect();
    format!(
        ", affinity: {{nodeAffinity: {{preferredDuringSchedulingIgnoredDuringExecution: [{}]}}}}",
        t.join(", ")
    )
}

/// Provisioning > Preferential Fallback > Preferences > should relax all node affinity terms
#[test]
fn fallback_preferences_all_relaxed() {
    let p = fake(&format!(
        "{}{}",
        default_pool(),
        pod(
            "p",
            "",
            &preferred(&[
                (
                    1,
                    "{key: topology.kubernetes.io/zone, operator: In, values: [invalid]}"
                ),
                (
                    1,
                    "{key: node.kubernetes.io/instance-type, operator: In, values: [invalid]}"
                ),
            ])
        )
    ));
    p.expect_placed(&key("p"));
}

/// Provisioning > Preferential Fallback > Preferences > should relax to use lighter weights
#[test]
fn fallback_preferences_lighter_weight() {
    let pool = nodepool(
        "default",
        "      requirements:\n        - {key: topology.kubernetes.io/zone, operator: In, values: [test-zone-1, test-zone-2]}\n",
        "",
    );
    let p = fake(&format!(
        "{pool}{}",
        pod(
            "p",
            "",
            &preferred(&[
                (
                    100,
                    "{key: node.kubernetes.io/instance-type, operator: In, values: [test-zone-3]}"
                ),
                (
                    50,
                    "{key: topology.kubernetes.io/zone, operator: In, values: [test-zone-2]}"
                ),
                (
                    1,
                    "{key: topology.kubernetes.io/zone, operator: In, values: [test-zone-1]}"
                ),
            ])
        )
    ));
    assert_eq!(
        p.claim_label(&key("p"), "topology.kubernetes.io/zone"),
        Some("test-zone-2")
    );
}

/// Provisioning > Preferential Fallback > Preferences > should tolerate PreferNoSchedule taint only after trying to relax Affinity terms
#[test]
fn fallback_prefer_no_schedule_tolerated_last() {
    let pool = nodepool(
        "default",
        "      taints: [{key: foo, value: bar, effect: PreferNoSchedule}]\n",
        "",
    );
    let p = fake(&format!(
        "{pool}{}",
        pod(
            "p",
            "",
            &preferred(&[
                (
                    1,
                    "{key: topology.kubernetes.io/zone, operator: In, values: [invalid]}"
                ),
                (
                    1,
                    "{key: node.kubernetes.io/instance-type, operator: In, values: [invalid]}"
                ),
            ])
        )
    ));
    let claim = p.claim_of(&key("p")).expect("placed on a new claim");
    assert!(
        claim
            .taints
            .iter()
            .any(|t| t.key == "foo" && t.value == "bar"),
        "{:?}",
        claim.taints
    );
}

// Multiple NodePools

/// Provisioning > Multiple NodePools > should schedule to an explicitly selected NodePool
#[test]
fn multiple_pools_explicit_selection() {
    let p = fake(&format!(
        "{}{}{}",
        nodepool("chosen", "", ""),
        nodepool("other", "", ""),
        pod("p", "", ", nodeSelector: {adze.sh/nodepool: chosen}")
    ));
    assert_eq!(p.claim_of(&key("p")).unwrap().nodepool, "chosen");
}

/// Provisioning > Multiple NodePools > should schedule to a NodePool by labels
#[test]
fn multiple_pools_by_labels() {
    let p = fake(&format!(
        "{}{}{}",
        nodepool("labelled", "    metadata: {labels: {foo: bar}}\n", ""),
        nodepool("other", "", ""),
        pod("p", "", ", nodeSelector: {foo: bar}")
    ));
    assert_eq!(p.claim_of(&key("p")).unwrap().nodepool, "labelled");
}

/// Provisioning > Multiple NodePools > should not match NodePool with PreferNoSchedule taint when other NodePool match
#[test]
fn multiple_pools_avoid_prefer_no_schedule() {
    let p = fake(&format!(
        "{}{}{}",
        nodepool(
            "tainted",
            "      taints: [{key: foo, value: bar, effect: PreferNoSchedule}]\n",
            ""
        ),
        nodepool("plain", "", ""),
        pod("p", "", "")
    ));
    assert_eq!(p.claim_of(&key("p")).unwrap().nodepool, "plain");
}

/// Provisioning > Multiple NodePools > Weighted NodePools > should schedule to the nodepool with the highest priority always
#[test]
fn weighted_pools_highest_first() {
    let p = fake(&format!(
        "{}{}{}{}{}{}",
        nodepool("unweighted", "", ""),
        nodepool("w20", "", "  weight: 20\n"),
        nodepool("w100", "", "  weight: 100\n"),
        pod("a", "", ""),
        pod("b", "", ""),
        pod("c", "", "")
    ));
    for x in ["a", "b", "c"] {
        assert_eq!(p.claim_of(&key(x)).unwrap().nodepool, "w100");
    }
}

/// Provisioning > Multiple NodePools > Weighted NodePools > should schedule to explicitly selected nodepool even if other nodePools are higher priority
#[test]
fn weighted_pools_explicit_selection_wins() {
    let p = fake(&format!(
        "{}{}{}{}",
        nodepool("targeted", "", ""),
        nodepool("w20", "", "  weight: 20\n"),
        nodepool("w100", "", "  weight: 100\n"),
        pod("p", "", ", nodeSelector: {adze.sh/nodepool: targeted}")
    ));
    assert_eq!(p.claim_of(&key("p")).unwrap().nodepool, "targeted");
}

// Cases of the current suite revision not grouped above.

/// Provisioning > Should provision nodes for multiple pods
#[test]
fn provision_nodes_for_many_pods() {
    let mut yaml = default_pool();
    for i in 0..100 {
        yaml.push_str(&pod(&format!("p{i}"), "", ""));
    }
    let p = fake(&yaml);
    assert!(!p.plan.new_claims.is_empty());
    for i in 0..100 {
        p.expect_placed(&key(&format!("p{i}")));
    }
}

/// Provisioning > should mark pod as unschedulable if there are no valid nodepools
#[test]
fn no_valid_nodepool_leaves_pod_unschedulable() {
    let pool = default_pool().replace(
        "metadata: {name: default}",
        "metadata: {name: default, deletionTimestamp: \"2024-01-01T00:00:00Z\", finalizers: [adze.sh/termination]}",
    );
    let p = fake(&format!("{pool}{}", pod("p", "", "")));
    p.expect_unschedulable(&key("p"));
}

/// Provisioning > should schedule based on the pod level resources requests
#[test]
fn pod_level_resources() {
    // Pod-level requests (9.9 cpu, 3.9Gi) replace the containers' (5 cpu + sidecar 4 cpu,
    // init 6 cpu): the 10-cpu type, not the 11-cpu one the containers alone would need.
    let pod = "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  resources: {requests: {cpu: 9900m, memory: 3994Mi}, limits: {cpu: \"10\", memory: 4Gi}}\n  initContainers:\n    - {name: i, image: app, resources: {requests: {cpu: \"6\", memory: 2Gi}, limits: {cpu: \"6\", memory: 2Gi}}}\n    - {name: s, image: app, restartPolicy: Always, resources: {requests: {cpu: \"4\", memory: 2Gi}, limits: {cpu: \"4\", memory: 2Gi}}}\n  containers:\n    - {name: c, image: app, resources: {requests: {cpu: \"5\", memory: 1Gi}, limits: {cpu: \"5\", memory: 1Gi}}}\n";
    let p = plan(&format!("{}{}{pod}", sidecar_catalog(), default_pool()));
    assert_eq!(type_of(&p, "p"), "cpu-10");
}

/// Two pods, the second preferring `topology_key` = value-1, which no node has.
fn unmet_node_preference(topology_key: &str) -> Planned {
    let pref = format!(
        ", affinity: {{nodeAffinity: {{preferredDuringSchedulingIgnoredDuringExecution: [{{weight: 1, preference: {{matchExpressions: [{{key: {topology_key}, operator: In, values: [value-1]}}]}}}}]}}}}"
    );
    fake(&format!(
        "{}{}{}",
        default_pool(),
        labelled_pod("first", "app: foo", "cpu: \"2\"", ""),
        labelled_pod("prefers", "app: baz", "cpu: \"1\"", &pref)
    ))
}

/// Provisioning > Preferential Fallback > Preferences > should ignore node preferredDuringSchedulingIgnoredDuringExecution affinity (entry topology.kubernetes.io/zone)
#[test]
fn fallback_unmet_zone_preference_does_not_split() {
    let p = unmet_node_preference("topology.kubernetes.io/zone");
    assert_eq!(
        p.expect_placed(&key("prefers")),
        p.expect_placed(&key("first"))
    );
}

/// Provisioning > Preferential Fallback > Preferences > should ignore node preferredDuringSchedulingIgnoredDuringExecution affinity (entry kubernetes.io/hostname)
#[test]
fn fallback_unmet_hostname_preference_does_not_split() {
    let p = unmet_node_preference("kubernetes.io/hostname");
    assert_eq!(
        p.expect_placed(&key("prefers")),
        p.expect_placed(&key("first"))
    );
}

// Ignore Preferences: Karpenter's preference policy Ignore (an operator option). Adze has no such
// option yet; these plan with preferences honoured and fail until it exists (set it here then).

/// The Ignore-Preferences scenario: a 2-cpu pod in zone 1, two 3-cpu pods in zone 2, and a
/// 1-cpu pod whose only preference (`extra`) points at zone 2.
fn ignore_preferences_scenario(extra: &str) -> Planned {
    fake_with(
        &ignoring_preferences(),
        &format!(
            "{}{}{}{}{}",
            default_pool(),
            labelled_pod(
                "zone1",
                "app: foo",
                "cpu: \"2\"",
                ", nodeSelector: {topology.kubernetes.io/zone: test-zone-1}"
            ),
            labelled_pod(
                "zone2-a",
                "app: bar",
                "cpu: \"3\"",
                ", nodeSelector: {topology.kubernetes.io/zone: test-zone-2}"
            ),
            labelled_pod(
                "zone2-b",
                "app: bar",
                "cpu: \"3\"",
                ", nodeSelector: {topology.kubernetes.io/zone: test-zone-2}"
            ),
            labelled_pod("prefers", "app: baz", "cpu: \"1\"", extra)
        ),
    )
}

/// Provisioning > Preferential Fallback > Ignore Preferences > should ignore node affinity preferences
#[test]
fn ignore_preferences_node_affinity() {
    let p = ignore_preferences_scenario(
        ", affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [test-zone-2]}]}}]}}",
    );
    assert_eq!(
        p.expect_placed(&key("prefers")),
        p.expect_placed(&key("zone1"))
    );
}

/// Provisioning > Preferential Fallback > Ignore Preferences > should ignore pod affinity preferences (both entries: zone, hostname)
#[test]
fn ignore_preferences_pod_affinity() {
    for topology_key in ["topology.kubernetes.io/zone", "kubernetes.io/hostname"] {
        let p = ignore_preferences_scenario(&format!(
            ", affinity: {{podAffinity: {{preferredDuringSchedulingIgnoredDuringExecution: [{{weight: 1, podAffinityTerm: {{topologyKey: {topology_key}, labelSelector: {{matchLabels: {{app: bar}}}}}}}}]}}}}"
        ));
        assert_eq!(
            p.expect_placed(&key("prefers")),
            p.expect_placed(&key("zone1")),
            "{topology_key}"
        );
    }
}

/// Five pods of app=foo carrying `extra`, all expected on one node under preference policy
/// Ignore.
fn five_on_one_node(extra: &str) {
    let mut yaml = default_pool();
    for i in 0..5 {
        yaml.push_str(&labelled_pod(&format!("p{i}"), "app: foo", "", extra));
    }
    let p = fake_with(&ignoring_preferences(), &yaml);
    let nodes: std::collections::BTreeSet<&str> = (0..5)
        .map(|i| p.expect_placed(&key(&format!("p{i}"))))
        .collect();
    assert_eq!(nodes.len(), 1, "{extra}");
}

/// Provisioning > Preferential Fallback > Ignore Preferences > should ignore topologySpreadConstraint preferences (both entries: zone, hostname)
#[test]
fn ignore_preferences_topology_spread() {
    for topology_key in ["topology.kubernetes.io/zone", "kubernetes.io/hostname"] {
        five_on_one_node(&format!(
            ", topologySpreadConstraints: [{{maxSkew: 1, topologyKey: {topology_key}, whenUnsatisfiable: ScheduleAnyway, labelSelector: {{matchLabels: {{app: foo}}}}}}]"
        ));
    }
}

/// Provisioning > Preferential Fallback > Ignore Preferences > should ignore pod anti-affinity preferences (both entries: zone, hostname)
#[test]
fn ignore_preferences_pod_anti_affinity() {
    for topology_key in ["topology.kubernetes.io/zone", "kubernetes.io/hostname"] {
        five_on_one_node(&format!(
            ", affinity: {{podAntiAffinity: {{preferredDuringSchedulingIgnoredDuringExecution: [{{weight: 1, podAffinityTerm: {{topologyKey: {topology_key}, labelSelector: {{matchLabels: {{app: foo}}}}}}}}]}}}}"
        ));
    }
}

// MinValuesPolicy: Strict (the default) and BestEffort (`--min-values-policy`).

/// Two 4-cpu types in different zones, one spot offering each.
fn two_type_catalog() -> String {
    catalog(&[
        ty("instance-type-1", 4.0, 4.0)
            .arch("arm64")
            .offer("test-zone-1-spot", "spot", 0.52),
        ty("instance-type-2", 4.0, 4.0)
            .arch("arm64")
            .offer("test-zone-2-spot", "spot", 0.52),
    ])
}

/// One 4-cpu type offered in test-zone-1 and test-zone-2 only.
fn two_zone_catalog() -> String {
    catalog(&[ty("instance-type-1", 4.0, 4.0)
        .arch("arm64")
        .offer("test-zone-1", "spot", 0.52)
        .offer("test-zone-2", "spot", 0.54)])
}

const THREE_TYPES_MIN_3: &str = "        - {key: node.kubernetes.io/instance-type, operator: In, values: [instance-type-1, instance-type-2, instance-type-3], minValues: 3}\n";
const THREE_ZONES_MIN_3: &str = "        - {key: topology.kubernetes.io/zone, operator: In, values: [test-zone-1, test-zone-2, test-zone-3], minValues: 3}\n";

fn min_values_pool(name: &str, weight: i32, reqs: &str) -> String {
    let weight = if weight > 0 {
        format!("  weight: {weight}\n")
    } else {
        String::new()
    };
    nodepool(name, &format!("      requirements:\n{reqs}"), &weight)
}

/// Provisioning > MinValuesPolicy > with instance type requirements > with MinValuesPolicy set to Strict > should not schedule when minValues requirement is not met
#[test]
fn min_values_policy_strict_types() {
    let p = plan(&format!(
        "{}{}{}",
        two_type_catalog(),
        min_values_pool("default", 100, THREE_TYPES_MIN_3),
        pod("p", MIN_POD, "")
    ));
    p.expect_unschedulable(&key("p"));
}

/// Provisioning > MinValuesPolicy > with instance type requirements > with MinValuesPolicy set to BestEffort > should schedule even when minValues requirement is not met
#[test]
fn min_values_policy_best_effort_types() {
    let p = plan_with(
        &format!(
            "{}{}{}",
            two_type_catalog(),
            min_values_pool("default", 100, THREE_TYPES_MIN_3),
            pod("p", MIN_POD, "")
        ),
        &min_values_best_effort(),
    );
    assert_eq!(type_of(&p, "p"), "instance-type-1");
    assert_eq!(sorted_options(&p, "p").len(), 2);
}

/// Provisioning > MinValuesPolicy > with instance type requirements > with MinValuesPolicy set to BestEffort > should relax minValues before falling back to other nodepools
#[test]
fn min_values_policy_best_effort_relaxes_before_fallback() {
    let p = plan_with(
        &format!(
            "{}{}{}{}",
            two_type_catalog(),
            min_values_pool("default", 100, THREE_TYPES_MIN_3),
            min_values_pool(
                "no-min",
                10,
                "        - {key: node.kubernetes.io/instance-type, operator: In, values: [instance-type-1, instance-type-2, instance-type-3]}\n"
            ),
            pod("p", MIN_POD, "")
        ),
        &min_values_best_effort(),
    );
    let claim = p.claim_of(&key("p")).expect("placed on a new claim");
    assert_eq!(claim.nodepool, "default");
    assert_eq!(claim.instance_type, "instance-type-1");
}

/// Provisioning > MinValuesPolicy > with instance type requirements > with MinValuesPolicy set to BestEffort > should choose nodepool with higher weight when relaxing minValues
#[test]
fn min_values_policy_best_effort_prefers_weight() {
    let p = plan_with(
        &format!(
            "{}{}{}{}",
            two_type_catalog(),
            min_values_pool("default", 100, THREE_TYPES_MIN_3),
            min_values_pool("lower", 10, THREE_TYPES_MIN_3),
            pod("p", MIN_POD, "")
        ),
        &min_values_best_effort(),
    );
    let claim = p.claim_of(&key("p")).expect("placed on a new claim");
    assert_eq!(claim.nodepool, "default");
    assert_eq!(claim.instance_type, "instance-type-1");
}

/// Provisioning > MinValuesPolicy > with zone requirements > with MinValuesPolicy set to Strict > should not schedule when zone minValues requirement is not met
#[test]
fn min_values_policy_strict_zones() {
    let p = plan(&format!(
        "{}{}{}",
        two_zone_catalog(),
        min_values_pool("default", 0, THREE_ZONES_MIN_3),
        pod("p", MIN_POD, "")
    ));
    p.expect_unschedulable(&key("p"));
}

/// Provisioning > MinValuesPolicy > with zone requirements > with MinValuesPolicy set to BestEffort > should schedule even when zone minValues requirement is not met
#[test]
fn min_values_policy_best_effort_zones() {
    let p = plan_with(
        &format!(
            "{}{}{}",
            two_zone_catalog(),
            min_values_pool("default", 0, THREE_ZONES_MIN_3),
            pod("p", MIN_POD, "")
        ),
        &min_values_best_effort(),
    );
    assert_eq!(type_of(&p, "p"), "instance-type-1");
    let zone = p.claim_label(&key("p"), "topology.kubernetes.io/zone");
    assert!(
        matches!(zone, Some("test-zone-1" | "test-zone-2")),
        "{zone:?}"
    );
}

/// Provisioning > MinValuesPolicy > with both instance type and zone requirements > with MinValuesPolicy set to BestEffort > should schedule when minValues requirement is not met
#[test]
fn min_values_policy_best_effort_types_and_zones() {
    let p = plan_with(
        &format!(
            "{}{}{}",
            two_zone_catalog(),
            min_values_pool(
                "default",
                100,
                &format!("{THREE_TYPES_MIN_3}{THREE_ZONES_MIN_3}")
            ),
            pod("p", MIN_POD, "")
        ),
        &min_values_best_effort(),
    );
    assert_eq!(type_of(&p, "p"), "instance-type-1");
}
