//! Shared by the conformance suites (`conformance_*.rs`): a scenario in, the plan out, and the
//! few questions every case asks of it. Each case restates one test of Karpenter's scheduling
//! suite as an Adze scenario (see docs/conformance.md for the table).
#![allow(dead_code)]

pub use adze_provisioner::rules::{MinValuesPolicy, Policies, PreferencePolicy};
use adze_provisioner::simulate::{self, Scenario};
use adze_scheduling::Plan;
use adze_scheduling::plan::NewClaim;

/// A planned scenario.
pub struct Planned {
    pub scenario: Scenario,
    pub plan: Plan,
}

/// Parses and plans `yaml` as `adze-provisioner simulate` does (60 types kept per claim).
/// Panics with the scenario error: a case whose scenario does not parse is a broken case.
pub fn plan(yaml: &str) -> Planned {
    plan_with(yaml, &Policies::default())
}

/// [`plan`] under placement policies (`--preference-policy`, `--min-values-policy`).
pub fn plan_with(yaml: &str, policies: &Policies) -> Planned {
    let scenario = Scenario::parse(yaml).unwrap_or_else(|e| panic!("scenario: {e}"));
    let plan = simulate::run_with(&scenario, 60, policies).plan;
    Planned { scenario, plan }
}

/// `--preference-policy Ignore`.
pub fn ignoring_preferences() -> Policies {
    Policies {
        preference_policy: PreferencePolicy::Ignore,
        ..Policies::default()
    }
}

/// `--min-values-policy BestEffort`.
pub fn min_values_best_effort() -> Policies {
    Policies {
        min_values_policy: MinValuesPolicy::BestEffort,
        ..Policies::default()
    }
}

/// The scenario's error, for cases whose input must be refused.
pub fn refused(yaml: &str) -> String {
    match Scenario::parse(yaml) {
        Ok(_) => panic!("scenario was accepted"),
        Err(e) => e.to_string(),
    }
}

impl Planned {
    /// The new claim `pod` ("namespace/name") was placed on, if any.
    pub fn claim_of(&self, pod: &str) -> Option<&NewClaim> {
        self.plan
            .new_claims
            .iter()
            .find(|c| c.pods.iter().any(|p| p == pod))
    }

    /// The existing node (or in-flight claim) `pod` was placed on, if any.
    pub fn node_of(&self, pod: &str) -> Option<&str> {
        self.plan
            .existing
            .iter()
            .find(|e| e.pods.iter().any(|p| p == pod))
            .map(|e| e.node.as_str())
    }

    /// Where `pod` went: a new claim's name or an existing node's.
    pub fn placed(&self, pod: &str) -> Option<&str> {
        self.claim_of(pod)
            .map(|c| c.name.as_str())
            .or_else(|| self.node_of(pod))
    }

    /// The reason `pod` could not be placed, if it could not.
    pub fn unschedulable(&self, pod: &str) -> Option<&str> {
        self.plan
            .unschedulable
            .iter()
            .find(|u| u.pod == pod)
            .map(|u| u.reason.as_str())
    }

    /// Asserts `pod` was placed somewhere and returns where.
    pub fn expect_placed(&self, pod: &str) -> &str {
        match self.placed(pod) {
            Some(at) => at,
            None => panic!(
                "{pod} was not placed: {:?}",
                self.unschedulable(pod)
                    .unwrap_or("(not in the plan at all)")
            ),
        }
    }

    /// Asserts `pod` was left unschedulable and returns the reason.
    pub fn expect_unschedulable(&self, pod: &str) -> &str {
        match self.unschedulable(pod) {
            Some(r) => r,
            None => panic!("{pod} was placed on {:?}", self.placed(pod)),
        }
    }

    /// The label `key` of the new claim `pod` landed on.
    pub fn claim_label(&self, pod: &str, key: &str) -> Option<&str> {
        self.claim_of(pod)
            .and_then(|c| c.labels.get(key))
            .map(String::as_str)
    }

    /// Pods of the scenario's pending set, by the value of `key` on the claim each landed on
    /// (pods on existing nodes and unplaced pods are not counted).
    pub fn count_by_label(&self, key: &str) -> std::collections::BTreeMap<String, usize> {
        let mut out = std::collections::BTreeMap::new();
        for c in &self.plan.new_claims {
            if let Some(v) = c.labels.get(key) {
                *out.entry(v.clone()).or_insert(0) += c.pods.len();
            }
        }
        out
    }
}

/// Karpenter's fake cloud provider's default instance types (its test suites' catalog),
/// restated as an `InstanceCatalog`: each type offered as spot in test-zone-1 and -2 and on
/// demand in test-zone-1, -2 and -3, every offering of a type at one price
/// (0.1 per vCPU + 0.1 per GB of memory, + 1.0 for GPUs). Each type carries Karpenter's fake
/// `integer` label (its vCPUs) and `size` label (`large` above 4 vCPU and 8Gi, else `small`).
///
/// Differences from Karpenter's fake: Adze's types run Linux only (the fake also offers
/// windows and darwin); the two fake GPU vendors are one type with 2 `nvidia.com/gpu`; and
/// Adze charges its usual kubelet overhead (EKS formulas) instead of the fake's flat
/// 100m CPU / 10Mi, so a 4-CPU/4Gi type has a little less room than in Karpenter's tests.
pub const FAKE_CATALOG: &str = r#"
apiVersion: adze.sh/v1alpha1
kind: InstanceCatalog
metadata:
  name: karpenter-fake
