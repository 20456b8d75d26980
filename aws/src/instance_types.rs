//! Instance types as EC2 reports them (DescribeInstanceTypes × DescribeInstanceTypeOfferings),
//! priced and turned into the scheduler's [`InstanceType`], kept in a cache refreshed on a TTL.

use adze_cloud::sync::RwLockExt;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use adze_scheduling::catalog::{Accelerators, add_accelerators, ebs_limits, ec2_data, ec2_windows};
use adze_scheduling::instance_type::{NetworkFacts, WindowsFacts};
use adze_scheduling::resources::Resources;
use adze_scheduling::{InstanceType, Offering, labels, overhead};
use aws_sdk_ec2::types::{InstanceTypeInfo, LocationType};

use crate::error::{AwsError, ec2_err};
use crate::nodeclass::kube_arch;
use crate::pricing::{self, OnDemandPrices};

/// What Adze needs from one DescribeInstanceTypes entry.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeFacts {
    pub name: String,
    pub vcpus: u32,
    pub memory_mib: u64,
    /// Kubernetes spelling ("amd64", "arm64").
    pub arch: String,
    pub max_enis: u32,
    pub ipv4_per_eni: u32,
    pub spot: bool,
    /// GPUs, Neuron devices and EFA interfaces.
    pub accelerators: Accelerators,
    /// Total instance-store NVMe size in GB (`InstanceStorageInfo.TotalSizeInGB`).
    pub local_nvme_gb: Option<u64>,
    pub hypervisor: String,
    /// `ProcessorInfo.Manufacturer` lower-cased ("intel", "amd", "aws").
    pub cpu_manufacturer: Option<String>,
    /// Baseline network bandwidth in Mbps, summed over `NetworkInfo.NetworkCards[]`.
    pub network_bandwidth_mbps: Option<u64>,
    /// `EbsInfo.EbsOptimizedInfo.BaselineBandwidthInMbps`.
    pub ebs_bandwidth_mbps: Option<u64>,
    /// `NitroEnclavesSupport`: whether the type can launch with Nitro Enclaves enabled; None
    /// when EC2 did not say (the embedded rule decides then).
    pub nitro_enclaves: Option<bool>,
}

/// Baseline bandwidth in Mbps over all network cards (`BaselineBandwidthInGbps` × 1000; a
/// multi-card type such as p5.48xlarge reports one entry per card). Without card figures, a
/// fixed `NetworkPerformance` such as "25 Gigabit" is used; "Up to 10 Gigabit" is a burst
/// figure, not a baseline, and gives none.
fn network_bandwidth_mbps(net: &aws_sdk_ec2::types::NetworkInfo) -> Option<u64> {
    let cards: Vec<f64> = net
        .network_cards()
        .iter()
        .filter_map(|c| c.baseline_bandwidth_in_gbps())
        .filter(|g| g.is_finite() && *g > 0.0)
        .collect();
    if !cards.is_empty() {
        return Some((cards.iter().sum::<f64>() * 1000.0).round() as u64);
    }
    let perf = net.network_performance()?.trim();
    let gbps: f64 = perf.strip_suffix("Gigabit")?.trim().parse().ok()?;
    (gbps.is_finite() && gbps > 0.0).then(|| (gbps * 1000.0).round() as u64)
}

