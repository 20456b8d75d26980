//! A stable-toolchain fuzzer over `simulate` scenarios and `migrate` input (no nightly, so no
//! libFuzzer): random but structured documents — NodePools, InstanceCatalogs, Nodes, Pods,
//! Deployments, DaemonSets, Karpenter v1 and v1beta1 NodePools and EC2NodeClasses — mutated
//! with extreme numbers, long strings, wrong types, deep nesting, big replica counts, many
//! preferred terms, odd operators and unicode.
//!
//! Each input runs in a child process (this binary again) under a 2 GiB address-space limit,
//! so an abort or an allocation failure is caught as a failure of that input, not of the run.
//! Properties: the child exits cleanly (no panic, no abort), spends at most
//! `ADZE_FUZZ_INPUT_SECS` of CPU, and every plan it makes holds (a pod's required node terms
//! match its node's labels, requests within allocatable, no two pods of a new node holding
//! one host port, no negative request accepted, every new node's label a valid Kubernetes
//! label).
//!
//! ```sh
//! ADZE_FUZZ_SECS=60 cargo test -p adze-provisioner --no-default-features --test fuzz_inputs
//! ADZE_FUZZ_SEED=1234 ...          # the same sequence again
//! ADZE_FUZZ_CASE=0x1f2e... ...     # one input again (printed with every failure)
//! ```
//!
//! Without `ADZE_FUZZ_SECS` it runs for 3 s on seed 1, so `cargo test --workspace` stays quick
//! and repeatable. `ADZE_FUZZ_HEAVY=1` raises replica counts from thousands to tens of
//! thousands; `ADZE_FUZZ_KEEP=DIR` writes each failing input there;
//! `ADZE_FUZZ_PRINT=1` with `ADZE_FUZZ_CASE` prints that input instead of running it.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use adze_api::patterns::{is_label_value, is_qualified_name};
use adze_provisioner::migrate;
use adze_provisioner::simulate::{self, Scenario};
use adze_scheduling::Requirements;
use serde_json::{Map, Value, json};

/// Address space a child may map: the bound the issue sets for any input.
const ADDRESS_SPACE_KIB: u64 = 2 * 1024 * 1024;
/// A child that runs this long (wall clock) is killed and counted as hung, whatever its CPU.
const HARD_WALL: Duration = Duration::from_secs(15);

// ---------------------------------------------------------------------------------------
// Randomness: a seeded generator of our own, so a seed means the same inputs on every
// machine and toolchain.
// ---------------------------------------------------------------------------------------