instanceTypes:
  - name: default-instance-type
    cpu: 4
    memory: 4Gi
    pods: 5
    arch: amd64
    labels: {integer: "4", size: small}
    offerings:
      - {zone: test-zone-1, capacityType: spot, price: 0.8295}
      - {zone: test-zone-2, capacityType: spot, price: 0.8295}
      - {zone: test-zone-1, capacityType: on-demand, price: 0.8295}
      - {zone: test-zone-2, capacityType: on-demand, price: 0.8295}
      - {zone: test-zone-3, capacityType: on-demand, price: 0.8295}
  - name: small-instance-type
    cpu: 2
    memory: 2Gi
    pods: 5
    arch: amd64
    labels: {integer: "2", size: small}
    offerings:
      - {zone: test-zone-1, capacityType: spot, price: 0.4147}
      - {zone: test-zone-2, capacityType: spot, price: 0.4147}
      - {zone: test-zone-1, capacityType: on-demand, price: 0.4147}
      - {zone: test-zone-2, capacityType: on-demand, price: 0.4147}
      - {zone: test-zone-3, capacityType: on-demand, price: 0.4147}
  - name: gpu-vendor-instance-type
    cpu: 4
    memory: 4Gi
    pods: 5
    arch: amd64
    gpus: 2
    labels: {integer: "4", size: small}
    offerings:
      - {zone: test-zone-1, capacityType: spot, price: 1.8295}
      - {zone: test-zone-2, capacityType: spot, price: 1.8295}
      - {zone: test-zone-1, capacityType: on-demand, price: 1.8295}
      - {zone: test-zone-2, capacityType: on-demand, price: 1.8295}
      - {zone: test-zone-3, capacityType: on-demand, price: 1.8295}
  - name: arm-instance-type
    cpu: 16
    memory: 128Gi
    pods: 5
    arch: arm64
    labels: {integer: "16", size: large, special: optional}
    offerings:
      - {zone: test-zone-1, capacityType: spot, price: 15.3439}
      - {zone: test-zone-2, capacityType: spot, price: 15.3439}
      - {zone: test-zone-1, capacityType: on-demand, price: 15.3439}
      - {zone: test-zone-2, capacityType: on-demand, price: 15.3439}
      - {zone: test-zone-3, capacityType: on-demand, price: 15.3439}
  - name: single-pod-instance-type
    cpu: 4
    memory: 4Gi
    pods: 1
    arch: amd64
    labels: {integer: "4", size: small}
    offerings:
      - {zone: test-zone-1, capacityType: spot, price: 0.8295}
      - {zone: test-zone-2, capacityType: spot, price: 0.8295}
      - {zone: test-zone-1, capacityType: on-demand, price: 0.8295}
      - {zone: test-zone-2, capacityType: on-demand, price: 0.8295}
      - {zone: test-zone-3, capacityType: on-demand, price: 0.8295}
"#;

/// The NodePool most of Karpenter's scheduling cases start from: named `default`, spot or on
/// demand, nothing else constrained.
pub const FAKE_NODEPOOL: &str = r#"
apiVersion: adze.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      nodeClassRef:
        group: aws.adze.sh
        kind: EC2NodeClass
        name: default
      requirements:
        - key: adze.sh/capacity-type
          operator: In
          values: ["spot", "on-demand"]
"#;

/// Joins YAML documents into one scenario (`FAKE_CATALOG`, a NodePool, pods...).
pub fn scenario(docs: &[&str]) -> String {
    docs.iter()
        .map(|d| d.trim_matches('\n'))
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// Karpenter's fake `InstanceTypes(n)` catalog: `fake-it-0` .. `fake-it-{n-1}`, type `i` with
/// `i+1` vCPU, `2(i+1)` Gi and `10(i+1)` pods, amd64, offered like `FAKE_CATALOG`'s types
/// (spot in test-zone-1/2, on demand in test-zone-1/2/3), with the fake's `integer`, `size`
/// and (for large types) `special` labels.
pub fn fake_instance_types(n: usize) -> String {
    let mut out = String::from(
        "apiVersion: adze.sh/v1alpha1\nkind: InstanceCatalog\nmetadata:\n  name: karpenter-fake-sized\ninstanceTypes:\n",
    );
    for i in 0..n {
        let cpu = i + 1;
        let mem_gi = 2 * cpu;
        let price = 0.1 * cpu as f64 + 0.1 * (mem_gi as f64 * 1073741824.0) / 1e9;
        let large = cpu > 4 && mem_gi > 8;
        let labels = if large {
            format!("{{integer: \"{cpu}\", size: large, special: optional}}")
        } else {
            format!("{{integer: \"{cpu}\", size: small}}")
        };
        out.push_str(&format!(
            "  - name: fake-it-{i}\n    cpu: {cpu}\n    memory: {mem_gi}Gi\n    pods: {}\n    arch: amd64\n    labels: {labels}\n    offerings:\n",
            10 * cpu
        ));
        for (zone, ct) in [
            ("test-zone-1", "spot"),
            ("test-zone-2", "spot"),
            ("test-zone-1", "on-demand"),
            ("test-zone-2", "on-demand"),
            ("test-zone-3", "on-demand"),
        ] {
            out.push_str(&format!(
                "      - {{zone: {zone}, capacityType: {ct}, price: {price:.4}}}\n"
            ));
        }
    }
    out
}