impl TypeFacts {
    pub fn from_sdk(info: &InstanceTypeInfo) -> Option<TypeFacts> {
        let name = info.instance_type.as_ref()?.as_str().to_string();
        let arch = info
            .processor_info
            .as_ref()?
            .supported_architectures
            .as_ref()?
            .iter()
            .map(|a| kube_arch(a.as_str()).to_string())
            .find(|a| a == "amd64" || a == "arm64")?;
        let net = info.network_info.as_ref()?;
        let neuron = info.neuron_info.as_ref().and_then(|n| {
            let d = n.neuron_devices.as_ref()?.first()?;
            let devices = d.count.unwrap_or(0).max(0) as u32;
            let cores = d
                .core_info
                .as_ref()
                .and_then(|c| c.count)
                .unwrap_or(0)
                .max(0) as u32;
            let name = d.name.clone().unwrap_or_default().to_lowercase();
            (devices > 0).then_some((devices, cores, name))
        });
        let efa_interfaces = if net.efa_supported.unwrap_or(false) {
            net.efa_info
                .as_ref()
                .and_then(|e| e.maximum_efa_interfaces)
                .unwrap_or(1)
                .max(0) as u32
        } else {
            0
        };
        let gpu = info
            .gpu_info
            .as_ref()
            .and_then(|g| g.gpus.as_ref()?.first().cloned())
            .map(|g| {
                (
                    g.count.unwrap_or(0).max(0) as u32,
                    g.name.unwrap_or_default().to_lowercase(),
                    g.manufacturer.unwrap_or_default().to_lowercase(),
                    g.memory_info
                        .and_then(|m| m.size_in_mib)
                        .unwrap_or(0)
                        .max(0) as u64,
                )
            });
        Some(TypeFacts {
            name,
            vcpus: info.v_cpu_info.as_ref()?.default_v_cpus?.max(0) as u32,
            memory_mib: info.memory_info.as_ref()?.size_in_mib?.max(0) as u64,
            arch,
            max_enis: net.maximum_network_interfaces.unwrap_or(1).max(1) as u32,
            ipv4_per_eni: net.ipv4_addresses_per_interface.unwrap_or(2).max(1) as u32,
            spot: info
                .supported_usage_classes
                .as_ref()
                .is_some_and(|u| u.iter().any(|c| c.as_str() == "spot")),
            accelerators: Accelerators {
                gpu: gpu.filter(|g| g.0 > 0),
                neuron,
                efa_interfaces,
            },
            local_nvme_gb: info
                .instance_storage_info
                .as_ref()
                .filter(|s| {
                    s.nvme_support
                        .as_ref()
                        .is_some_and(|n| n.as_str() != "unsupported")
                })
                .and_then(|s| s.total_size_in_gb)
                .filter(|gb| *gb > 0)
                .map(|gb| gb as u64),
            hypervisor: info
                .hypervisor
                .as_ref()
                .map(|h| h.as_str().to_string())
                .unwrap_or_default(),
            cpu_manufacturer: info
                .processor_info()
                .and_then(|p| p.manufacturer())
                .map(|m| m.trim().to_lowercase())
                .filter(|m| !m.is_empty()),
            network_bandwidth_mbps: network_bandwidth_mbps(net),
            ebs_bandwidth_mbps: info
                .ebs_info()
                .and_then(|e| e.ebs_optimized_info())
                .and_then(|o| o.baseline_bandwidth_in_mbps())
                .filter(|m| *m > 0)
                .map(|m| m as u64),
            nitro_enclaves: info
                .nitro_enclaves_support()
                .map(|n| n.as_str() == "supported"),
        })
    }
}

/// On-demand list price: the embedded catalog's when it knows the type, else a per-vCPU and
/// per-GiB estimate fitted to general-purpose types (m5.large: 2 × 0.024 + 8 × 0.006 = 0.096).
/// Used when the Pricing API is unreachable (it always is against moto).
pub fn on_demand_price(facts: &TypeFacts) -> f64 {
    if let Some(t) = ec2_data::find(&facts.name) {
        return t.on_demand_usd;
    }
    let gpu = facts
        .accelerators
        .gpu
        .as_ref()
        .map_or(0.0, |g| f64::from(g.0) * 0.50);
    let est = f64::from(facts.vcpus) * 0.024 + facts.memory_mib as f64 / 1024.0 * 0.006 + gpu;
    (est * 10_000.0).round() / 10_000.0
}

/// Prices by (type, zone) for spot; on-demand per type (from the Price List API; a type it did
/// not price falls back to [`on_demand_price`]).
#[derive(Debug, Clone, Default)]
pub struct Prices {
    pub spot: BTreeMap<(String, String), f64>,
    pub on_demand: BTreeMap<String, f64>,
    /// Windows Server (License Included) on-demand prices from the Price List API, by type.
    pub windows_on_demand: BTreeMap<String, f64>,
}

/// What a Windows node of the type adds to its Linux view when the Price List priced both
/// (the licence is the difference); None leaves the embedded Windows table in charge.
fn live_windows(facts: &TypeFacts, prices: &Prices) -> Option<WindowsFacts> {
    let linux = *prices.on_demand.get(&facts.name)?;
    let windows = *prices.windows_on_demand.get(&facts.name)?;
    let licence = ec2_windows::round_usd(windows - linux);
    if !licence.is_finite() || licence < 0.0 {
        tracing::warn!(instance_type = %facts.name, linux, windows, "a Windows price below the Linux one; using the embedded table");
        return None;
    }
    Some(WindowsFacts {
        licence_usd: licence,
        primary_eni_ipv4: facts.ipv4_per_eni,
    })
}