struct Rng {
    state: u64,
    /// How hostile this input is: 0 well-formed, 1 a little odd, 2 hostile. Well-formed
    /// inputs reach the planner; hostile ones mostly test the refusals.
    level: u64,
}

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng {
            state: seed,
            level: 0,
        }
    }
    fn next(&mut self) -> u64 {
        // splitmix64
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    /// A malformed or extreme choice, as likely as the input is hostile.
    fn odd(&mut self, percent: u64) -> bool {
        self.chance(percent * self.level / 2)
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

// ---------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------

const ARCHES: &[&str] = &["amd64", "arm64"];
const ZONES: &[&str] = &[
    "us-east-1a",
    "us-east-1b",
    "us-east-1c",
    "test-1a",
    "test-1b",
];
const CAPACITY: &[&str] = &["on-demand", "spot"];
const OPERATORS: &[&str] = &["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"];
const ODD_OPERATORS: &[&str] = &["in", "Equals", "", "Gte", "NOTIN", "exists"];
const KEYS: &[&str] = &[
    "kubernetes.io/arch",
    "kubernetes.io/os",
    "topology.kubernetes.io/zone",
    "node.kubernetes.io/instance-type",
    "adze.sh/capacity-type",
    "karpenter.sh/capacity-type",
    "aws.adze.sh/instance-category",
    "aws.adze.sh/instance-generation",
    "aws.adze.sh/instance-cpu",
    "karpenter.k8s.aws/instance-family",
    "example.com/team",
    "example.com/tier",
    "kubernetes.io/hostname",
];
const VALUES: &[&str] = &[
    "amd64",
    "arm64",
    "linux",
    "windows",
    "spot",
    "on-demand",
    "c",
    "m",
    "r",
    "t",
    "4",
    "5",
    "7",
    "16",
    "a",
    "b",
    "us-east-1a",
    "test-1a",
    "m5.large",
    "c6g.xlarge",
    "small.2x",
];
const CPU: &[&str] = &[
    "100m", "250m", "500m", "1", "2", "3500m", "4", "7", "15", "0",
];
const MEMORY: &[&str] = &["64Mi", "128Mi", "512Mi", "1Gi", "2Gi", "4Gi", "7Gi", "30Gi"];
const EFFECTS: &[&str] = &["NoSchedule", "NoExecute", "PreferNoSchedule"];

/// A string to put where a number, a name or a value goes: extreme, long, unicode, odd.
fn nasty_string(r: &mut Rng) -> String {
    match r.below(14) {
        0 => "9223372036854775807".into(),
        1 => "-9223372036854775808".into(),
        2 => "1e100000".into(),
        3 => "-1".into(),
        4 => "x".repeat(r.range(64, 20_000) as usize),
        5 => "ünïcødé-ノード-🚀".into(),
        6 => "".into(),
        7 => "18446744073709551616".into(),
        8 => "0.000000001".into(),
        9 => "NaN".into(),
        10 => "-500m".into(),
        11 => "Infinity".into(),
        12 => "a".repeat(64),
        _ => "\u{202e}\u{0000}tab\there".into(),
    }
}

fn nasty_value(r: &mut Rng) -> Value {
    match r.below(10) {
        0 => json!(i64::MAX),
        1 => json!(i64::MIN),
        2 => json!(u64::MAX),
        3 => json!(1e308),
        4 => json!(-1),
        5 => json!([1, "two", null]),
        6 => json!({"nested": {"map": [true]}}),
        7 => Value::Null,
        8 => json!(true),
        _ => json!(nasty_string(r)),
    }
}

fn quantity(r: &mut Rng, table: &[&str]) -> Value {
    if r.odd(4) {
        nasty_value(r)
    } else {
        json!(r.pick(table))
    }
}

/// A node requirement; a NodePool's (`pool`) names no hostname unless the input is odd.
fn requirement(r: &mut Rng, pool: bool) -> Value {
    let mut key = if r.odd(3) {
        nasty_string(r)
    } else {
        r.pick(KEYS).to_string()
    };
    if pool && key == "kubernetes.io/hostname" && !r.odd(50) {
        key = "example.com/team".to_string();
    }
    let op = if r.odd(4) {
        r.pick(ODD_OPERATORS).to_string()
    } else {
        r.pick(OPERATORS).to_string()
    };
    let values: Vec<Value> = match op.as_str() {
        "Exists" | "DoesNotExist" => Vec::new(),
        "Gt" | "Lt" if r.odd(40) => vec![json!(match r.below(5) {
            0 => "9223372036854775807".to_string(),
            1 => "-1".to_string(),
            2 => "9223372036854775806".to_string(),
            3 => "0".to_string(),
            _ => "-9223372036854775808".to_string(),
        })],
        "Gt" | "Lt" => vec![json!(r.range(0, 64).to_string())],
        _ => (0..r.range(1, 4)).map(|_| json!(r.pick(VALUES))).collect(),
    };
    let mut m = Map::new();
    m.insert("key".into(), json!(key));
    m.insert("operator".into(), json!(op));
    if !values.is_empty() || r.chance(10) {
        m.insert("values".into(), Value::Array(values));
    }
    if r.chance(8) {
        m.insert("minValues".into(), json!(r.range(0, 5)));
    }
    Value::Object(m)
}

fn requirements(r: &mut Rng, n: u64, pool: bool) -> Value {
    Value::Array((0..r.below(n + 1)).map(|_| requirement(r, pool)).collect())
}

fn taint(r: &mut Rng) -> Value {
    json!({"key": r.pick(&["dedicated", "gpu", "example.com/x"]), "value": r.pick(VALUES), "effect": if r.odd(5) { "Sometimes" } else { r.pick(EFFECTS) }})
}

fn toleration(r: &mut Rng) -> Value {
    if r.chance(30) {
        json!({"operator": "Exists"})
    } else {
        json!({"key": r.pick(&["dedicated", "gpu", "example.com/x"]), "operator": r.pick(&["Equal", "Exists"]), "value": r.pick(VALUES), "effect": r.pick(EFFECTS)})
    }
}

fn pod_spec(r: &mut Rng, app: &str) -> Value {
    let containers: Vec<Value> = (0..r.range(1, 3))
        .map(|i| {
            let mut c = json!({
                "name": format!("c{i}"),
                "image": "pause",
                "resources": {"requests": {"cpu": quantity(r, CPU), "memory": quantity(r, MEMORY)}},
            });
            if r.chance(20) {
                let port = if r.odd(20) {
                    *r.pick(&[0, 70000, -1])
                } else {
                    *r.pick(&[80, 8080, 9100, 65535])
                };
                let protocol = if r.odd(20) {
                    *r.pick(&["tcp", "Udp", "", "ICMP"])
                } else {
                    *r.pick(&["TCP", "UDP", "SCTP"])
                };
                c["ports"] = json!([{"containerPort": 80, "hostPort": port, "protocol": protocol}]);
            }
            if r.chance(10) {
                c["resources"]["limits"] =
                    json!({"cpu": quantity(r, CPU), "nvidia.com/gpu": r.range(0, 4)});
            }
            c
        })
        .collect();
    let mut spec = json!({"containers": containers});
    if r.chance(30) {
        let mut sel = Map::new();
        for _ in 0..r.range(1, 3) {
            sel.insert(r.pick(KEYS).to_string(), json!(r.pick(VALUES)));
        }
        spec["nodeSelector"] = Value::Object(sel);
    }
    let mut affinity = Map::new();
    if r.chance(30) {
        let terms: Vec<Value> = (0..r.range(1, 3))
            .map(|_| json!({"matchExpressions": requirements(r, 3, false)}))
            .collect();
        affinity.insert(
            "nodeAffinity".into(),
            json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}),
        );
    }
    if r.chance(20) {
        // Many preferred terms: relaxation cost grows with them.
        let n = if r.chance(20) {
            r.range(50, 400)
        } else {
            r.range(1, 6)
        };
        let prefs: Vec<Value> = (0..n)
            .map(|i| json!({"weight": (i % 100) + 1, "preference": {"matchExpressions": [requirement(r, false)]}}))
            .collect();
        let na = affinity.entry("nodeAffinity").or_insert_with(|| json!({}));
        na["preferredDuringSchedulingIgnoredDuringExecution"] = Value::Array(prefs);
    }
    if r.chance(15) {
        let key = if r.odd(10) {
            String::new()
        } else {
            r.pick(&["kubernetes.io/hostname", "topology.kubernetes.io/zone"])
                .to_string()
        };
        let kind = if r.chance(50) {
            "podAntiAffinity"
        } else {
            "podAffinity"
        };
        affinity.insert(
            kind.into(),
            json!({"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": key, "labelSelector": {"matchLabels": {"app": app}}}]}),
        );
    }
    if !affinity.is_empty() {
        spec["affinity"] = Value::Object(affinity);
    }
    if r.chance(15) {
        let key = if r.odd(20) {
            ""
        } else {
            *r.pick(&[
                "topology.kubernetes.io/zone",
                "kubernetes.io/hostname",
                "example.com/team",
            ])
        };
        let when = if r.odd(20) {
            "Maybe"
        } else {
            *r.pick(&["DoNotSchedule", "ScheduleAnyway"])
        };
        spec["topologySpreadConstraints"] = json!([{
            "maxSkew": if r.odd(10) { json!(0) } else { json!(r.range(1, 3)) },
            "topologyKey": key,
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": app}},
        }]);
    }
    if r.chance(20) {
        spec["tolerations"] = Value::Array((0..r.range(1, 3)).map(|_| toleration(r)).collect());
    }
    if r.chance(5) {
        spec["overhead"] = json!({"cpu": quantity(r, CPU)});
    }
    if r.chance(5) {
        spec["resources"] =
            json!({"requests": {"cpu": quantity(r, CPU), "memory": quantity(r, MEMORY)}});
    }
    if r.odd(5) {
        spec["priority"] = nasty_value(r);
    }
    spec
}

