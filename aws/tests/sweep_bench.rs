//! The drift-check benchmark (issue 17): DescribeInstances calls and wall time of one
//! disruption drift pass at 1,000 and 5,000 instances, per-claim (`is_drifted`, the old path)
//! against the shared sweep (`drifted_claims`). Against moto through the fault proxy, which
//! counts the calls; moto is not EC2 (its latency and its page sizes are its own).
//!
//! Run by `aws/ci/sweep-bench.sh` (starts moto, sets ADZE_AWS_ENDPOINT and
//! ADZE_SWEEP_BENCH=1). `aws/ci/moto.sh` skips it by name; run without ADZE_SWEEP_BENCH it
//! fails rather than pass having measured nothing.
//!
//! Knobs: ADZE_SWEEP_BENCH_SIZES (default `1000,5000`), ADZE_SWEEP_BENCH_SAMPLE (claims the
//! per-claim path is timed on, default 200; its pass time is extrapolated to all claims).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use adze_api::{EC2NodeClass, NodeClaim};
use adze_aws::fault_proxy::FaultProxy;
use adze_aws::nodeclass::AmiParameters;
use adze_aws::{AwsProvider, Clients, Settings, StaticNodeClasses};
use adze_cloud::{CloudProvider, UnavailableOfferings};
use aws_sdk_ec2::types::{Filter, ResourceType, Tag, TagSpecification};
use futures::StreamExt;
use serde_json::json;

const REGION: &str = "us-east-1";
const CLUSTER: &str = "sweep-bench";
/// Disruption's poll.
const POLL: Duration = Duration::from_secs(10);

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Bench {
    proxy: FaultProxy,
    clients: Clients,
    subnets: Vec<(String, String)>,
    sg: String,
    ami: String,
    other_ami: String,
}

async fn setup(moto: &str) -> Bench {
    let proxy = FaultProxy::start(moto).await.unwrap();
    let mut clients = Clients::new(REGION, Some(&proxy.url())).await;
    // Moto filters tags slowly (tens of seconds per DescribeInstances page at 5,000 instances
    // on a loaded machine); the production 40 s attempt timeout would cut the sweep off.
    clients.ec2 = aws_sdk_ec2::Client::from_conf(
        clients
            .ec2
            .config()
            .to_builder()
            .timeout_config(
                aws_sdk_ec2::config::timeout::TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(5))
                    .operation_attempt_timeout(Duration::from_secs(1800))
                    .operation_timeout(Duration::from_secs(1800))
                    .build(),
            )
            .build(),
    );
    let ec2 = &clients.ec2;
    let subnets: Vec<(String, String)> = ec2
        .describe_subnets()
        .filters(
            Filter::builder()
                .name("default-for-az")
                .values("true")
                .build(),
        )
        .send()
        .await
        .unwrap()
        .subnets
        .unwrap()
        .into_iter()
        .map(|s| (s.subnet_id.unwrap(), s.availability_zone.unwrap()))
        .filter(|(_, z)| z == "us-east-1a" || z == "us-east-1b")
        .collect();
    let vpc = ec2
        .describe_vpcs()
        .filters(Filter::builder().name("is-default").values("true").build())
        .send()
        .await
        .unwrap()
        .vpcs
        .unwrap()[0]
        .vpc_id
        .clone()
        .unwrap();
    let sg = ec2
        .create_security_group()
        .group_name(format!("nodes-{CLUSTER}"))
        .description("adze sweep bench nodes")
        .vpc_id(vpc)
        .send()
        .await
        .unwrap()
        .group_id
        .unwrap();
    let images: Vec<String> = ec2
        .describe_images()
        .filters(
            Filter::builder()
                .name("architecture")
                .values("x86_64")
                .build(),
        )
        .send()
        .await
        .unwrap()
        .images
        .unwrap()
        .into_iter()
        .filter_map(|i| i.image_id)
        .collect();
    Bench {
        proxy,
        clients,
        subnets,
        sg,
        ami: images[0].clone(),
        other_ami: images[1].clone(),
    }
}