/// The scheduler's view of one type. `zones` are where EC2 offers it; `zone_ids` maps zone
/// names to IDs (DescribeAvailabilityZones) for the offerings' zone-ID labels.
pub fn to_instance_type(
    facts: &TypeFacts,
    zones: &BTreeSet<String>,
    zone_ids: &BTreeMap<String, String>,
    region: &str,
    prices: &Prices,
) -> InstanceType {
    let max_pods = overhead::eni_max_pods(facts.max_enis, facts.ipv4_per_eni);
    let mut capacity = Resources::new(
        i64::from(facts.vcpus) * 1000,
        overhead::memory_capacity(facts.memory_mib),
    )
    .with_pods(max_pods)
    .with_ephemeral(overhead::DEFAULT_ROOT_VOLUME);
    let mut l = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        l.insert(k.to_string(), v);
    };
    put(labels::ARCH, facts.arch.clone());
    put(labels::OS, "linux".into());
    put(labels::REGION, region.into());
    put(labels::INSTANCE_CPU, facts.vcpus.to_string());
    put(labels::INSTANCE_MEMORY, facts.memory_mib.to_string());
    put(
        labels::INSTANCE_FAMILY,
        ec2_data::family(&facts.name).into(),
    );
    put(labels::INSTANCE_SIZE, ec2_data::size(&facts.name).into());
    if let Some(p) = ec2_data::family_parts(&facts.name) {
        put(labels::INSTANCE_CATEGORY, p.category.into());
        put(labels::INSTANCE_GENERATION, p.generation.to_string());
    }
    if !facts.hypervisor.is_empty() {
        put(labels::INSTANCE_HYPERVISOR, facts.hypervisor.clone());
    }
    add_accelerators(&facts.accelerators, &mut capacity, &mut l);
    if let Some(gb) = facts.local_nvme_gb {
        l.insert(labels::INSTANCE_LOCAL_NVME.to_string(), gb.to_string());
    }
    if let Some(m) = &facts.cpu_manufacturer {
        l.insert(labels::INSTANCE_CPU_MANUFACTURER.to_string(), m.clone());
    }
    if let Some(mbps) = facts.network_bandwidth_mbps {
        l.insert(
            labels::INSTANCE_NETWORK_BANDWIDTH.to_string(),
            mbps.to_string(),
        );
    }
    if let Some(mbps) = facts.ebs_bandwidth_mbps {
        l.insert(labels::INSTANCE_EBS_BANDWIDTH.to_string(), mbps.to_string());
    }
    let od = prices
        .on_demand
        .get(&facts.name)
        .copied()
        .unwrap_or_else(|| on_demand_price(facts));
    let mut offerings = Vec::new();
    for z in zones {
        offerings.push(Offering {
            zone: z.clone(),
            zone_id: zone_ids.get(z).cloned(),
            capacity_type: labels::CAPACITY_TYPE_ON_DEMAND.into(),
            price: od,
            available: true,
            reservation: None,
        });
        if facts.spot {
            let spot = prices
                .spot
                .get(&(facts.name.clone(), z.clone()))
                .copied()
                .unwrap_or_else(|| {
                    ((od * ec2_data::spot_fraction(&facts.name)) * 10_000.0).round() / 10_000.0
                });
            offerings.push(Offering {
                zone: z.clone(),
                zone_id: zone_ids.get(z).cloned(),
                capacity_type: labels::CAPACITY_TYPE_SPOT.into(),
                price: spot,
                available: true,
                reservation: None,
            });
        }
    }
    let oh = overhead::default_overhead(facts.vcpus, max_pods, overhead::DEFAULT_ROOT_VOLUME);
    // The EBS CSI count of a type the embedded catalog knows (its NVMe disk count is not
    // read here); other types are planned without one.
    let t = InstanceType::new(&facts.name, capacity, oh, l, offerings)
        .with_ebs_attach_limit(ec2_data::find(&facts.name).map(ebs_limits::for_ec2_type))
        .with_nitro_enclaves(facts.nitro_enclaves)
        .with_network(Some(NetworkFacts {
            default_enis: facts.max_enis,
            ipv4_per_eni: facts.ipv4_per_eni,
        }));
    match live_windows(facts, prices) {
        Some(w) => t.with_windows(w),
        None => t,
    }
}