fn name(r: &mut Rng, prefix: &str, i: u64) -> Value {
    if r.odd(3) {
        json!(nasty_string(r))
    } else {
        json!(format!("{prefix}-{i}"))
    }
}

fn adze_nodepool(r: &mut Rng, i: u64) -> Value {
    let mut spec = json!({
        "template": {"spec": {
            "nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"},
            "requirements": requirements(r, 4, true),
        }},
    });
    if r.chance(30) {
        spec["template"]["metadata"] = json!({"labels": {"example.com/team": r.pick(VALUES)}});
    }
    if r.chance(20) {
        spec["template"]["spec"]["taints"] = json!([taint(r)]);
    }
    if r.chance(30) {
        spec["limits"] = json!({"cpu": quantity(r, &["10", "100", "1000", "0"])});
    }
    if r.chance(10) {
        spec["weight"] = if r.odd(50) {
            nasty_value(r)
        } else {
            json!(r.range(1, 100))
        };
    }
    let api = if r.odd(10) {
        "karpenter.sh/v1"
    } else {
        "adze.sh/v1"
    };
    json!({"apiVersion": api, "kind": "NodePool", "metadata": {"name": name(r, "pool", i)}, "spec": spec})
}

fn catalog(r: &mut Rng) -> Value {
    let types: Vec<Value> = (0..r.range(1, 6))
        .map(|i| {
            let cpu = *r.pick(&[1, 2, 4, 8, 16, 64]);
            let mut t = json!({
                "name": format!("t{i}.{cpu}x"),
                "cpu": if r.odd(3) { nasty_value(r) } else { json!(cpu) },
                "memory": quantity(r, &["2Gi", "4Gi", "8Gi", "16Gi", "64Gi", "256Gi"]),
                "pods": if r.odd(3) { nasty_value(r) } else { json!(r.range(4, 250)) },
                "arch": r.pick(ARCHES),
                "offerings": (0..r.range(1, 3)).map(|_| json!({
                    "zone": r.pick(&ZONES[3..]),
                    "capacityType": r.pick(CAPACITY),
                    "price": if r.odd(3) { nasty_value(r) } else { json!(0.01 * r.range(1, 500) as f64) },
                })).collect::<Vec<_>>(),
            });
            if r.chance(20) {
                t["labels"] = json!({"example.com/tier": r.pick(VALUES)});
            }
            t
        })
        .collect();
    json!({"apiVersion": "adze.sh/v1alpha1", "kind": "InstanceCatalog", "metadata": {"name": "lab"}, "instanceTypes": types})
}