impl Bench {
    /// The class as its controller leaves it: resolved to our subnets, group and image.
    fn class(&self) -> EC2NodeClass {
        serde_json::from_value(json!({
            "apiVersion": "aws.adze.sh/v1", "kind": "EC2NodeClass",
            "metadata": {"name": "default"},
            "spec": {
                "subnetSelectorTerms": [{"tags": {"adze.test/sweep-bench": "owned"}}],
                "securityGroupSelectorTerms": [{"tags": {"adze.test/sweep-bench": "*"}}],
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
                "role": "nodes",
            },
            "status": {
                "subnets": self.subnets.iter().map(|(id, zone)| json!({"id": id, "zone": zone})).collect::<Vec<_>>(),
                "securityGroups": [{"id": self.sg}],
                "amis": [{"id": self.ami, "requirements": []}],
                "instanceProfile": "nodes",
            }
        }))
        .unwrap()
    }

    /// A provider with a cold sweep, as a disruption pass meets it once the interval is over.
    fn provider(&self) -> AwsProvider {
        let classes = StaticNodeClasses(BTreeMap::from([("default".to_string(), self.class())]));
        AwsProvider::new(
            self.clients.clone(),
            Settings {
                region: REGION.into(),
                cluster_name: CLUSTER.into(),
                cluster_endpoint: "https://10.0.0.1:6443".into(),
                cluster_ca: "Q0EK".into(),
                service_cidr: "10.100.0.0/16".into(),
                ami_parameters: AmiParameters {
                    prefix: "/adze-test/sweep-bench".into(),
                    kubernetes_version: "1.30".into(),
                },
                catalog_ttl: Duration::from_secs(300),
                sweep_interval: Settings::DEFAULT_SWEEP_INTERVAL,
            },
            Arc::new(classes),
            UnavailableOfferings::new(Duration::from_secs(180)),
        )
    }

    /// Launches claim `k`'s instance (its own reservation, as CreateFleet's are); every
    /// hundredth runs an image the class no longer resolves to (drifted).
    async fn launch(&self, k: usize) -> Arc<NodeClaim> {
        let name = format!("bench-{k}");
        let image = if k.is_multiple_of(100) {
            &self.other_ami
        } else {
            &self.ami
        };
        let i = self
            .clients
            .ec2
            .run_instances()
            .image_id(image)
            .instance_type(aws_sdk_ec2::types::InstanceType::M5Large)
            .subnet_id(&self.subnets[k % self.subnets.len()].0)
            .security_group_ids(&self.sg)
            .min_count(1)
            .max_count(1)
            .tag_specifications(
                TagSpecification::builder()
                    .resource_type(ResourceType::Instance)
                    .tags(
                        Tag::builder()
                            .key(format!("kubernetes.io/cluster/{CLUSTER}"))
                            .value("owned")
                            .build(),
                    )
                    .tags(Tag::builder().key("adze.sh/nodeclaim").value(&name).build())
                    .build(),
            )
            .send()
            .await
            .unwrap()
            .instances
            .unwrap()
            .remove(0);
        let zone = i.placement.unwrap().availability_zone.unwrap();
        let pid = format!("aws:///{zone}/{}", i.instance_id.unwrap());
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "adze.sh/v1", "kind": "NodeClaim",
                "metadata": {"name": name, "labels": {"adze.sh/nodepool": "general"}},
                "spec": {
                    "nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [],
                },
                "status": {"providerID": pid},
            }))
            .unwrap(),
        )
    }

    fn describes(&self) -> usize {
        self.proxy.calls("DescribeInstances")
    }
}