/// Everything one refresh learns; `on_demand` and `windows_on_demand` are the Price List
/// API's Linux and Windows prices (either may be empty).
pub async fn discover(
    ec2: &aws_sdk_ec2::Client,
    region: &str,
    on_demand: &BTreeMap<String, f64>,
    windows_on_demand: &BTreeMap<String, f64>,
) -> Result<Vec<Arc<InstanceType>>, AwsError> {
    let mut facts = Vec::new();
    let mut pages = ec2.describe_instance_types().into_paginator().send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(ec2_err("DescribeInstanceTypes"))?;
        facts.extend(
            page.instance_types
                .unwrap_or_default()
                .iter()
                .filter_map(TypeFacts::from_sdk),
        );
    }
    let mut zones: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut pages = ec2
        .describe_instance_type_offerings()
        .location_type(LocationType::AvailabilityZone)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(ec2_err("DescribeInstanceTypeOfferings"))?;
        for o in page.instance_type_offerings.unwrap_or_default() {
            if let (Some(t), Some(z)) = (o.instance_type, o.location) {
                zones.entry(t.as_str().to_string()).or_default().insert(z);
            }
        }
    }
    let zone_ids = zone_ids(ec2).await.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "availability zone IDs unavailable; nodes get no zone-id label");
        BTreeMap::new()
    });
    let prices = Prices {
        spot: spot_prices(ec2).await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "spot price history unavailable; using the catalog's spot fractions");
            BTreeMap::new()
        }),
        on_demand: on_demand.clone(),
        windows_on_demand: windows_on_demand.clone(),
    };
    Ok(facts
        .iter()
        .filter_map(|f| {
            let z = zones.get(&f.name)?;
            Some(Arc::new(to_instance_type(f, z, &zone_ids, region, &prices)))
        })
        .collect())
}

/// Zone name to zone ID (`us-east-1a` → `use1-az4`) for the region's zones
/// (DescribeAvailabilityZones' `ZoneName` and `ZoneId`).
pub async fn zone_ids(ec2: &aws_sdk_ec2::Client) -> Result<BTreeMap<String, String>, AwsError> {
    let resp = ec2
        .describe_availability_zones()
        .send()
        .await
        .map_err(ec2_err("DescribeAvailabilityZones"))?;
    Ok(resp
        .availability_zones
        .unwrap_or_default()
        .into_iter()
        .filter_map(|z| Some((z.zone_name?, z.zone_id?)))
        .collect())
}

/// The latest Linux spot price per (type, zone).
pub async fn spot_prices(
    ec2: &aws_sdk_ec2::Client,
) -> Result<BTreeMap<(String, String), f64>, AwsError> {
    let mut out = BTreeMap::new();
    let mut pages = ec2
        .describe_spot_price_history()
        .product_descriptions("Linux/UNIX")
        .start_time(aws_sdk_ec2::primitives::DateTime::from(
            std::time::SystemTime::now(),
        ))
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(ec2_err("DescribeSpotPriceHistory"))?;
        for p in page.spot_price_history.unwrap_or_default() {
            let (Some(t), Some(z), Some(price)) =
                (p.instance_type, p.availability_zone, p.spot_price)
            else {
                continue;
            };
            // "NaN" and "inf" parse as floats; a price that is not a finite, non-negative
            // number is no price (the type keeps its fallback).
            if let Some(price) = price
                .parse::<f64>()
                .ok()
                .filter(|p| p.is_finite() && *p >= 0.0)
            {
                out.entry((t.as_str().to_string(), z)).or_insert(price);
            }
        }
    }
    Ok(out)
}

/// A discovered list and when it was discovered (None: never).
type Snapshot = (Option<Instant>, Arc<Vec<Arc<InstanceType>>>);

/// The instance types last discovered, refreshed when older than `ttl`.
pub struct Catalog {
    ttl: Duration,
    inner: RwLock<Snapshot>,
    on_demand: tokio::sync::Mutex<OnDemandPrices>,
    /// The Price List's Windows prices, asked for and kept on the same terms as the Linux ones.
    windows_on_demand: tokio::sync::Mutex<OnDemandPrices>,
}

impl Catalog {
    pub fn new(ttl: Duration) -> Self {
        Catalog {
            ttl,
            inner: RwLock::new((None, Arc::new(Vec::new()))),
            on_demand: Default::default(),
            windows_on_demand: Default::default(),
        }
    }