fn heavy() -> bool {
    std::env::var_os("ADZE_FUZZ_HEAVY").is_some_and(|v| v == "1")
}

fn workload(r: &mut Rng, i: u64) -> Value {
    let app = format!("app{i}");
    let spec = pod_spec(r, &app);
    match r.below(10) {
        0..=3 => {
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name(r, "pod", i), "labels": {"app": app}}, "spec": spec})
        }
        4..=7 => {
            // Tens of thousands of replicas (with hundreds of preferred terms, or hostname
            // anti-affinity) cost minutes or gigabytes today: only ADZE_FUZZ_HEAVY=1 goes there.
            // The debug build plans a thousand pods of the embedded catalog in about a second
            // and the cost grows faster than the count, so a few thousand stay under the CPU bound.
            let most = if heavy() { 50_000 } else { 1_500 };
            let replicas = match r.below(20) {
                0 => nasty_value(r),
                1 => json!(r.range(500, most)),
                _ => json!(r.range(0, 30)),
            };
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name(r, "deploy", i)},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app}},
                    "template": {"metadata": {"labels": {"app": app}}, "spec": spec}}})
        }
        _ => {
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name(r, "ds", i)},
            "spec": {"selector": {"matchLabels": {"app": app}},
                "template": {"metadata": {"labels": {"app": app}}, "spec": spec}}})
        }
    }
}

fn node(r: &mut Rng, i: u64) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name(r, "node", i), "labels": {
            "kubernetes.io/arch": r.pick(ARCHES),
            "topology.kubernetes.io/zone": r.pick(ZONES),
            "example.com/team": r.pick(VALUES),
        }},
        "status": {"allocatable": {"cpu": quantity(r, CPU), "memory": quantity(r, MEMORY), "pods": r.range(0, 110)}}})
}

fn nodeclass(api: &str, r: &mut Rng) -> Value {
    json!({"apiVersion": api, "kind": "EC2NodeClass", "metadata": {"name": "default"},
        "spec": {"role": if r.odd(5) { json!(nasty_string(r)) } else { json!("KarpenterNodeRole") },
            "amiFamily": r.pick(&["AL2023", "AL2", "Bottlerocket", "Custom", "Windows2022"]),
            "amiSelectorTerms": [{"alias": r.pick(&["al2023@latest", "bottlerocket@v1.20", "al2@", ""])}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            "kubelet": {"maxPods": if r.odd(10) { nasty_value(r) } else { json!(r.range(1, 250)) }},
            "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": quantity(r, &["20Gi", "100Gi", "1Ti"])}}]}})
}

fn karpenter_nodepool(api: &str, r: &mut Rng, i: u64) -> Value {
    let mut template_spec = json!({"requirements": requirements(r, 5, true)});
    if api == "karpenter.sh/v1" {
        template_spec["nodeClassRef"] =
            json!({"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"});
        template_spec["expireAfter"] = json!(r.pick(&["720h", "Never", "0s", "-1h", "99999999h"]));
    } else {
        template_spec["nodeClassRef"] = json!({"name": "default"});
        template_spec["kubelet"] = json!({"maxPods": r.range(1, 300)});
    }
    if r.chance(20) {
        template_spec["taints"] = json!([taint(r)]);
    }
    let budgets = json!([{"nodes": r.pick(&["10%", "0", "100%", "-1", "1e9"]), "schedule": r.pick(&["@daily", "0 9 * * mon-fri", "*/0 * * * *"]), "duration": r.pick(&["8h", "0s", "10000000h"])}]);
    json!({"apiVersion": api, "kind": "NodePool", "metadata": {"name": name(r, "pool", i)},
        "spec": {"template": {"spec": template_spec},
            "limits": {"cpu": quantity(r, &["1000", "1e100000", "10", "-5"])},
            "disruption": {"consolidationPolicy": r.pick(&["WhenEmptyOrUnderutilized", "WhenUnderutilized", "WhenEmpty", "Never"]), "budgets": budgets}}})
}