/// Claim `bench-K`'s K.
fn index(c: &NodeClaim) -> usize {
    c.metadata.name.as_deref().unwrap()["bench-".len()..]
        .parse()
        .unwrap()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run aws/ci/sweep-bench.sh"]
async fn drift_pass_calls_and_time_per_claim_vs_sweep() {
    assert!(
        std::env::var_os("ADZE_SWEEP_BENCH").is_some(),
        "a benchmark, not a test: run aws/ci/sweep-bench.sh (it sets ADZE_SWEEP_BENCH=1)"
    );
    let moto = std::env::var("ADZE_AWS_ENDPOINT").expect("ADZE_AWS_ENDPOINT (moto)");
    let sizes: Vec<usize> = std::env::var("ADZE_SWEEP_BENCH_SIZES")
        .unwrap_or_else(|_| "1000,5000".into())
        .split(',')
        .map(|s| s.trim().parse().unwrap())
        .collect();
    let sample: usize = env_or("ADZE_SWEEP_BENCH_SAMPLE", 200);
    let b = setup(&moto).await;
    let mut claims: Vec<Arc<NodeClaim>> = Vec::new();
    let mut rows = Vec::new();
    for &n in &sizes {
        let t = Instant::now();
        let new: Vec<Arc<NodeClaim>> = futures::stream::iter(claims.len()..n)
            .map(|k| b.launch(k))
            .buffer_unordered(8)
            .collect()
            .await;
        claims.extend(new);
        claims.sort_by_key(|c| index(c));
        eprintln!(
            "{n} instances in moto ({} launched in {:.0?})",
            n,
            t.elapsed()
        );
        let want = n.div_ceil(100);

        // The sweep: cold passes (a fresh provider each: a pass every poll finds the last
        // sweep an interval old), three up to 1,000 instances and one above (moto is slow
        // there), each followed by a pass inside the interval.
        let mut cold = Vec::new();
        let mut sweep_calls = 0;
        for _ in 0..(if n <= 1000 { 3 } else { 1 }) {
            let p = b.provider();
            let before = b.describes();
            let t = Instant::now();
            let drifted = p.drifted_claims(&claims).await.unwrap();
            cold.push(t.elapsed());
            sweep_calls = b.describes() - before;
            assert_eq!(drifted.len(), want, "drifted claims found by the sweep");
            let before = b.describes();
            let t = Instant::now();
            p.drifted_claims(&claims).await.unwrap();
            let warm = t.elapsed();
            assert_eq!(
                b.describes(),
                before,
                "a pass within the interval asks EC2 nothing"
            );
            eprintln!(
                "{n}: sweep pass {} ({sweep_calls} calls), cached pass {}",
                ms(cold[cold.len() - 1]),
                ms(warm)
            );
        }
        let sweep_pass = median(cold);

        // The per-claim path on a sample, spread over the claims; extrapolated to all of them.
        let p = b.provider();
        let step = (n / sample.min(n)).max(1);
        let picked: Vec<&Arc<NodeClaim>> = claims.iter().step_by(step).take(sample).collect();
        let before = b.describes();
        let t = Instant::now();
        let mut drifted = 0;
        for c in &picked {
            drifted += usize::from(p.is_drifted(c).await.unwrap());
        }
        let sampled = t.elapsed();
        let per_claim_calls = b.describes() - before;
        assert_eq!(
            per_claim_calls,
            picked.len(),
            "one DescribeInstances per claim"
        );
        assert_eq!(
            drifted,
            picked
                .iter()
                .filter(|c| index(c).is_multiple_of(100))
                .count()
        );
        let per_call = sampled / picked.len() as u32;
        let old_pass = per_call * n as u32;
        eprintln!(
            "{n}: per-claim {} calls in {} ({} per call) → {} per pass",
            picked.len(),
            ms(sampled),
            ms(per_call),
            ms(old_pass)
        );
        let per_minute = 60 / POLL.as_secs() as usize;
        rows.push(format!(
            "| {n} | {n} | {} | {} (from {} sampled calls, {:.1} ms each) | {sweep_calls} | {} | {} | {:.0}× fewer calls, {:.0}× faster |",
            n * per_minute,
            ms(old_pass),
            picked.len(),
            per_call.as_secs_f64() * 1000.0,
            sweep_calls * per_minute,
            ms(sweep_pass),
            n as f64 / sweep_calls as f64,
            old_pass.as_secs_f64() / sweep_pass.as_secs_f64(),
        ));
    }
    println!(
        "\n| instances | per-claim: calls/pass | per-claim: calls/min at a 10 s poll | per-claim: drift pass | sweep: calls/pass | sweep: calls/min | sweep: drift pass (median) | sweep vs per-claim |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---|");
    for r in rows {
        println!("{r}");
    }
}