    pub fn get(&self) -> Arc<Vec<Arc<InstanceType>>> {
        self.inner.read_or_recover().1.clone()
    }

    pub fn is_stale(&self, now: Instant) -> bool {
        self.inner
            .read_or_recover()
            .0
            .is_none_or(|at| now.duration_since(at) >= self.ttl)
    }

    pub fn set(&self, types: Vec<Arc<InstanceType>>, now: Instant) {
        *self.inner.write_or_recover() = (Some(now), Arc::new(types));
    }

    /// Refreshes from EC2 (and, when due, the Price List API) if stale; on failure the previous
    /// list stays.
    pub async fn refresh_if_stale(
        &self,
        ec2: &aws_sdk_ec2::Client,
        pricing_client: &aws_sdk_pricing::Client,
        region: &str,
    ) -> Result<(), AwsError> {
        if !self.is_stale(Instant::now()) {
            return Ok(());
        }
        let mut by_os = Vec::with_capacity(2);
        for (os, cache) in [
            (pricing::LINUX, &self.on_demand),
            (pricing::WINDOWS, &self.windows_on_demand),
        ] {
            let mut cached = cache.lock().await;
            if cached.is_due(Instant::now()) {
                let answer = pricing::fetch(pricing_client, region, os).await;
                cached.record(answer, Instant::now());
            }
            by_os.push(cached.get().clone());
        }
        let types = discover(ec2, region, &by_os[0], &by_os[1]).await?;
        tracing::info!(types = types.len(), "instance types refreshed");
        self.set(types, Instant::now());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adze_scheduling::resources::{EFA, GPU_AMD, GPU_NVIDIA, NEURON, NEURON_CORE};

    #[test]
    fn a_catalog_poisoned_by_a_panic_still_answers_and_refreshes() {
        let catalog = Arc::new(Catalog::new(Duration::from_secs(60)));
        let t0 = Instant::now();
        let holder = catalog.clone();
        let panicked = std::thread::spawn(move || {
            let _held = holder.inner.write();
            panic!("a bug while holding the catalog");
        })
        .join();
        assert!(panicked.is_err());
        assert!(catalog.inner.is_poisoned());
        assert!(catalog.is_stale(t0));
        assert!(catalog.get().is_empty());
        let zones = BTreeSet::from(["us-east-1a".to_string()]);
        let m5 = to_instance_type(
            &m5_large(),
            &zones,
            &BTreeMap::new(),
            "us-east-1",
            &Prices::default(),
        );
        let m5 = Arc::new(m5);
        catalog.set(vec![m5], t0);
        assert_eq!(catalog.get().len(), 1);
        assert!(!catalog.is_stale(t0));
    }

    fn m5_large() -> TypeFacts {
        TypeFacts {
            name: "m5.large".into(),
            vcpus: 2,
            memory_mib: 8192,
            arch: "amd64".into(),
            max_enis: 3,
            ipv4_per_eni: 10,
            spot: true,
            accelerators: Accelerators::default(),
            local_nvme_gb: None,
            hypervisor: "nitro".into(),
            cpu_manufacturer: Some("intel".into()),
            network_bandwidth_mbps: Some(750),
            ebs_bandwidth_mbps: Some(650),
            nitro_enclaves: None,
        }
    }

    /// A Windows node of `t` as a Windows class sees it, with its on-demand price in the zone.
    fn windows_on_demand(t: &InstanceType) -> Option<f64> {
        let w = adze_scheduling::node_class::as_windows(t, "10.0.20348")?;
        w.offerings
            .iter()
            .find(|o| o.capacity_type == "on-demand")
            .map(|o| o.price)
    }

    #[test]
    fn the_price_lists_windows_price_prices_windows_nodes_and_the_table_stands_in_without_it() {
        let zones = BTreeSet::from(["us-east-1a".to_string()]);
        let mut prices = Prices::default();
        prices.on_demand.insert("m5.large".into(), 0.1);
        // Without a live Windows price: the live Linux price plus the table's licence (0.092).
        let t = to_instance_type(&m5_large(), &zones, &BTreeMap::new(), "us-east-1", &prices);
        assert_eq!(t.windows, None);
        assert_eq!(windows_on_demand(&t), Some(0.192));
        // With one: exactly the Price List's Windows price, and its licence on spot too.
        prices.windows_on_demand.insert("m5.large".into(), 0.25);
        let t = to_instance_type(&m5_large(), &zones, &BTreeMap::new(), "us-east-1", &prices);
        assert_eq!(
            t.windows,
            Some(WindowsFacts {
                licence_usd: 0.15,
                primary_eni_ipv4: 10
            })
        );
        assert_eq!(windows_on_demand(&t), Some(0.25));
        // A type the embedded Windows table leaves out (burstable t3) becomes a Windows
        // node once the Price List prices it; it did not before.
        let mut t3 = m5_large();
        t3.name = "t3.medium".into();
        t3.memory_mib = 4096;
        t3.ipv4_per_eni = 6;
        let linux_only = to_instance_type(&t3, &zones, &BTreeMap::new(), "us-east-1", &prices);
        assert_eq!(windows_on_demand(&linux_only), None);
        prices.on_demand.insert("t3.medium".into(), 0.0416);
        prices.windows_on_demand.insert("t3.medium".into(), 0.06);
        let t = to_instance_type(&t3, &zones, &BTreeMap::new(), "us-east-1", &prices);
        assert_eq!(windows_on_demand(&t), Some(0.06));
        // A Windows price below the Linux one is not believed: the table decides (none here).
        prices.windows_on_demand.insert("t3.medium".into(), 0.01);
        let t = to_instance_type(&t3, &zones, &BTreeMap::new(), "us-east-1", &prices);
        assert_eq!(t.windows, None);
        assert_eq!(windows_on_demand(&t), None);
    }

    #[test]
    fn converted_type_matches_the_embedded_catalogs_shape_and_price() {
        let zones = BTreeSet::from(["us-east-1a".to_string(), "us-east-1b".to_string()]);
        let mut prices = Prices::default();
        prices
            .spot
            .insert(("m5.large".into(), "us-east-1b".into()), 0.031);
        let t = to_instance_type(&m5_large(), &zones, &BTreeMap::new(), "us-east-1", &prices);
        let embedded = adze_scheduling::catalog::embedded();
        let e = embedded.iter().find(|t| t.name == "m5.large").unwrap();
        assert_eq!(t.capacity, e.capacity);
        assert_eq!(t.allocatable(), e.allocatable());
        assert_eq!(t.capacity.pods, 29, "ENI-limited max pods");
        assert_eq!(t.offerings.len(), 4);
        let price = |z: &str, ct: &str| {
            t.offerings
                .iter()
                .find(|o| o.zone == z && o.capacity_type == ct)
                .unwrap()
                .price
        };
        assert_eq!(price("us-east-1a", "on-demand"), 0.096);
        assert_eq!(price("us-east-1b", "spot"), 0.031, "spot history wins");
        assert!(
            price("us-east-1a", "spot") < 0.096,
            "fraction when history has none"
        );
    }

    #[test]
    fn unknown_types_get_an_estimated_on_demand_price_and_no_spot_if_unsupported() {
        let mut f = m5_large();
        f.name = "zz9.large".into();
        f.spot = false;
        assert_eq!(on_demand_price(&f), 0.096);
        let t = to_instance_type(
            &f,
            &BTreeSet::from(["a".to_string()]),
            &BTreeMap::new(),
            "r",
            &Prices::default(),
        );
        assert!(t.offerings.iter().all(|o| o.capacity_type == "on-demand"));
    }

    #[test]
    fn nitro_enclaves_support_is_read_from_describe_instance_types_and_decides_for_a_class() {
        use aws_sdk_ec2::types::NitroEnclavesSupport;
        let zones = BTreeSet::from(["us-east-1a".to_string()]);
        let of = |support: Option<NitroEnclavesSupport>| {
            let mut info = described("m5d.large");
            info.nitro_enclaves_support = support;
            let facts = TypeFacts::from_sdk(&info).unwrap();
            let t = to_instance_type(
                &facts,
                &zones,
                &BTreeMap::new(),
                "us-east-1",
                &Prices::default(),
            );
            (
                facts.nitro_enclaves,
                adze_scheduling::node_class::enclaves_fit(&t),
            )
        };
        assert_eq!(
            of(Some(NitroEnclavesSupport::Supported)),
            (Some(true), true)
        );
        assert_eq!(
            of(Some(NitroEnclavesSupport::Unsupported)),
            (Some(false), false)
        );
        // Not reported: the embedded rule (no hypervisor reported here, so no).
        assert_eq!(of(None), (None, false));
    }

    /// DescribeInstanceTypes-shaped entries for an Inferentia2, an AMD GPU and an EFA type.
    fn described(name: &str) -> InstanceTypeInfo {
        use aws_sdk_ec2::types::*;
        let mut info = InstanceTypeInfo::builder()
            .instance_type(aws_sdk_ec2::types::InstanceType::from(name))
            .v_cpu_info(VCpuInfo::builder().default_v_cpus(32).build())
            .memory_info(MemoryInfo::builder().size_in_mib(131072).build())
            .processor_info(
                ProcessorInfo::builder()
                    .supported_architectures(ArchitectureType::X8664)
                    .build(),
            );
        let mut net = NetworkInfo::builder()
            .maximum_network_interfaces(8)
            .ipv4_addresses_per_interface(30);
        match name {
            "inf2.8xlarge" => {
                info = info.neuron_info(
                    NeuronInfo::builder()
                        .neuron_devices(
                            NeuronDeviceInfo::builder()
                                .count(1)
                                .name("Inferentia2")
                                .core_info(NeuronDeviceCoreInfo::builder().count(2).build())
                                .build(),
                        )
                        .build(),
                )
            }
            "g4ad.8xlarge" => {
                info = info.gpu_info(
                    GpuInfo::builder()
                        .gpus(
                            GpuDeviceInfo::builder()
                                .count(2)
                                .name("Radeon Pro V520")
                                .manufacturer("AMD")
                                .memory_info(
                                    GpuDeviceMemoryInfo::builder().size_in_mib(8192).build(),
                                )
                                .build(),
                        )
                        .build(),
                )
            }
            "m5d.large" => {
                info = info.instance_storage_info(
                    InstanceStorageInfo::builder()
                        .total_size_in_gb(75)
                        .nvme_support(EphemeralNvmeSupport::Required)
                        .build(),
                )
            }
            _ => {
                net = net
                    .efa_supported(true)
                    .efa_info(EfaInfo::builder().maximum_efa_interfaces(2).build())
            }
        }
        info.network_info(net.build()).build()
    }

    #[test]
    fn neuron_amd_and_efa_become_resources_and_labels() {
        let zones = BTreeSet::from(["us-east-1a".to_string()]);
        let to_type = |name: &str| {
            let facts = TypeFacts::from_sdk(&described(name)).unwrap();
            to_instance_type(
                &facts,
                &zones,
                &BTreeMap::new(),
                "us-east-1",
                &Prices::default(),
            )
        };
        let inf2 = to_type("inf2.8xlarge");
        assert_eq!(inf2.capacity.get(NEURON), 1);
        assert_eq!(inf2.capacity.get(NEURON_CORE), 2);
        assert_eq!(
            inf2.label(labels::INSTANCE_ACCELERATOR_MANUFACTURER),
            Some("aws")
        );
        assert_eq!(
            inf2.label(labels::INSTANCE_ACCELERATOR_NAME),
            Some("inferentia2")
        );
        assert_eq!(inf2.capacity.get(EFA), 0);
        let amd = to_type("g4ad.8xlarge");
        assert_eq!(amd.capacity.get(GPU_AMD), 2);
        assert_eq!(amd.capacity.get(GPU_NVIDIA), 0, "not an NVIDIA GPU");
        assert_eq!(amd.label(labels::INSTANCE_GPU_MANUFACTURER), Some("amd"));
        let efa = to_type("c6in.32xlarge");
        assert_eq!(efa.capacity.get(EFA), 2);
        assert_eq!(efa.label(labels::INSTANCE_EFA_COUNT), Some("2"));
        assert_eq!(efa.label(labels::INSTANCE_LOCAL_NVME), None);
        let nvme = to_type("m5d.large");
        assert_eq!(nvme.label(labels::INSTANCE_LOCAL_NVME), Some("75"));
    }

    /// A DescribeInstanceTypes entry with processor, network and EBS facts.
    fn with_io_facts(
        name: &str,
        manufacturer: &str,
        cards_gbps: &[f64],
        performance: &str,
        ebs_mbps: Option<i32>,
    ) -> InstanceTypeInfo {
        use aws_sdk_ec2::types::*;
        let mut net = NetworkInfo::builder()
            .maximum_network_interfaces(3)
            .ipv4_addresses_per_interface(10)
            .network_performance(performance);
        for (i, g) in cards_gbps.iter().enumerate() {
            net = net.network_cards(
                NetworkCardInfo::builder()
                    .network_card_index(i as i32)
                    .baseline_bandwidth_in_gbps(*g)
                    .build(),
            );
        }
        let mut ebs = EbsInfo::builder();
        if let Some(m) = ebs_mbps {
            ebs = ebs.ebs_optimized_info(
                EbsOptimizedInfo::builder()
                    .baseline_bandwidth_in_mbps(m)
                    .build(),
            );
        }
        InstanceTypeInfo::builder()
            .instance_type(aws_sdk_ec2::types::InstanceType::from(name))
            .v_cpu_info(VCpuInfo::builder().default_v_cpus(2).build())
            .memory_info(MemoryInfo::builder().size_in_mib(8192).build())
            .processor_info(
                ProcessorInfo::builder()
                    .supported_architectures(ArchitectureType::Arm64)
                    .manufacturer(manufacturer)
                    .build(),
            )
            .network_info(net.build())
            .ebs_info(ebs.build())
            .build()
    }

    #[test]
    fn cpu_manufacturer_and_network_and_ebs_bandwidth_become_labels() {
        let zones = BTreeSet::from(["us-east-1a".to_string(), "us-east-1b".to_string()]);
        let ids = BTreeMap::from([
            ("us-east-1a".to_string(), "use1-az4".to_string()),
            ("us-east-1b".to_string(), "use1-az6".to_string()),
        ]);
        let to_type = |info: InstanceTypeInfo| {
            let facts = TypeFacts::from_sdk(&info).unwrap();
            to_instance_type(&facts, &zones, &ids, "us-east-1", &Prices::default())
        };
        let graviton = to_type(with_io_facts(
            "m7g.large",
            "AWS",
            &[0.937],
            "Up to 12.5 Gigabit",
            Some(630),
        ));
        assert_eq!(
            graviton.label(labels::INSTANCE_CPU_MANUFACTURER),
            Some("aws")
        );
        assert_eq!(
            graviton.label(labels::INSTANCE_NETWORK_BANDWIDTH),
            Some("937")
        );
        assert_eq!(graviton.label(labels::INSTANCE_EBS_BANDWIDTH), Some("630"));
        // Two network cards: the node's bandwidth is both cards'.
        let two_cards = to_type(with_io_facts(
            "big.48xlarge",
            "Intel",
            &[100.0, 100.0],
            "200 Gigabit",
            Some(80_000),
        ));
        assert_eq!(
            two_cards.label(labels::INSTANCE_CPU_MANUFACTURER),
            Some("intel")
        );
        assert_eq!(
            two_cards.label(labels::INSTANCE_NETWORK_BANDWIDTH),
            Some("200000")
        );
        assert_eq!(
            two_cards.label(labels::INSTANCE_EBS_BANDWIDTH),
            Some("80000")
        );
        // No card figures: a fixed NetworkPerformance is a baseline, "Up to" is not.
        let fixed = to_type(with_io_facts("x.large", "AMD", &[], "25 Gigabit", None));
        assert_eq!(fixed.label(labels::INSTANCE_CPU_MANUFACTURER), Some("amd"));
        assert_eq!(
            fixed.label(labels::INSTANCE_NETWORK_BANDWIDTH),
            Some("25000")
        );
        assert_eq!(
            fixed.label(labels::INSTANCE_EBS_BANDWIDTH),
            None,
            "not EBS-optimized"
        );
        let burst = to_type(with_io_facts(
            "y.large",
            "AMD",
            &[],
            "Up to 5 Gigabit",
            None,
        ));
        assert_eq!(burst.label(labels::INSTANCE_NETWORK_BANDWIDTH), None);
        // Offerings carry their zone's ID; the type spans both.
        assert!(
            graviton
                .offerings
                .iter()
                .all(|o| o.zone_id.as_deref() == ids.get(&o.zone).map(String::as_str))
        );
        let spanned = graviton.requirements.get(labels::ZONE_ID).unwrap();
        assert!(spanned.allows("use1-az4") && spanned.allows("use1-az6"));
        assert!(!spanned.allows("use1-az1"));
    }

    #[test]
    fn catalog_is_stale_until_set_and_after_its_ttl() {
        let c = Catalog::new(Duration::from_secs(60));
        let now = Instant::now();
        assert!(c.is_stale(now));
        c.set(vec![], now);
        assert!(!c.is_stale(now + Duration::from_secs(59)));
        assert!(c.is_stale(now + Duration::from_secs(60)));
    }
}