/// A Karpenter v1 or v1beta1 NodePool / EC2NodeClass set, sometimes as a kubectl List.
fn migrate_docs(r: &mut Rng) -> Vec<Value> {
    let (pool_api, class_api) = if r.chance(50) {
        ("karpenter.sh/v1", "karpenter.k8s.aws/v1")
    } else {
        ("karpenter.sh/v1beta1", "karpenter.k8s.aws/v1beta1")
    };
    let mut docs = vec![nodeclass(class_api, r)];
    for i in 0..r.range(1, 3) {
        docs.push(karpenter_nodepool(pool_api, r, i));
    }
    if r.chance(10) {
        docs.push(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}}));
    }
    if r.chance(15) {
        docs = vec![json!({"apiVersion": "v1", "kind": "List", "items": docs})];
    }
    docs
}

fn scenario_docs(r: &mut Rng) -> Vec<Value> {
    let mut docs = Vec::new();
    if r.chance(50) {
        docs.push(catalog(r));
    }
    for i in 0..r.range(1, 3) {
        docs.push(adze_nodepool(r, i));
    }
    if r.chance(25) {
        for i in 0..r.range(1, 3) {
            docs.push(node(r, i));
        }
    }
    for i in 0..r.range(1, 6) {
        docs.push(workload(r, i));
    }
    docs
}

// ---------------------------------------------------------------------------------------
// Mutations of the structured documents, then of their text
// ---------------------------------------------------------------------------------------

/// Visits a random node of the tree and replaces or reshapes it.
fn mutate(r: &mut Rng, v: &mut Value, depth: u32) {
    let descend = depth < 12 && r.chance(75);
    match v {
        Value::Object(m) if descend && !m.is_empty() => {
            let k = m.keys().nth(r.below(m.len() as u64) as usize).cloned();
            if let Some(k) = k {
                mutate(r, m.get_mut(&k).expect("key present"), depth + 1);
            }
            return;
        }
        Value::Array(a) if descend && !a.is_empty() => {
            let i = r.below(a.len() as u64) as usize;
            mutate(r, &mut a[i], depth + 1);
            return;
        }
        _ => {}
    }
    *v = match r.below(7) {
        0 => nasty_value(r),
        1 => {
            // Deep nesting.
            let mut deep = json!("bottom");
            for _ in 0..r.range(10, 300) {
                deep = if r.chance(50) {
                    json!([deep])
                } else {
                    json!({ "a": deep })
                };
            }
            deep
        }
        2 => Value::Array((0..r.range(0, 200)).map(|_| v.clone()).collect()),
        3 => json!(nasty_string(r)),
        4 => Value::Null,
        5 => json!({}),
        _ => json!([]),
    };
}

fn text_mutation(r: &mut Rng, text: &mut String) {
    match r.below(5) {
        0 => {
            // Cut anywhere (on a char boundary).
            let mut at = r.below(text.len() as u64 + 1) as usize;
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            text.truncate(at);
        }
        1 => text.push_str("\n---\n&a [*a, *a]\n"),
        2 => text.push_str("\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: \"\u{1F680}\"}\nspec: {containers: [{name: c, resources: {requests: {cpu: {not: a quantity}}}}]}\n"),
        3 => *text = text.replace(": ", ":\t"),
        _ => text.push_str("\n---\n"),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Scenario,
    Migrate,
}

/// The input of case `case`: the same on every run.
fn generate(case: u64) -> (Kind, String) {
    let mut r = Rng::new(case);
    r.level = *r.pick(&[0, 0, 1, 1, 2]);
    let kind = if r.chance(65) {
        Kind::Scenario
    } else {
        Kind::Migrate
    };
    let mut docs = match kind {
        Kind::Scenario => scenario_docs(&mut r),
        Kind::Migrate => migrate_docs(&mut r),
    };
    for _ in 0..r.below(r.level * 2) {
        let i = r.below(docs.len() as u64) as usize;
        mutate(&mut r, &mut docs[i], 0);
    }
    let as_json = r.chance(10);
    let mut text = docs
        .iter()
        .map(|d| {
            if as_json {
                serde_json::to_string_pretty(d).expect("json")
            } else {
                serde_yaml::to_string(d).expect("yaml")
            }
        })
        .collect::<Vec<_>>()
        .join("\n---\n");
    if r.odd(8) {
        text_mutation(&mut r, &mut text);
    }
    (kind, text)
}

// ---------------------------------------------------------------------------------------
// The child: one input, the properties of its plan
// ---------------------------------------------------------------------------------------

fn term_matches(term: &Requirements, labels: &BTreeMap<String, String>) -> bool {
    term.matches_labels(labels)
}

/// What is wrong with the plan `simulate` makes for `scenario`, if anything.
fn plan_violations(scenario: &Scenario) -> Vec<String> {
    check_plan(scenario, &simulate::run(scenario, 60).plan)
}

/// What is wrong with `plan` for `scenario`, if anything.
fn check_plan(scenario: &Scenario, plan: &adze_scheduling::Plan) -> Vec<String> {
    let pods: BTreeMap<String, &adze_scheduling::Pod> = scenario
        .snapshot
        .pending
        .iter()
        .map(|p| (p.key(), p))
        .collect();
    let mut out = Vec::new();
    for p in &scenario.snapshot.pending {
        let q = &p.requests;
        if q.cpu < 0
            || q.memory < 0
            || q.ephemeral_storage < 0
            || q.extended.iter().any(|(_, v)| *v < 0)
        {
            out.push(format!(
                "pod {} accepted with a negative request: {q:?}",
                p.key()
            ));
        }
    }
    for c in &plan.new_claims {
        for (k, v) in &c.labels {
            if !is_qualified_name(k) {
                out.push(format!(
                    "claim {}: label key {k:?} is not a valid Kubernetes label key",
                    c.name
                ));
            }
            if !is_label_value(v) {
                out.push(format!(
                    "claim {}: label {k}={v:?} is not a valid Kubernetes label value",
                    c.name
                ));
            }
        }
        if !c.requests.fits_in(&c.allocatable) {
            out.push(format!(
                "claim {} ({}): requests {:?} exceed allocatable {:?}",
                c.name, c.instance_type, c.requests, c.allocatable
            ));
        }
        let mut sum = adze_scheduling::Resources::default();
        let mut ports: Vec<(&str, &adze_scheduling::pod::HostPort)> = Vec::new();
        for key in &c.pods {
            if let Some(p) = pods.get(key) {
                for hp in &p.host_ports {
                    // One pod may hold a port twice (a sidecar and an app container:
                    // the apiserver compares init containers with neither), which is not
                    // two pods sharing it: only holders in different pods count here.
                    if let Some((other, _)) = ports
                        .iter()
                        .find(|(owner, o)| *owner != key.as_str() && o.conflicts(hp))
                    {
                        out.push(format!(
                            "claim {}: pods {other} and {key} both hold host port {}/{}",
                            c.name, hp.port, hp.protocol
                        ));
                    }
                    ports.push((key, hp));
                }
            }
            let Some(p) = pods.get(key) else {
                out.push(format!(
                    "claim {} holds {key}, which is not a pending pod",
                    c.name
                ));
                continue;
            };
            sum.add(&p.requests);
            if !p.node_requirements.is_empty()
                && !p
                    .node_requirements
                    .iter()
                    .any(|t| term_matches(t, &c.labels))
            {
                out.push(format!(
                    "pod {key} on claim {}: no required node term matches the node's labels {:?} (terms: {})",
                    c.name,
                    c.labels,
                    p.node_requirements
                        .iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(" | ")
                ));
            }
        }
        if !sum.fits_in(&c.allocatable) {
            out.push(format!(
                "claim {} ({}): its pods ask {sum:?}, over allocatable {:?}",
                c.name, c.instance_type, c.allocatable
            ));
        }
    }
    for e in &plan.existing {
        let Some(n) = scenario.snapshot.nodes.iter().find(|n| n.name == e.node) else {
            continue;
        };
        let labels: BTreeMap<String, String> = n
            .requirements
            .iter()
            .filter_map(|r| r.single_value().map(|v| (r.key.clone(), v.to_string())))
            .collect();
        for key in &e.pods {
            if let Some(p) = pods.get(key)
                && !p.node_requirements.is_empty()
                && !p.node_requirements.iter().any(|t| term_matches(t, &labels))
            {
                out.push(format!(
                    "pod {key} on node {}: no required node term matches its labels {labels:?}",
                    e.node
                ));
            }
        }
    }
    out
}

/// Runs one input; exit 0 when every property holds, 3 with the violations on stderr.
fn child(kind: &str, path: &Path) -> ExitCode {
    let mut input = String::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_string(&mut input))
        .expect("read the input");
    let mut outcome = "refused";
    let violations = match kind {
        "scenario" => match Scenario::parse(&input) {
            Ok(s) => {
                outcome = "planned";
                plan_violations(&s)
            }
            Err(e) => {
                let msg = e.to_string();
                if std::env::var_os("ADZE_FUZZ_VERBOSE").is_some() {
                    println!("refusal={}", shorten(&msg.replace('\n', " "), 300));
                }
                if msg.trim().is_empty() {
                    vec!["refused with an empty message".to_string()]
                } else {
                    Vec::new()
                }
            }
        },
        _ => match migrate::migrate(&input) {
            Ok(m) => {
                outcome = "converted";
                let _ = m.yaml();
                let _ = m.report();
                Vec::new()
            }
            Err(e) => {
                let _ = e.to_string();
                Vec::new()
            }
        },
    };
    let cpu = cpu_time::ProcessTime::now().as_duration();
    println!("cpu_ms={}", cpu.as_millis());
    println!("outcome={outcome}");
    if violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        for v in &violations {
            eprintln!("violation: {v}");
        }
        ExitCode::from(3)
    }
}

// ---------------------------------------------------------------------------------------
// The parent: generate, run each input in a bounded child, report
// ---------------------------------------------------------------------------------------

struct Failure {
    case: u64,
    kind: Kind,
    what: String,
    input: String,
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    let parsed = match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={v:?} is not a number")))
}

fn run_case(
    exe: &Path,
    dir: &Path,
    case: u64,
    input_cpu: Duration,
) -> Result<(Kind, String), Failure> {
    let (kind, input) = generate(case);
    let file = dir.join(format!("{case:016x}.yaml"));
    std::fs::write(&file, &input).expect("write the input");
    let kind_arg = match kind {
        Kind::Scenario => "scenario",
        Kind::Migrate => "migrate",
    };
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {ADDRESS_SPACE_KIB} && exec \"$0\""))
        .arg(exe)
        .env("ADZE_FUZZ_CHILD", kind_arg)
        .env("ADZE_FUZZ_INPUT", &file)
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the child");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for the child") {
            break Some(s);
        }
        if start.elapsed() > HARD_WALL {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut stdout);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    let _ = std::fs::remove_file(&file);
    let fail = |what: String| Failure {
        case,
        kind,
        what,
        input: input.clone(),
    };
    if std::env::var_os("ADZE_FUZZ_VERBOSE").is_some() {
        for l in stdout.lines().filter(|l| l.starts_with("refusal=")) {
            println!("{case:016x} {l}");
        }
    }
    let Some(status) = status else {
        return Err(fail(format!(
            "still running after {HARD_WALL:?} (wall clock); killed"
        )));
    };
    let cpu = stdout
        .lines()
        .find_map(|l| l.strip_prefix("cpu_ms="))
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_millis);
    match status.code() {
        Some(0) => {}
        Some(3) => {
            return Err(fail(format!(
                "plan breaks an invariant:\n{}",
                stderr.trim()
            )));
        }
        Some(c) => return Err(fail(format!("exit code {c}:\n{}", tail(&stderr)))),
        None => {
            use std::os::unix::process::ExitStatusExt;
            return Err(fail(format!(
                "killed by signal {:?} (abort or allocation failure under the {} GiB address-space limit):\n{}",
                status.signal(),
                ADDRESS_SPACE_KIB / 1024 / 1024,
                tail(&stderr)
            )));
        }
    }
    match cpu {
        Some(cpu) if cpu > input_cpu => Err(fail(format!(
            "took {cpu:?} of CPU, over the {input_cpu:?} bound"
        ))),
        Some(_) => Ok((
            kind,
            stdout
                .lines()
                .find_map(|l| l.strip_prefix("outcome="))
                .unwrap_or("?")
                .to_string(),
        )),
        None => Err(fail(format!(
            "child printed no CPU time:\n{}",
            tail(&stderr)
        ))),
    }
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

fn shorten(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut at = max;
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    format!("{}\n... ({} more bytes)", &s[..at], s.len() - at)
}

fn case_seed(seed: u64, i: u64) -> u64 {
    let mut r = Rng::new(seed ^ i.wrapping_mul(0xD6E8_FEB8_6659_FD93));
    r.next()
}

/// The checks catch what they are for: a correct plan passes, and a plan broken on purpose
/// (wrong label, requests over allocatable, an invalid label value, a second holder of a host
/// port) is reported on each count. Run before fuzzing, so a checker that passes everything
/// fails the run.
fn self_check() {
    let pod = |name: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec: {{nodeSelector: {{kubernetes.io/arch: arm64}}, containers: [{{name: c, ports: [{{containerPort: 80, hostPort: 80}}], resources: {{requests: {{cpu: 500m, memory: 1Gi}}}}}}]}}\n"
        )
    };
    let yaml = format!(
        "apiVersion: adze.sh/v1\nkind: NodePool\nmetadata: {{name: default}}\nspec: {{template: {{spec: {{nodeClassRef: {{group: aws.adze.sh, kind: EC2NodeClass, name: default}}, requirements: []}}}}}}\n---\n{}---\n{}",
        pod("a"),
        pod("b")
    );
    let scenario = Scenario::parse(&yaml).expect("the self-check scenario parses");
    let mut plan = simulate::run(&scenario, 60).plan;
    let found = check_plan(&scenario, &plan);
    assert!(found.is_empty(), "a correct plan reported: {found:?}");
    assert_eq!(plan.new_claims.len(), 2, "{:?}", plan.new_claims);
    let moved = plan.new_claims[1].pods.clone();
    let c = &mut plan.new_claims[0];
    c.pods.extend(moved);
    c.labels.insert("kubernetes.io/arch".into(), "amd64".into());
    c.labels
        .insert("example.com/bad".into(), "not a value!".into());
    c.requests.cpu = c.allocatable.cpu + 1;
    let found = check_plan(&scenario, &plan);
    for part in [
        "no required node term matches",
        "exceed allocatable",
        "not a valid Kubernetes label value",
        "both hold host port 80",
    ] {
        assert!(
            found.iter().any(|f| f.contains(part)),
            "the checker missed {part:?}: {found:?}"
        );
    }
}

fn main() -> ExitCode {
    if let Ok(kind) = std::env::var("ADZE_FUZZ_CHILD") {
        let path = PathBuf::from(std::env::var("ADZE_FUZZ_INPUT").expect("ADZE_FUZZ_INPUT"));
        return child(&kind, &path);
    }
    // `cargo test -- --list` and filters: this target has no named tests.
    if std::env::args().any(|a| a == "--list") {
        return ExitCode::SUCCESS;
    }
    self_check();
    let budget = Duration::from_secs(env_u64("ADZE_FUZZ_SECS").unwrap_or(3));
    let input_cpu = Duration::from_secs(env_u64("ADZE_FUZZ_INPUT_SECS").unwrap_or(5));
    // A fixed default, so `cargo test` runs the same inputs every time; CI passes its own.
    let seed = env_u64("ADZE_FUZZ_SEED").unwrap_or(1);
    let exe = std::env::current_exe().expect("own path");
    let dir = std::env::temp_dir().join(format!("adze-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let single = env_u64("ADZE_FUZZ_CASE");
    if let (Some(case), Some(_)) = (single, std::env::var_os("ADZE_FUZZ_PRINT")) {
        let (kind, input) = generate(case);
        eprintln!("{kind:?} input of case 0x{case:016x}:");
        print!("{input}");
        return ExitCode::SUCCESS;
    }
    println!(
        "fuzz_inputs: seed {seed} (ADZE_FUZZ_SEED={seed} repeats this run), budget {budget:?}, {input_cpu:?} CPU and {} GiB address space per input",
        ADDRESS_SPACE_KIB / 1024 / 1024
    );
    let start = Instant::now();
    let mut failures: Vec<Failure> = Vec::new();
    let mut passed: BTreeMap<String, u64> = BTreeMap::new();
    let mut i = 0u64;
    loop {
        let case = match single {
            Some(c) => c,
            None => case_seed(seed, i),
        };
        match run_case(&exe, &dir, case, input_cpu) {
            Ok((kind, outcome)) => *passed.entry(format!("{kind:?} {outcome}")).or_default() += 1,
            Err(f) => failures.push(f),
        }
        i += 1;
        if single.is_some() || start.elapsed() >= budget || failures.len() >= 10 {
            break;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "fuzz_inputs: {i} inputs in {:?}, {} failed; passed: {passed:?}",
        start.elapsed(),
        failures.len()
    );
    if failures.is_empty() {
        return ExitCode::SUCCESS;
    }
    let keep = std::env::var_os("ADZE_FUZZ_KEEP").map(PathBuf::from);
    for f in &failures {
        eprintln!(
            "\n=== FAILED: {:?} input, ADZE_FUZZ_CASE=0x{:016x} (seed {seed})\n{}\n--- input ---\n{}",
            f.kind,
            f.case,
            f.what,
            shorten(&f.input, 4000)
        );
        if let Some(dir) = &keep {
            let _ = std::fs::create_dir_all(dir);
            let _ = std::fs::write(dir.join(format!("{:016x}.yaml", f.case)), &f.input);
        }
    }
    ExitCode::FAILURE
}
