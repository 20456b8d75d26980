//! Published facts about real EC2 instance types, as a typed, embedded table.
//!
//! Every row of [`TYPES`] was written by hand for this project from AWS's
//! published facts; no other project's generated file was copied. Where each
//! kind of fact comes from:
//!
//! * **vCPU, memory, architecture, GPU count/model/memory**: the Amazon EC2
//!   instance type pages (<https://aws.amazon.com/ec2/instance-types/>) and the
//!   "Amazon EC2 Instance Types" guide's specification tables, which match
//!   what `ec2:DescribeInstanceTypes` returns (`VCpuInfo.DefaultVCpus`,
//!   `MemoryInfo.SizeInMiB`, `ProcessorInfo.SupportedArchitectures`,
//!   `GpuInfo.Gpus[]`). Memory is in MiB (1 GiB = 1024 MiB), as the API
//!   reports it; GPU memory is per GPU.
//! * **Maximum ENIs and IPv4 addresses per ENI**: the EC2 User Guide table
//!   "IP addresses per network interface per instance type"
//!   (`NetworkInfo.MaximumNetworkInterfaces` / `Ipv4AddressesPerInterface`).
//!   With these, [`eni_max_pods`] reproduces the EKS ENI-limited max-pods
//!   figure, `enis * (ips - 1) + 2`, as published in the EKS `eni-max-pods`
//!   list (spot-checked in the tests below).
//! * **On-demand price**: us-east-1 Linux on-demand list prices (USD per
//!   hour, shared tenancy, no pre-installed software) as published on the
//!   EC2 on-demand pricing page in 2024. They are list prices, not what any
//!   account is billed, and they drift; refresh the table rather than patch
//!   individual rows.
//!   Other regions' offerings, prices and zones: [`super::regions`].
//! * **Hypervisor**: `"nitro"` for virtualized Nitro types, `""` for bare
//!   metal (`*.metal`, `*.metal-24xl`, ...) as `DescribeInstanceTypes`
//!   reports it, and `"xen"` for the older Xen-based p3 family.
//!
//! * **CPU manufacturer** (`ProcessorInfo.Manufacturer`): per family, from the
//!   processor named on each family's instance type page ([`CPU_MANUFACTURERS`]).
//!
//! * **Instance store** (`InstanceStorageInfo.TotalSizeInGB`, all NVMe SSD here):
//!   the "instance store volumes" table of the EC2 Instance Types guide (disks x
//!   size per disk, totalled). Graviton `*gd.2xlarge` is 474 GB (the API's
//!   figure; the marketing pages round the disk to 475). The `d` variants share
//!   vCPU, memory and ENI limits with their base family at the same size (c5d =
//!   c5, m6id = m6i, r7gd = r7g, ...); i4i's come from the ENI table like the
//!   others' (its 24xlarge has 30 addresses per ENI, not 50). The us-east-1
//!   prices of these rows were checked against the scrape
//!   `tools/region_catalog.py` reads (equal, or one of its known noise
//!   patterns: 0, +6 %, +10 %).
//! * **Cross-check** (2026-11): every row but p3's agrees on vCPU, memory, ENIs,
//!   IPv4 per ENI, instance-store total and hypervisor with the DescribeInstanceTypes
//!   snapshot moto 5.2.1 ships (`moto/ec2/resources/instance_types.json.gz`, the
//!   emulator `aws/ci/moto.sh` runs); moto has no p3 entries.
//!
//! Not recorded, so the embedded catalog's types carry no label for them: network
//! and EBS baseline bandwidth (`NetworkInfo.NetworkCards[].BaselineBandwidthInGbps`,
//! `EbsInfo.EbsOptimizedInfo.BaselineBandwidthInMbps`), and zone IDs, which differ per
//! account (the live catalog and the EC2NodeClass's subnets supply those).
//!
//! Coverage: the c/m/r families of generations 5 to 7 (Intel, AMD and
//! Graviton) and their local-NVMe `d` variants (c5d, m5d, r5d, c6id, m6id,
//! r6id, c6gd, m6gd, r6gd, c7gd, m7gd, r7gd), the storage-optimised i4i, the
//! t3/t3a/t4g burstable families, and the g4dn/g5/g6/p3 GPU families, each with
//! its own size ladder (e.g. c5 has 9xlarge/18xlarge where the others have
//! 8xlarge/16xlarge; Graviton families start at medium and stop at 16xlarge;
//! 6th-gen Intel/AMD and i4i go to 32xlarge; the AMD 6th generation and the
//! 7th-gen Intel go to 48xlarge). Types with instance store: every `d` variant,
//! i4i, g4dn, g5, g6 and trn1.2xlarge; the rest (p3, inf2, t*, the plain c/m/r)
//! are EBS-only.
//!
//! Spot prices are not stored: [`spot_fraction`] is a documented,
//! deterministic rule, not live market data.

/// One EC2 instance type as AWS publishes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ec2Type {
    pub name: &'static str,
    pub vcpu: u32,
    pub memory_mib: u64,
    /// "amd64" or "arm64" (Kubernetes' spelling).
    pub arch: &'static str,
    pub max_enis: u32,
    pub ipv4_per_eni: u32,
    pub gpu: Option<Gpu>,
    /// Linux on-demand price in USD per hour in [`REGION`].
    pub on_demand_usd: f64,
    /// "nitro", "xen", or "" for bare metal.
    pub hypervisor: &'static str,
    /// Total local NVMe instance store in GB (`InstanceStorageInfo.TotalSizeInGB`: the sum over
    /// all disks, decimal GB); 0 for EBS-only types. Sets `aws.adze.sh/instance-local-nvme`.
    pub local_nvme_gb: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gpu {
    pub count: u32,
    pub name: &'static str,
    pub manufacturer: &'static str,
    /// Memory per GPU.
    pub memory_mib: u64,
}

pub const REGION: &str = "us-east-1";
pub const ZONES: &[&str] = &["us-east-1a", "us-east-1b", "us-east-1c"];

/// NVIDIA T4 (g4dn): 16 GiB per GPU.
const T4: Gpu = Gpu {
    count: 1,
    name: "t4",
    manufacturer: "nvidia",
    memory_mib: 16_384,
};
/// NVIDIA A10G (g5): 24 GiB per GPU, as `DescribeInstanceTypes` reports it.
const A10G: Gpu = Gpu {
    count: 1,
    name: "a10g",
    manufacturer: "nvidia",
    memory_mib: 24_576,
};
/// NVIDIA L4 (g6): marketed as "24 GB"; recorded as 24 * 10^9 bytes in MiB
/// (22,888 MiB), deliberately a little below A10G's 24 GiB. The exact figure
/// `DescribeInstanceTypes` reports for g6 should be re-checked on refresh.
const L4: Gpu = Gpu {
    count: 1,
    name: "l4",
    manufacturer: "nvidia",
    memory_mib: 22_888,
};
/// NVIDIA V100 (p3): 16 GiB per GPU.
const V100: Gpu = Gpu {
    count: 1,
    name: "v100",
    manufacturer: "nvidia",
    memory_mib: 16_384,
};

/// The embedded catalog: one row per instance type, grouped by family and
/// ordered by size within a family. See the module docs for sources.
#[rustfmt::skip]
pub const TYPES: &[Ec2Type] = &[
    // ---- c5 ----
    Ec2Type { name: "c5.large", vcpu: 2, memory_mib: 4096, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.085, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c5.xlarge", vcpu: 4, memory_mib: 8192, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.17, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c5.2xlarge", vcpu: 8, memory_mib: 16384, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.34, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c5.4xlarge", vcpu: 16, memory_mib: 32768, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.68, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c5.9xlarge", vcpu: 36, memory_mib: 73728, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.53, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c5.12xlarge", vcpu: 48, memory_mib: 98304, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.04, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c5.18xlarge", vcpu: 72, memory_mib: 147456, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.06, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c5.24xlarge", vcpu: 96, memory_mib: 196608, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.08, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c5.metal", vcpu: 96, memory_mib: 196608, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.08, hypervisor: "", local_nvme_gb: 0 },
    // ---- c5a ----
    Ec2Type { name: "c5a.large", vcpu: 2, memory_mib: 4096, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.077, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c5a.xlarge", vcpu: 4, memory_mib: 8192, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.154, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c5a.2xlarge", vcpu: 8, memory_mib: 16384, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.308, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c5a.4xlarge", vcpu: 16, memory_mib: 32768, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.616, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c5a.8xlarge", vcpu: 32, memory_mib: 65536, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.232, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c5a.12xlarge", vcpu: 48, memory_mib: 98304, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.848, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c5a.16xlarge", vcpu: 64, memory_mib: 131072, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.464, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c5a.24xlarge", vcpu: 96, memory_mib: 196608, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.696, hypervisor: "nitro", local_nvme_gb: 0 },
    // ---- c5d ----
    Ec2Type { name: "c5d.large", vcpu: 2, memory_mib: 4096, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.096, hypervisor: "nitro", local_nvme_gb: 50 },
    Ec2Type { name: "c5d.xlarge", vcpu: 4, memory_mib: 8192, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.192, hypervisor: "nitro", local_nvme_gb: 100 },
    Ec2Type { name: "c5d.2xlarge", vcpu: 8, memory_mib: 16384, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.384, hypervisor: "nitro", local_nvme_gb: 200 },
    Ec2Type { name: "c5d.4xlarge", vcpu: 16, memory_mib: 32768, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.768, hypervisor: "nitro", local_nvme_gb: 400 },
    Ec2Type { name: "c5d.9xlarge", vcpu: 36, memory_mib: 73728, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.728, hypervisor: "nitro", local_nvme_gb: 900 },
    Ec2Type { name: "c5d.12xlarge", vcpu: 48, memory_mib: 98304, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.304, hypervisor: "nitro", local_nvme_gb: 1800 },
    Ec2Type { name: "c5d.18xlarge", vcpu: 72, memory_mib: 147456, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.456, hypervisor: "nitro", local_nvme_gb: 1800 },
    Ec2Type { name: "c5d.24xlarge", vcpu: 96, memory_mib: 196608, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.608, hypervisor: "nitro", local_nvme_gb: 3600 },
    Ec2Type { name: "c5d.metal", vcpu: 96, memory_mib: 196608, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.608, hypervisor: "", local_nvme_gb: 3600 },
    // ---- c6i ----
    Ec2Type { name: "c6i.large", vcpu: 2, memory_mib: 4096, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.085, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6i.xlarge", vcpu: 4, memory_mib: 8192, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.17, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6i.2xlarge", vcpu: 8, memory_mib: 16384, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.34, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6i.4xlarge", vcpu: 16, memory_mib: 32768, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.68, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6i.8xlarge", vcpu: 32, memory_mib: 65536, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.36, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6i.12xlarge", vcpu: 48, memory_mib: 98304, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.04, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6i.16xlarge", vcpu: 64, memory_mib: 131072, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.72, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6i.24xlarge", vcpu: 96, memory_mib: 196608, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.08, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6i.32xlarge", vcpu: 128, memory_mib: 262144, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 5.44, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6i.metal", vcpu: 128, memory_mib: 262144, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 5.44, hypervisor: "", local_nvme_gb: 0 },
    // ---- c6id ----
    Ec2Type { name: "c6id.large", vcpu: 2, memory_mib: 4096, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.1008, hypervisor: "nitro", local_nvme_gb: 118 },
    Ec2Type { name: "c6id.xlarge", vcpu: 4, memory_mib: 8192, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.2016, hypervisor: "nitro", local_nvme_gb: 237 },
    Ec2Type { name: "c6id.2xlarge", vcpu: 8, memory_mib: 16384, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.4032, hypervisor: "nitro", local_nvme_gb: 474 },
    Ec2Type { name: "c6id.4xlarge", vcpu: 16, memory_mib: 32768, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.8064, hypervisor: "nitro", local_nvme_gb: 950 },
    Ec2Type { name: "c6id.8xlarge", vcpu: 32, memory_mib: 65536, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.6128, hypervisor: "nitro", local_nvme_gb: 1900 },
    Ec2Type { name: "c6id.12xlarge", vcpu: 48, memory_mib: 98304, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.4192, hypervisor: "nitro", local_nvme_gb: 2850 },
    Ec2Type { name: "c6id.16xlarge", vcpu: 64, memory_mib: 131072, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.2256, hypervisor: "nitro", local_nvme_gb: 3800 },
    Ec2Type { name: "c6id.24xlarge", vcpu: 96, memory_mib: 196608, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.8384, hypervisor: "nitro", local_nvme_gb: 5700 },
    Ec2Type { name: "c6id.32xlarge", vcpu: 128, memory_mib: 262144, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 6.4512, hypervisor: "nitro", local_nvme_gb: 7600 },
    Ec2Type { name: "c6id.metal", vcpu: 128, memory_mib: 262144, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 6.4512, hypervisor: "", local_nvme_gb: 7600 },
    // ---- c6a ----
    Ec2Type { name: "c6a.large", vcpu: 2, memory_mib: 4096, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.0765, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6a.xlarge", vcpu: 4, memory_mib: 8192, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.153, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6a.2xlarge", vcpu: 8, memory_mib: 16384, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.306, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6a.4xlarge", vcpu: 16, memory_mib: 32768, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.612, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6a.8xlarge", vcpu: 32, memory_mib: 65536, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.224, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6a.12xlarge", vcpu: 48, memory_mib: 98304, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.836, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6a.16xlarge", vcpu: 64, memory_mib: 131072, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.448, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6a.24xlarge", vcpu: 96, memory_mib: 196608, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.672, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6a.32xlarge", vcpu: 128, memory_mib: 262144, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.896, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6a.48xlarge", vcpu: 192, memory_mib: 393216, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 7.344, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6a.metal", vcpu: 192, memory_mib: 393216, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 7.344, hypervisor: "", local_nvme_gb: 0 },
    // ---- c6g ----
    Ec2Type { name: "c6g.medium", vcpu: 1, memory_mib: 2048, arch: "arm64", max_enis: 2, ipv4_per_eni: 4, gpu: None, on_demand_usd: 0.034, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6g.large", vcpu: 2, memory_mib: 4096, arch: "arm64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.068, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6g.xlarge", vcpu: 4, memory_mib: 8192, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.136, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6g.2xlarge", vcpu: 8, memory_mib: 16384, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.272, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6g.4xlarge", vcpu: 16, memory_mib: 32768, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.544, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6g.8xlarge", vcpu: 32, memory_mib: 65536, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.088, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6g.12xlarge", vcpu: 48, memory_mib: 98304, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.632, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6g.16xlarge", vcpu: 64, memory_mib: 131072, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.176, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c6g.metal", vcpu: 64, memory_mib: 131072, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.176, hypervisor: "", local_nvme_gb: 0 },
    // ---- c6gd ----
    Ec2Type { name: "c6gd.medium", vcpu: 1, memory_mib: 2048, arch: "arm64", max_enis: 2, ipv4_per_eni: 4, gpu: None, on_demand_usd: 0.0384, hypervisor: "nitro", local_nvme_gb: 59 },
    Ec2Type { name: "c6gd.large", vcpu: 2, memory_mib: 4096, arch: "arm64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.0768, hypervisor: "nitro", local_nvme_gb: 118 },
    Ec2Type { name: "c6gd.xlarge", vcpu: 4, memory_mib: 8192, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.1536, hypervisor: "nitro", local_nvme_gb: 237 },
    Ec2Type { name: "c6gd.2xlarge", vcpu: 8, memory_mib: 16384, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.3072, hypervisor: "nitro", local_nvme_gb: 474 },
    Ec2Type { name: "c6gd.4xlarge", vcpu: 16, memory_mib: 32768, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.6144, hypervisor: "nitro", local_nvme_gb: 950 },
    Ec2Type { name: "c6gd.8xlarge", vcpu: 32, memory_mib: 65536, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.2288, hypervisor: "nitro", local_nvme_gb: 1900 },
    Ec2Type { name: "c6gd.12xlarge", vcpu: 48, memory_mib: 98304, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.8432, hypervisor: "nitro", local_nvme_gb: 2850 },
    Ec2Type { name: "c6gd.16xlarge", vcpu: 64, memory_mib: 131072, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.4576, hypervisor: "nitro", local_nvme_gb: 3800 },
    Ec2Type { name: "c6gd.metal", vcpu: 64, memory_mib: 131072, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.4576, hypervisor: "", local_nvme_gb: 3800 },
    // ---- c7i ----
    Ec2Type { name: "c7i.large", vcpu: 2, memory_mib: 4096, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.08925, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c7i.xlarge", vcpu: 4, memory_mib: 8192, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.1785, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c7i.2xlarge", vcpu: 8, memory_mib: 16384, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.357, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c7i.4xlarge", vcpu: 16, memory_mib: 32768, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.714, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c7i.8xlarge", vcpu: 32, memory_mib: 65536, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.428, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c7i.12xlarge", vcpu: 48, memory_mib: 98304, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.142, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c7i.16xlarge", vcpu: 64, memory_mib: 131072, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.856, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c7i.24xlarge", vcpu: 96, memory_mib: 196608, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.284, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c7i.48xlarge", vcpu: 192, memory_mib: 393216, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 8.568, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c7i.metal-24xl", vcpu: 96, memory_mib: 196608, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.284, hypervisor: "", local_nvme_gb: 0 },
    Ec2Type { name: "c7i.metal-48xl", vcpu: 192, memory_mib: 393216, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 8.568, hypervisor: "", local_nvme_gb: 0 },
    // ---- c7g ----
    Ec2Type { name: "c7g.medium", vcpu: 1, memory_mib: 2048, arch: "arm64", max_enis: 2, ipv4_per_eni: 4, gpu: None, on_demand_usd: 0.0363, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c7g.large", vcpu: 2, memory_mib: 4096, arch: "arm64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.0725, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c7g.xlarge", vcpu: 4, memory_mib: 8192, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.145, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c7g.2xlarge", vcpu: 8, memory_mib: 16384, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.29, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c7g.4xlarge", vcpu: 16, memory_mib: 32768, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.58, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c7g.8xlarge", vcpu: 32, memory_mib: 65536, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.16, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c7g.12xlarge", vcpu: 48, memory_mib: 98304, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.74, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c7g.16xlarge", vcpu: 64, memory_mib: 131072, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.32, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "c7g.metal", vcpu: 64, memory_mib: 131072, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.32, hypervisor: "", local_nvme_gb: 0 },
    // ---- c7gd ----
    Ec2Type { name: "c7gd.medium", vcpu: 1, memory_mib: 2048, arch: "arm64", max_enis: 2, ipv4_per_eni: 4, gpu: None, on_demand_usd: 0.0454, hypervisor: "nitro", local_nvme_gb: 59 },
    Ec2Type { name: "c7gd.large", vcpu: 2, memory_mib: 4096, arch: "arm64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.0907, hypervisor: "nitro", local_nvme_gb: 118 },
    Ec2Type { name: "c7gd.xlarge", vcpu: 4, memory_mib: 8192, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.1814, hypervisor: "nitro", local_nvme_gb: 237 },
    Ec2Type { name: "c7gd.2xlarge", vcpu: 8, memory_mib: 16384, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.3629, hypervisor: "nitro", local_nvme_gb: 474 },
    Ec2Type { name: "c7gd.4xlarge", vcpu: 16, memory_mib: 32768, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.7258, hypervisor: "nitro", local_nvme_gb: 950 },
    Ec2Type { name: "c7gd.8xlarge", vcpu: 32, memory_mib: 65536, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.4515, hypervisor: "nitro", local_nvme_gb: 1900 },
    Ec2Type { name: "c7gd.12xlarge", vcpu: 48, memory_mib: 98304, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.1773, hypervisor: "nitro", local_nvme_gb: 2850 },
    Ec2Type { name: "c7gd.16xlarge", vcpu: 64, memory_mib: 131072, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.903, hypervisor: "nitro", local_nvme_gb: 3800 },
    Ec2Type { name: "c7gd.metal", vcpu: 64, memory_mib: 131072, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.903, hypervisor: "", local_nvme_gb: 3800 },
    // ---- m5 ----
    Ec2Type { name: "m5.large", vcpu: 2, memory_mib: 8192, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.096, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m5.xlarge", vcpu: 4, memory_mib: 16384, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.192, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m5.2xlarge", vcpu: 8, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.384, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m5.4xlarge", vcpu: 16, memory_mib: 65536, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.768, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m5.8xlarge", vcpu: 32, memory_mib: 131072, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.536, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m5.12xlarge", vcpu: 48, memory_mib: 196608, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.304, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m5.16xlarge", vcpu: 64, memory_mib: 262144, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.072, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m5.24xlarge", vcpu: 96, memory_mib: 393216, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.608, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m5.metal", vcpu: 96, memory_mib: 393216, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.608, hypervisor: "", local_nvme_gb: 0 },
    // ---- m5a ----
    Ec2Type { name: "m5a.large", vcpu: 2, memory_mib: 8192, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.086, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m5a.xlarge", vcpu: 4, memory_mib: 16384, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.172, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m5a.2xlarge", vcpu: 8, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.344, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m5a.4xlarge", vcpu: 16, memory_mib: 65536, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.688, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m5a.8xlarge", vcpu: 32, memory_mib: 131072, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.376, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m5a.12xlarge", vcpu: 48, memory_mib: 196608, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.064, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m5a.16xlarge", vcpu: 64, memory_mib: 262144, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.752, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m5a.24xlarge", vcpu: 96, memory_mib: 393216, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.128, hypervisor: "nitro", local_nvme_gb: 0 },
    // ---- m5d ----
    Ec2Type { name: "m5d.large", vcpu: 2, memory_mib: 8192, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.113, hypervisor: "nitro", local_nvme_gb: 75 },
    Ec2Type { name: "m5d.xlarge", vcpu: 4, memory_mib: 16384, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.226, hypervisor: "nitro", local_nvme_gb: 150 },
    Ec2Type { name: "m5d.2xlarge", vcpu: 8, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.452, hypervisor: "nitro", local_nvme_gb: 300 },
    Ec2Type { name: "m5d.4xlarge", vcpu: 16, memory_mib: 65536, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.904, hypervisor: "nitro", local_nvme_gb: 600 },
    Ec2Type { name: "m5d.8xlarge", vcpu: 32, memory_mib: 131072, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.808, hypervisor: "nitro", local_nvme_gb: 1200 },
    Ec2Type { name: "m5d.12xlarge", vcpu: 48, memory_mib: 196608, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.712, hypervisor: "nitro", local_nvme_gb: 1800 },
    Ec2Type { name: "m5d.16xlarge", vcpu: 64, memory_mib: 262144, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.616, hypervisor: "nitro", local_nvme_gb: 2400 },
    Ec2Type { name: "m5d.24xlarge", vcpu: 96, memory_mib: 393216, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 5.424, hypervisor: "nitro", local_nvme_gb: 3600 },
    Ec2Type { name: "m5d.metal", vcpu: 96, memory_mib: 393216, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 5.424, hypervisor: "", local_nvme_gb: 3600 },
    // ---- m6i ----
    Ec2Type { name: "m6i.large", vcpu: 2, memory_mib: 8192, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.096, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6i.xlarge", vcpu: 4, memory_mib: 16384, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.192, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6i.2xlarge", vcpu: 8, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.384, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6i.4xlarge", vcpu: 16, memory_mib: 65536, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.768, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6i.8xlarge", vcpu: 32, memory_mib: 131072, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.536, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6i.12xlarge", vcpu: 48, memory_mib: 196608, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.304, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6i.16xlarge", vcpu: 64, memory_mib: 262144, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.072, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6i.24xlarge", vcpu: 96, memory_mib: 393216, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.608, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6i.32xlarge", vcpu: 128, memory_mib: 524288, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 6.144, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6i.metal", vcpu: 128, memory_mib: 524288, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 6.144, hypervisor: "", local_nvme_gb: 0 },
    // ---- m6id ----
    Ec2Type { name: "m6id.large", vcpu: 2, memory_mib: 8192, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.11865, hypervisor: "nitro", local_nvme_gb: 118 },
    Ec2Type { name: "m6id.xlarge", vcpu: 4, memory_mib: 16384, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.2373, hypervisor: "nitro", local_nvme_gb: 237 },
    Ec2Type { name: "m6id.2xlarge", vcpu: 8, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.4746, hypervisor: "nitro", local_nvme_gb: 474 },
    Ec2Type { name: "m6id.4xlarge", vcpu: 16, memory_mib: 65536, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.9492, hypervisor: "nitro", local_nvme_gb: 950 },
    Ec2Type { name: "m6id.8xlarge", vcpu: 32, memory_mib: 131072, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.8984, hypervisor: "nitro", local_nvme_gb: 1900 },
    Ec2Type { name: "m6id.12xlarge", vcpu: 48, memory_mib: 196608, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.8476, hypervisor: "nitro", local_nvme_gb: 2850 },
    Ec2Type { name: "m6id.16xlarge", vcpu: 64, memory_mib: 262144, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.7968, hypervisor: "nitro", local_nvme_gb: 3800 },
    Ec2Type { name: "m6id.24xlarge", vcpu: 96, memory_mib: 393216, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 5.6952, hypervisor: "nitro", local_nvme_gb: 5700 },
    Ec2Type { name: "m6id.32xlarge", vcpu: 128, memory_mib: 524288, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 7.5936, hypervisor: "nitro", local_nvme_gb: 7600 },
    Ec2Type { name: "m6id.metal", vcpu: 128, memory_mib: 524288, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 7.5936, hypervisor: "", local_nvme_gb: 7600 },
    // ---- m6a ----
    Ec2Type { name: "m6a.large", vcpu: 2, memory_mib: 8192, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.0864, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6a.xlarge", vcpu: 4, memory_mib: 16384, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.1728, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6a.2xlarge", vcpu: 8, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.3456, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6a.4xlarge", vcpu: 16, memory_mib: 65536, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.6912, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6a.8xlarge", vcpu: 32, memory_mib: 131072, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.3824, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6a.12xlarge", vcpu: 48, memory_mib: 196608, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.0736, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6a.16xlarge", vcpu: 64, memory_mib: 262144, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.7648, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6a.24xlarge", vcpu: 96, memory_mib: 393216, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.1472, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6a.32xlarge", vcpu: 128, memory_mib: 524288, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 5.5296, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6a.48xlarge", vcpu: 192, memory_mib: 786432, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 8.2944, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6a.metal", vcpu: 192, memory_mib: 786432, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 8.2944, hypervisor: "", local_nvme_gb: 0 },
    // ---- m6g ----
    Ec2Type { name: "m6g.medium", vcpu: 1, memory_mib: 4096, arch: "arm64", max_enis: 2, ipv4_per_eni: 4, gpu: None, on_demand_usd: 0.0385, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6g.large", vcpu: 2, memory_mib: 8192, arch: "arm64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.077, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6g.xlarge", vcpu: 4, memory_mib: 16384, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.154, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6g.2xlarge", vcpu: 8, memory_mib: 32768, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.308, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6g.4xlarge", vcpu: 16, memory_mib: 65536, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.616, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6g.8xlarge", vcpu: 32, memory_mib: 131072, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.232, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6g.12xlarge", vcpu: 48, memory_mib: 196608, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.848, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6g.16xlarge", vcpu: 64, memory_mib: 262144, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.464, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m6g.metal", vcpu: 64, memory_mib: 262144, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.464, hypervisor: "", local_nvme_gb: 0 },
    // ---- m6gd ----
    Ec2Type { name: "m6gd.medium", vcpu: 1, memory_mib: 4096, arch: "arm64", max_enis: 2, ipv4_per_eni: 4, gpu: None, on_demand_usd: 0.0452, hypervisor: "nitro", local_nvme_gb: 59 },
    Ec2Type { name: "m6gd.large", vcpu: 2, memory_mib: 8192, arch: "arm64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.0904, hypervisor: "nitro", local_nvme_gb: 118 },
    Ec2Type { name: "m6gd.xlarge", vcpu: 4, memory_mib: 16384, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.1808, hypervisor: "nitro", local_nvme_gb: 237 },
    Ec2Type { name: "m6gd.2xlarge", vcpu: 8, memory_mib: 32768, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.3616, hypervisor: "nitro", local_nvme_gb: 474 },
    Ec2Type { name: "m6gd.4xlarge", vcpu: 16, memory_mib: 65536, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.7232, hypervisor: "nitro", local_nvme_gb: 950 },
    Ec2Type { name: "m6gd.8xlarge", vcpu: 32, memory_mib: 131072, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.4464, hypervisor: "nitro", local_nvme_gb: 1900 },
    Ec2Type { name: "m6gd.12xlarge", vcpu: 48, memory_mib: 196608, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.1696, hypervisor: "nitro", local_nvme_gb: 2850 },
    Ec2Type { name: "m6gd.16xlarge", vcpu: 64, memory_mib: 262144, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.8928, hypervisor: "nitro", local_nvme_gb: 3800 },
    Ec2Type { name: "m6gd.metal", vcpu: 64, memory_mib: 262144, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.8928, hypervisor: "", local_nvme_gb: 3800 },
    // ---- m7i ----
    Ec2Type { name: "m7i.large", vcpu: 2, memory_mib: 8192, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.1008, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m7i.xlarge", vcpu: 4, memory_mib: 16384, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.2016, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m7i.2xlarge", vcpu: 8, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.4032, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m7i.4xlarge", vcpu: 16, memory_mib: 65536, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.8064, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m7i.8xlarge", vcpu: 32, memory_mib: 131072, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.6128, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m7i.12xlarge", vcpu: 48, memory_mib: 196608, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.4192, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m7i.16xlarge", vcpu: 64, memory_mib: 262144, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.2256, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m7i.24xlarge", vcpu: 96, memory_mib: 393216, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.8384, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m7i.48xlarge", vcpu: 192, memory_mib: 786432, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 9.6768, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m7i.metal-24xl", vcpu: 96, memory_mib: 393216, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.8384, hypervisor: "", local_nvme_gb: 0 },
    Ec2Type { name: "m7i.metal-48xl", vcpu: 192, memory_mib: 786432, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 9.6768, hypervisor: "", local_nvme_gb: 0 },
    // ---- m7g ----
    Ec2Type { name: "m7g.medium", vcpu: 1, memory_mib: 4096, arch: "arm64", max_enis: 2, ipv4_per_eni: 4, gpu: None, on_demand_usd: 0.0408, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m7g.large", vcpu: 2, memory_mib: 8192, arch: "arm64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.0816, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m7g.xlarge", vcpu: 4, memory_mib: 16384, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.1632, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m7g.2xlarge", vcpu: 8, memory_mib: 32768, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.3264, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m7g.4xlarge", vcpu: 16, memory_mib: 65536, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.6528, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m7g.8xlarge", vcpu: 32, memory_mib: 131072, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.3056, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m7g.12xlarge", vcpu: 48, memory_mib: 196608, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.9584, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m7g.16xlarge", vcpu: 64, memory_mib: 262144, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.6112, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "m7g.metal", vcpu: 64, memory_mib: 262144, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 2.6112, hypervisor: "", local_nvme_gb: 0 },
    // ---- m7gd ----
    Ec2Type { name: "m7gd.medium", vcpu: 1, memory_mib: 4096, arch: "arm64", max_enis: 2, ipv4_per_eni: 4, gpu: None, on_demand_usd: 0.0534, hypervisor: "nitro", local_nvme_gb: 59 },
    Ec2Type { name: "m7gd.large", vcpu: 2, memory_mib: 8192, arch: "arm64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.1068, hypervisor: "nitro", local_nvme_gb: 118 },
    Ec2Type { name: "m7gd.xlarge", vcpu: 4, memory_mib: 16384, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.2136, hypervisor: "nitro", local_nvme_gb: 237 },
    Ec2Type { name: "m7gd.2xlarge", vcpu: 8, memory_mib: 32768, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.4271, hypervisor: "nitro", local_nvme_gb: 474 },
    Ec2Type { name: "m7gd.4xlarge", vcpu: 16, memory_mib: 65536, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.8543, hypervisor: "nitro", local_nvme_gb: 950 },
    Ec2Type { name: "m7gd.8xlarge", vcpu: 32, memory_mib: 131072, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.7086, hypervisor: "nitro", local_nvme_gb: 1900 },
    Ec2Type { name: "m7gd.12xlarge", vcpu: 48, memory_mib: 196608, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.5628, hypervisor: "nitro", local_nvme_gb: 2850 },
    Ec2Type { name: "m7gd.16xlarge", vcpu: 64, memory_mib: 262144, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.4171, hypervisor: "nitro", local_nvme_gb: 3800 },
    Ec2Type { name: "m7gd.metal", vcpu: 64, memory_mib: 262144, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.4171, hypervisor: "", local_nvme_gb: 3800 },
    // ---- r5 ----
    Ec2Type { name: "r5.large", vcpu: 2, memory_mib: 16384, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.126, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r5.xlarge", vcpu: 4, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.252, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r5.2xlarge", vcpu: 8, memory_mib: 65536, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.504, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r5.4xlarge", vcpu: 16, memory_mib: 131072, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.008, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r5.8xlarge", vcpu: 32, memory_mib: 262144, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.016, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r5.12xlarge", vcpu: 48, memory_mib: 393216, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 3.024, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r5.16xlarge", vcpu: 64, memory_mib: 524288, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.032, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r5.24xlarge", vcpu: 96, memory_mib: 786432, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 6.048, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r5.metal", vcpu: 96, memory_mib: 786432, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 6.048, hypervisor: "", local_nvme_gb: 0 },
    // ---- r5a ----
    Ec2Type { name: "r5a.large", vcpu: 2, memory_mib: 16384, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.113, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r5a.xlarge", vcpu: 4, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.226, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r5a.2xlarge", vcpu: 8, memory_mib: 65536, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.452, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r5a.4xlarge", vcpu: 16, memory_mib: 131072, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.904, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r5a.8xlarge", vcpu: 32, memory_mib: 262144, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.808, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r5a.12xlarge", vcpu: 48, memory_mib: 393216, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.712, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r5a.16xlarge", vcpu: 64, memory_mib: 524288, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.616, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r5a.24xlarge", vcpu: 96, memory_mib: 786432, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 5.424, hypervisor: "nitro", local_nvme_gb: 0 },
    // ---- r5d ----
    Ec2Type { name: "r5d.large", vcpu: 2, memory_mib: 16384, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.144, hypervisor: "nitro", local_nvme_gb: 75 },
    Ec2Type { name: "r5d.xlarge", vcpu: 4, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.288, hypervisor: "nitro", local_nvme_gb: 150 },
    Ec2Type { name: "r5d.2xlarge", vcpu: 8, memory_mib: 65536, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.576, hypervisor: "nitro", local_nvme_gb: 300 },
    Ec2Type { name: "r5d.4xlarge", vcpu: 16, memory_mib: 131072, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.152, hypervisor: "nitro", local_nvme_gb: 600 },
    Ec2Type { name: "r5d.8xlarge", vcpu: 32, memory_mib: 262144, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.304, hypervisor: "nitro", local_nvme_gb: 1200 },
    Ec2Type { name: "r5d.12xlarge", vcpu: 48, memory_mib: 393216, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 3.456, hypervisor: "nitro", local_nvme_gb: 1800 },
    Ec2Type { name: "r5d.16xlarge", vcpu: 64, memory_mib: 524288, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.608, hypervisor: "nitro", local_nvme_gb: 2400 },
    Ec2Type { name: "r5d.24xlarge", vcpu: 96, memory_mib: 786432, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 6.912, hypervisor: "nitro", local_nvme_gb: 3600 },
    Ec2Type { name: "r5d.metal", vcpu: 96, memory_mib: 786432, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 6.912, hypervisor: "", local_nvme_gb: 3600 },
    // ---- r6i ----
    Ec2Type { name: "r6i.large", vcpu: 2, memory_mib: 16384, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.126, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6i.xlarge", vcpu: 4, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.252, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6i.2xlarge", vcpu: 8, memory_mib: 65536, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.504, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6i.4xlarge", vcpu: 16, memory_mib: 131072, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.008, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6i.8xlarge", vcpu: 32, memory_mib: 262144, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.016, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6i.12xlarge", vcpu: 48, memory_mib: 393216, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 3.024, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6i.16xlarge", vcpu: 64, memory_mib: 524288, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.032, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6i.24xlarge", vcpu: 96, memory_mib: 786432, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 6.048, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6i.32xlarge", vcpu: 128, memory_mib: 1048576, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 8.064, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6i.metal", vcpu: 128, memory_mib: 1048576, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 8.064, hypervisor: "", local_nvme_gb: 0 },
    // ---- r6id ----
    Ec2Type { name: "r6id.large", vcpu: 2, memory_mib: 16384, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.1512, hypervisor: "nitro", local_nvme_gb: 118 },
    Ec2Type { name: "r6id.xlarge", vcpu: 4, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.3024, hypervisor: "nitro", local_nvme_gb: 237 },
    Ec2Type { name: "r6id.2xlarge", vcpu: 8, memory_mib: 65536, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.6048, hypervisor: "nitro", local_nvme_gb: 474 },
    Ec2Type { name: "r6id.4xlarge", vcpu: 16, memory_mib: 131072, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.2096, hypervisor: "nitro", local_nvme_gb: 950 },
    Ec2Type { name: "r6id.8xlarge", vcpu: 32, memory_mib: 262144, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.4192, hypervisor: "nitro", local_nvme_gb: 1900 },
    Ec2Type { name: "r6id.12xlarge", vcpu: 48, memory_mib: 393216, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 3.6288, hypervisor: "nitro", local_nvme_gb: 2850 },
    Ec2Type { name: "r6id.16xlarge", vcpu: 64, memory_mib: 524288, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.8384, hypervisor: "nitro", local_nvme_gb: 3800 },
    Ec2Type { name: "r6id.24xlarge", vcpu: 96, memory_mib: 786432, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 7.2576, hypervisor: "nitro", local_nvme_gb: 5700 },
    Ec2Type { name: "r6id.32xlarge", vcpu: 128, memory_mib: 1048576, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 9.6768, hypervisor: "nitro", local_nvme_gb: 7600 },
    Ec2Type { name: "r6id.metal", vcpu: 128, memory_mib: 1048576, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 9.6768, hypervisor: "", local_nvme_gb: 7600 },
    // ---- r6a ----
    Ec2Type { name: "r6a.large", vcpu: 2, memory_mib: 16384, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.1134, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6a.xlarge", vcpu: 4, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.2268, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6a.2xlarge", vcpu: 8, memory_mib: 65536, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.4536, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6a.4xlarge", vcpu: 16, memory_mib: 131072, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.9072, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6a.8xlarge", vcpu: 32, memory_mib: 262144, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.8144, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6a.12xlarge", vcpu: 48, memory_mib: 393216, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.7216, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6a.16xlarge", vcpu: 64, memory_mib: 524288, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.6288, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6a.24xlarge", vcpu: 96, memory_mib: 786432, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 5.4432, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6a.32xlarge", vcpu: 128, memory_mib: 1048576, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 7.2576, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6a.48xlarge", vcpu: 192, memory_mib: 1572864, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 10.8864, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6a.metal", vcpu: 192, memory_mib: 1572864, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 10.8864, hypervisor: "", local_nvme_gb: 0 },
    // ---- r6g ----
    Ec2Type { name: "r6g.medium", vcpu: 1, memory_mib: 8192, arch: "arm64", max_enis: 2, ipv4_per_eni: 4, gpu: None, on_demand_usd: 0.0504, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6g.large", vcpu: 2, memory_mib: 16384, arch: "arm64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.1008, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6g.xlarge", vcpu: 4, memory_mib: 32768, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.2016, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6g.2xlarge", vcpu: 8, memory_mib: 65536, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.4032, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6g.4xlarge", vcpu: 16, memory_mib: 131072, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.8064, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6g.8xlarge", vcpu: 32, memory_mib: 262144, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.6128, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6g.12xlarge", vcpu: 48, memory_mib: 393216, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.4192, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6g.16xlarge", vcpu: 64, memory_mib: 524288, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.2256, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r6g.metal", vcpu: 64, memory_mib: 524288, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.2256, hypervisor: "", local_nvme_gb: 0 },
    // ---- r6gd ----
    Ec2Type { name: "r6gd.medium", vcpu: 1, memory_mib: 8192, arch: "arm64", max_enis: 2, ipv4_per_eni: 4, gpu: None, on_demand_usd: 0.0576, hypervisor: "nitro", local_nvme_gb: 59 },
    Ec2Type { name: "r6gd.large", vcpu: 2, memory_mib: 16384, arch: "arm64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.1152, hypervisor: "nitro", local_nvme_gb: 118 },
    Ec2Type { name: "r6gd.xlarge", vcpu: 4, memory_mib: 32768, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.2304, hypervisor: "nitro", local_nvme_gb: 237 },
    Ec2Type { name: "r6gd.2xlarge", vcpu: 8, memory_mib: 65536, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.4608, hypervisor: "nitro", local_nvme_gb: 474 },
    Ec2Type { name: "r6gd.4xlarge", vcpu: 16, memory_mib: 131072, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.9216, hypervisor: "nitro", local_nvme_gb: 950 },
    Ec2Type { name: "r6gd.8xlarge", vcpu: 32, memory_mib: 262144, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.8432, hypervisor: "nitro", local_nvme_gb: 1900 },
    Ec2Type { name: "r6gd.12xlarge", vcpu: 48, memory_mib: 393216, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.7648, hypervisor: "nitro", local_nvme_gb: 2850 },
    Ec2Type { name: "r6gd.16xlarge", vcpu: 64, memory_mib: 524288, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.6864, hypervisor: "nitro", local_nvme_gb: 3800 },
    Ec2Type { name: "r6gd.metal", vcpu: 64, memory_mib: 524288, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.6864, hypervisor: "", local_nvme_gb: 3800 },
    // ---- r7i ----
    Ec2Type { name: "r7i.large", vcpu: 2, memory_mib: 16384, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.1323, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r7i.xlarge", vcpu: 4, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.2646, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r7i.2xlarge", vcpu: 8, memory_mib: 65536, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.5292, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r7i.4xlarge", vcpu: 16, memory_mib: 131072, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.0584, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r7i.8xlarge", vcpu: 32, memory_mib: 262144, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.1168, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r7i.12xlarge", vcpu: 48, memory_mib: 393216, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 3.1752, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r7i.16xlarge", vcpu: 64, memory_mib: 524288, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.2336, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r7i.24xlarge", vcpu: 96, memory_mib: 786432, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 6.3504, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r7i.48xlarge", vcpu: 192, memory_mib: 1572864, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 12.7008, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r7i.metal-24xl", vcpu: 96, memory_mib: 786432, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 6.3504, hypervisor: "", local_nvme_gb: 0 },
    Ec2Type { name: "r7i.metal-48xl", vcpu: 192, memory_mib: 1572864, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 12.7008, hypervisor: "", local_nvme_gb: 0 },
    // ---- r7g ----
    Ec2Type { name: "r7g.medium", vcpu: 1, memory_mib: 8192, arch: "arm64", max_enis: 2, ipv4_per_eni: 4, gpu: None, on_demand_usd: 0.0536, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r7g.large", vcpu: 2, memory_mib: 16384, arch: "arm64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.1071, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r7g.xlarge", vcpu: 4, memory_mib: 32768, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.2142, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r7g.2xlarge", vcpu: 8, memory_mib: 65536, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.4284, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r7g.4xlarge", vcpu: 16, memory_mib: 131072, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 0.8568, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r7g.8xlarge", vcpu: 32, memory_mib: 262144, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.7136, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r7g.12xlarge", vcpu: 48, memory_mib: 393216, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.5704, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r7g.16xlarge", vcpu: 64, memory_mib: 524288, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.4272, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "r7g.metal", vcpu: 64, memory_mib: 524288, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 3.4272, hypervisor: "", local_nvme_gb: 0 },
    // ---- r7gd ----
    Ec2Type { name: "r7gd.medium", vcpu: 1, memory_mib: 8192, arch: "arm64", max_enis: 2, ipv4_per_eni: 4, gpu: None, on_demand_usd: 0.068, hypervisor: "nitro", local_nvme_gb: 59 },
    Ec2Type { name: "r7gd.large", vcpu: 2, memory_mib: 16384, arch: "arm64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.1361, hypervisor: "nitro", local_nvme_gb: 118 },
    Ec2Type { name: "r7gd.xlarge", vcpu: 4, memory_mib: 32768, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.2722, hypervisor: "nitro", local_nvme_gb: 237 },
    Ec2Type { name: "r7gd.2xlarge", vcpu: 8, memory_mib: 65536, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.5443, hypervisor: "nitro", local_nvme_gb: 474 },
    Ec2Type { name: "r7gd.4xlarge", vcpu: 16, memory_mib: 131072, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.0886, hypervisor: "nitro", local_nvme_gb: 950 },
    Ec2Type { name: "r7gd.8xlarge", vcpu: 32, memory_mib: 262144, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.1773, hypervisor: "nitro", local_nvme_gb: 1900 },
    Ec2Type { name: "r7gd.12xlarge", vcpu: 48, memory_mib: 393216, arch: "arm64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 3.2659, hypervisor: "nitro", local_nvme_gb: 2850 },
    Ec2Type { name: "r7gd.16xlarge", vcpu: 64, memory_mib: 524288, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.3546, hypervisor: "nitro", local_nvme_gb: 3800 },
    Ec2Type { name: "r7gd.metal", vcpu: 64, memory_mib: 524288, arch: "arm64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 4.3546, hypervisor: "", local_nvme_gb: 3800 },
    // ---- i4i (storage optimised) ----
    Ec2Type { name: "i4i.large", vcpu: 2, memory_mib: 16384, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: None, on_demand_usd: 0.172, hypervisor: "nitro", local_nvme_gb: 468 },
    Ec2Type { name: "i4i.xlarge", vcpu: 4, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.343, hypervisor: "nitro", local_nvme_gb: 937 },
    Ec2Type { name: "i4i.2xlarge", vcpu: 8, memory_mib: 65536, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.686, hypervisor: "nitro", local_nvme_gb: 1875 },
    Ec2Type { name: "i4i.4xlarge", vcpu: 16, memory_mib: 131072, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.373, hypervisor: "nitro", local_nvme_gb: 3750 },
    Ec2Type { name: "i4i.8xlarge", vcpu: 32, memory_mib: 262144, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 2.746, hypervisor: "nitro", local_nvme_gb: 7500 },
    Ec2Type { name: "i4i.12xlarge", vcpu: 48, memory_mib: 393216, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 4.118, hypervisor: "nitro", local_nvme_gb: 11250 },
    Ec2Type { name: "i4i.16xlarge", vcpu: 64, memory_mib: 524288, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 5.491, hypervisor: "nitro", local_nvme_gb: 15000 },
    Ec2Type { name: "i4i.24xlarge", vcpu: 96, memory_mib: 786432, arch: "amd64", max_enis: 15, ipv4_per_eni: 30, gpu: None, on_demand_usd: 8.2368, hypervisor: "nitro", local_nvme_gb: 22500 },
    Ec2Type { name: "i4i.32xlarge", vcpu: 128, memory_mib: 1048576, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 10.9824, hypervisor: "nitro", local_nvme_gb: 30000 },
    Ec2Type { name: "i4i.metal", vcpu: 128, memory_mib: 1048576, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: None, on_demand_usd: 10.982, hypervisor: "", local_nvme_gb: 30000 },
    // ---- t3 ----
    Ec2Type { name: "t3.nano", vcpu: 2, memory_mib: 512, arch: "amd64", max_enis: 2, ipv4_per_eni: 2, gpu: None, on_demand_usd: 0.0052, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "t3.micro", vcpu: 2, memory_mib: 1024, arch: "amd64", max_enis: 2, ipv4_per_eni: 2, gpu: None, on_demand_usd: 0.0104, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "t3.small", vcpu: 2, memory_mib: 2048, arch: "amd64", max_enis: 3, ipv4_per_eni: 4, gpu: None, on_demand_usd: 0.0208, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "t3.medium", vcpu: 2, memory_mib: 4096, arch: "amd64", max_enis: 3, ipv4_per_eni: 6, gpu: None, on_demand_usd: 0.0416, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "t3.large", vcpu: 2, memory_mib: 8192, arch: "amd64", max_enis: 3, ipv4_per_eni: 12, gpu: None, on_demand_usd: 0.0832, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "t3.xlarge", vcpu: 4, memory_mib: 16384, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.1664, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "t3.2xlarge", vcpu: 8, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.3328, hypervisor: "nitro", local_nvme_gb: 0 },
    // ---- t3a ----
    Ec2Type { name: "t3a.nano", vcpu: 2, memory_mib: 512, arch: "amd64", max_enis: 2, ipv4_per_eni: 2, gpu: None, on_demand_usd: 0.0047, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "t3a.micro", vcpu: 2, memory_mib: 1024, arch: "amd64", max_enis: 2, ipv4_per_eni: 2, gpu: None, on_demand_usd: 0.0094, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "t3a.small", vcpu: 2, memory_mib: 2048, arch: "amd64", max_enis: 2, ipv4_per_eni: 4, gpu: None, on_demand_usd: 0.0188, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "t3a.medium", vcpu: 2, memory_mib: 4096, arch: "amd64", max_enis: 3, ipv4_per_eni: 6, gpu: None, on_demand_usd: 0.0376, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "t3a.large", vcpu: 2, memory_mib: 8192, arch: "amd64", max_enis: 3, ipv4_per_eni: 12, gpu: None, on_demand_usd: 0.0752, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "t3a.xlarge", vcpu: 4, memory_mib: 16384, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.1504, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "t3a.2xlarge", vcpu: 8, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.3008, hypervisor: "nitro", local_nvme_gb: 0 },
    // ---- t4g ----
    Ec2Type { name: "t4g.nano", vcpu: 2, memory_mib: 512, arch: "arm64", max_enis: 2, ipv4_per_eni: 2, gpu: None, on_demand_usd: 0.0042, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "t4g.micro", vcpu: 2, memory_mib: 1024, arch: "arm64", max_enis: 2, ipv4_per_eni: 2, gpu: None, on_demand_usd: 0.0084, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "t4g.small", vcpu: 2, memory_mib: 2048, arch: "arm64", max_enis: 3, ipv4_per_eni: 4, gpu: None, on_demand_usd: 0.0168, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "t4g.medium", vcpu: 2, memory_mib: 4096, arch: "arm64", max_enis: 3, ipv4_per_eni: 6, gpu: None, on_demand_usd: 0.0336, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "t4g.large", vcpu: 2, memory_mib: 8192, arch: "arm64", max_enis: 3, ipv4_per_eni: 12, gpu: None, on_demand_usd: 0.0672, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "t4g.xlarge", vcpu: 4, memory_mib: 16384, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.1344, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "t4g.2xlarge", vcpu: 8, memory_mib: 32768, arch: "arm64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.2688, hypervisor: "nitro", local_nvme_gb: 0 },
    // ---- g4dn ----
    Ec2Type { name: "g4dn.xlarge", vcpu: 4, memory_mib: 16384, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: Some(Gpu { count: 1, ..T4 }), on_demand_usd: 0.526, hypervisor: "nitro", local_nvme_gb: 125 },
    Ec2Type { name: "g4dn.2xlarge", vcpu: 8, memory_mib: 32768, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: Some(Gpu { count: 1, ..T4 }), on_demand_usd: 0.752, hypervisor: "nitro", local_nvme_gb: 225 },
    Ec2Type { name: "g4dn.4xlarge", vcpu: 16, memory_mib: 65536, arch: "amd64", max_enis: 3, ipv4_per_eni: 10, gpu: Some(Gpu { count: 1, ..T4 }), on_demand_usd: 1.204, hypervisor: "nitro", local_nvme_gb: 225 },
    Ec2Type { name: "g4dn.8xlarge", vcpu: 32, memory_mib: 131072, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: Some(Gpu { count: 1, ..T4 }), on_demand_usd: 2.176, hypervisor: "nitro", local_nvme_gb: 900 },
    Ec2Type { name: "g4dn.12xlarge", vcpu: 48, memory_mib: 196608, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: Some(Gpu { count: 4, ..T4 }), on_demand_usd: 3.912, hypervisor: "nitro", local_nvme_gb: 900 },
    Ec2Type { name: "g4dn.16xlarge", vcpu: 64, memory_mib: 262144, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: Some(Gpu { count: 1, ..T4 }), on_demand_usd: 4.352, hypervisor: "nitro", local_nvme_gb: 900 },
    // ---- g5 ----
    Ec2Type { name: "g5.xlarge", vcpu: 4, memory_mib: 16384, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: Some(Gpu { count: 1, ..A10G }), on_demand_usd: 1.006, hypervisor: "nitro", local_nvme_gb: 250 },
    Ec2Type { name: "g5.2xlarge", vcpu: 8, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: Some(Gpu { count: 1, ..A10G }), on_demand_usd: 1.212, hypervisor: "nitro", local_nvme_gb: 450 },
    Ec2Type { name: "g5.4xlarge", vcpu: 16, memory_mib: 65536, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: Some(Gpu { count: 1, ..A10G }), on_demand_usd: 1.624, hypervisor: "nitro", local_nvme_gb: 600 },
    Ec2Type { name: "g5.8xlarge", vcpu: 32, memory_mib: 131072, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: Some(Gpu { count: 1, ..A10G }), on_demand_usd: 2.448, hypervisor: "nitro", local_nvme_gb: 900 },
    Ec2Type { name: "g5.12xlarge", vcpu: 48, memory_mib: 196608, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: Some(Gpu { count: 4, ..A10G }), on_demand_usd: 5.672, hypervisor: "nitro", local_nvme_gb: 3800 },
    Ec2Type { name: "g5.16xlarge", vcpu: 64, memory_mib: 262144, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: Some(Gpu { count: 1, ..A10G }), on_demand_usd: 4.096, hypervisor: "nitro", local_nvme_gb: 1900 },
    Ec2Type { name: "g5.24xlarge", vcpu: 96, memory_mib: 393216, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: Some(Gpu { count: 4, ..A10G }), on_demand_usd: 8.144, hypervisor: "nitro", local_nvme_gb: 3800 },
    Ec2Type { name: "g5.48xlarge", vcpu: 192, memory_mib: 786432, arch: "amd64", max_enis: 7, ipv4_per_eni: 50, gpu: Some(Gpu { count: 8, ..A10G }), on_demand_usd: 16.288, hypervisor: "nitro", local_nvme_gb: 7600 },
    // ---- g6 ----
    Ec2Type { name: "g6.xlarge", vcpu: 4, memory_mib: 16384, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: Some(Gpu { count: 1, ..L4 }), on_demand_usd: 0.8048, hypervisor: "nitro", local_nvme_gb: 250 },
    Ec2Type { name: "g6.2xlarge", vcpu: 8, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: Some(Gpu { count: 1, ..L4 }), on_demand_usd: 0.9776, hypervisor: "nitro", local_nvme_gb: 450 },
    Ec2Type { name: "g6.4xlarge", vcpu: 16, memory_mib: 65536, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: Some(Gpu { count: 1, ..L4 }), on_demand_usd: 1.3232, hypervisor: "nitro", local_nvme_gb: 600 },
    Ec2Type { name: "g6.8xlarge", vcpu: 32, memory_mib: 131072, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: Some(Gpu { count: 1, ..L4 }), on_demand_usd: 2.0144, hypervisor: "nitro", local_nvme_gb: 900 },
    Ec2Type { name: "g6.12xlarge", vcpu: 48, memory_mib: 196608, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: Some(Gpu { count: 4, ..L4 }), on_demand_usd: 4.6016, hypervisor: "nitro", local_nvme_gb: 3760 },
    Ec2Type { name: "g6.16xlarge", vcpu: 64, memory_mib: 262144, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: Some(Gpu { count: 1, ..L4 }), on_demand_usd: 3.3968, hypervisor: "nitro", local_nvme_gb: 1880 },
    Ec2Type { name: "g6.24xlarge", vcpu: 96, memory_mib: 393216, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: Some(Gpu { count: 4, ..L4 }), on_demand_usd: 6.6752, hypervisor: "nitro", local_nvme_gb: 3760 },
    Ec2Type { name: "g6.48xlarge", vcpu: 192, memory_mib: 786432, arch: "amd64", max_enis: 15, ipv4_per_eni: 50, gpu: Some(Gpu { count: 8, ..L4 }), on_demand_usd: 13.3504, hypervisor: "nitro", local_nvme_gb: 7520 },
    // ---- inf2, trn1 (Neuron accelerators: see NEURON) ----
    Ec2Type { name: "inf2.xlarge", vcpu: 4, memory_mib: 16384, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 0.7582, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "inf2.8xlarge", vcpu: 32, memory_mib: 131072, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: None, on_demand_usd: 1.9679, hypervisor: "nitro", local_nvme_gb: 0 },
    Ec2Type { name: "trn1.2xlarge", vcpu: 8, memory_mib: 32768, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: None, on_demand_usd: 1.3438, hypervisor: "nitro", local_nvme_gb: 474 },
    // ---- p3 ----
    Ec2Type { name: "p3.2xlarge", vcpu: 8, memory_mib: 62464, arch: "amd64", max_enis: 4, ipv4_per_eni: 15, gpu: Some(Gpu { count: 1, ..V100 }), on_demand_usd: 3.06, hypervisor: "xen", local_nvme_gb: 0 },
    Ec2Type { name: "p3.8xlarge", vcpu: 32, memory_mib: 249856, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: Some(Gpu { count: 4, ..V100 }), on_demand_usd: 12.24, hypervisor: "xen", local_nvme_gb: 0 },
    Ec2Type { name: "p3.16xlarge", vcpu: 64, memory_mib: 499712, arch: "amd64", max_enis: 8, ipv4_per_eni: 30, gpu: Some(Gpu { count: 8, ..V100 }), on_demand_usd: 24.48, hypervisor: "xen", local_nvme_gb: 0 },
];

/// Neuron devices per type (`NeuronInfo.NeuronDevices[]`: count, cores per device, name), from
/// the Inf2 and Trn1 instance pages.
pub const NEURON: &[(&str, u32, u32, &str)] = &[
    ("inf2.xlarge", 1, 2, "inferentia2"),
    ("inf2.8xlarge", 1, 2, "inferentia2"),
    ("trn1.2xlarge", 1, 2, "trainium"),
];

/// EFA interfaces (`NetworkInfo.EfaInfo.MaximumEfaInterfaces`) of the listed types that
/// support EFA, from the EC2 guide's EFA "supported instance types" list. Types not listed
/// are taken to have none.
pub const EFA_INTERFACES: &[(&str, u32)] = &[
    ("c6i.32xlarge", 1),
    ("m6i.32xlarge", 1),
    ("c7i.48xlarge", 1),
    ("g5.8xlarge", 1),
    ("g5.12xlarge", 1),
    ("g5.16xlarge", 1),
    ("g5.24xlarge", 1),
    ("g5.48xlarge", 1),
];

/// Each family's CPU manufacturer as `DescribeInstanceTypes` reports it
/// (`ProcessorInfo.Manufacturer`, lower-cased): Graviton is `aws`; the `a` attribute
/// is AMD EPYC; g5, g6 and inf2 also run AMD EPYC; the rest run Intel Xeon.
#[rustfmt::skip]
pub const CPU_MANUFACTURERS: &[(&str, &str)] = &[
    ("c5", "intel"), ("c5a", "amd"), ("c5d", "intel"), ("c6a", "amd"), ("c6g", "aws"),
    ("c6gd", "aws"), ("c6i", "intel"), ("c6id", "intel"),
    ("c7g", "aws"), ("c7gd", "aws"), ("c7i", "intel"),
    ("i4i", "intel"),
    ("g4dn", "intel"), ("g5", "amd"), ("g6", "amd"),
    ("inf2", "amd"), ("trn1", "intel"), ("p3", "intel"),
    ("m5", "intel"), ("m5a", "amd"), ("m5d", "intel"), ("m6a", "amd"), ("m6g", "aws"),
    ("m6gd", "aws"), ("m6i", "intel"), ("m6id", "intel"),
    ("m7g", "aws"), ("m7gd", "aws"), ("m7i", "intel"),
    ("r5", "intel"), ("r5a", "amd"), ("r5d", "intel"), ("r6a", "amd"), ("r6g", "aws"),
    ("r6gd", "aws"), ("r6i", "intel"), ("r6id", "intel"),
    ("r7g", "aws"), ("r7gd", "aws"), ("r7i", "intel"),
    ("t3", "intel"), ("t3a", "amd"), ("t4g", "aws"),
];

/// The CPU manufacturer of `name`'s family, if [`CPU_MANUFACTURERS`] lists it.
pub fn cpu_manufacturer(name: &str) -> Option<&'static str> {
    let fam = family(name);
    CPU_MANUFACTURERS
        .iter()
        .find(|(f, _)| *f == fam)
        .map(|(_, m)| *m)
}

/// A row's GPUs, Neuron devices and EFA interfaces, in the live catalog's shape.
pub fn accelerators(t: &Ec2Type) -> super::Accelerators {
    super::Accelerators {
        gpu: t.gpu.map(|g| {
            (
                g.count,
                g.name.to_string(),
                g.manufacturer.to_string(),
                g.memory_mib,
            )
        }),
        neuron: NEURON
            .iter()
            .find(|n| n.0 == t.name)
            .map(|n| (n.1, n.2, n.3.to_string())),
        efa_interfaces: EFA_INTERFACES
            .iter()
            .find(|e| e.0 == t.name)
            .map_or(0, |e| e.1),
    }
}

/// Spot price as a fraction of on-demand for a type (documented rule, not live data).
///
/// The rule models typical long-run spot discounts by category, so that
/// cost comparisons between spot and on-demand are stable and reproducible:
///
/// | category                                          | fraction |
/// |---------------------------------------------------|----------|
/// | burstable (`t3`, `t3a`, `t4g`)                    | 0.30     |
/// | GPU / accelerated (`g*`, `p*`, e.g. g4dn, g5, p3) | 0.45     |
/// | c/m/r generation 5 and older (c5, m5a, r5, ...)   | 0.33     |
/// | c/m/r generation 6 (c6i, m6a, r6g, ...)           | 0.36     |
/// | c/m/r generation 7 and newer (c7i, m7g, ...)      | 0.40     |
/// | anything else / unparseable name                  | 0.45     |
///
/// Reasoning: burstable pools are large and cheap, and have long run at
/// roughly 70% off. Older general-purpose generations have the deepest,
/// least contended capacity pools and the largest discounts; each newer
/// generation has less spare capacity, so its discount is smaller. GPU
/// capacity is scarce and heavily demanded, so its discount is the
/// smallest. Unknown types get the most conservative (highest) fraction so
/// that the rule never overstates spot savings. Architecture (Graviton or
/// x86) and size do not change the fraction. All values lie in 0.30..=0.45.
pub fn spot_fraction(name: &str) -> f64 {
    let Some(parts) = family_parts(name) else {
        return SPOT_FRACTION_UNKNOWN;
    };
    match parts.category {
        "t" => SPOT_FRACTION_BURSTABLE,
        "g" | "p" => SPOT_FRACTION_GPU,
        "c" | "m" | "r" => match parts.generation {
            0..=5 => SPOT_FRACTION_GEN5,
            6 => SPOT_FRACTION_GEN6,
            _ => SPOT_FRACTION_GEN7,
        },
        _ => SPOT_FRACTION_UNKNOWN,
    }
}

/// [`spot_fraction`] for burstable families.
pub const SPOT_FRACTION_BURSTABLE: f64 = 0.30;
/// [`spot_fraction`] for GPU families.
pub const SPOT_FRACTION_GPU: f64 = 0.45;
/// [`spot_fraction`] for c/m/r families of generation 5 and older.
pub const SPOT_FRACTION_GEN5: f64 = 0.33;
/// [`spot_fraction`] for c/m/r families of generation 6.
pub const SPOT_FRACTION_GEN6: f64 = 0.36;
/// [`spot_fraction`] for c/m/r families of generation 7 and newer.
pub const SPOT_FRACTION_GEN7: f64 = 0.40;
/// [`spot_fraction`] for anything the rule does not recognise.
pub const SPOT_FRACTION_UNKNOWN: f64 = 0.45;

/// The family part of an instance type name: `"c6g"` for `"c6g.xlarge"`.
pub fn family(name: &str) -> &str {
    name.split_once('.').map_or(name, |(family, _)| family)
}

/// The size part of an instance type name: `"xlarge"` for `"c6g.xlarge"`.
pub fn size(name: &str) -> &str {
    name.split_once('.').map_or("", |(_, size)| size)
}

/// A family name split per EC2's naming convention:
/// category letters, generation digits, then attribute letters.
/// `"g4dn"` is `("g", 4, "dn")`, `"c6g"` is `("c", 6, "g")`, `"m5"` is `("m", 5, "")`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FamilyParts<'a> {
    pub category: &'a str,
    pub generation: u32,
    pub attributes: &'a str,
}

/// Splits the family of `name` (either `"c6g"` or `"c6g.large"`) into its parts.
/// Returns `None` when the family has no category letters or no generation digit.
pub fn family_parts(name: &str) -> Option<FamilyParts<'_>> {
    let fam = family(name);
    let digits_at = fam.find(|c: char| c.is_ascii_digit())?;
    if digits_at == 0 {
        return None;
    }
    let rest = &fam[digits_at..];
    let digits_end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let generation = rest[..digits_end].parse().ok()?;
    Some(FamilyParts {
        category: &fam[..digits_at],
        generation,
        attributes: &rest[digits_end..],
    })
}

/// True for AWS Graviton (arm64) families: the attribute letters after the
/// generation contain `g` (c6g, m7g, r6g, t4g, c7gn, ...). GPU families such
/// as g4dn, g5 and g6 have `g` as their *category*, not as an attribute, so
/// they are not Graviton.
pub fn is_graviton(name: &str) -> bool {
    family_parts(name).is_some_and(|p| p.attributes.contains('g'))
}

/// True for the GPU / accelerated families in this table (category `g` or `p`).
pub fn is_gpu_family(name: &str) -> bool {
    family_parts(name).is_some_and(|p| p.category == "g" || p.category == "p")
}

/// True for burstable-performance families (category `t`).
pub fn is_burstable(name: &str) -> bool {
    family_parts(name).is_some_and(|p| p.category == "t")
}

/// True for bare-metal sizes (`metal`, `metal-24xl`, `metal-48xl`, ...).
pub fn is_metal(name: &str) -> bool {
    size(name).starts_with("metal")
}

/// The ENI-limited maximum number of pods EKS allows with the VPC CNI
/// (no prefix delegation): `enis * (ipv4_per_eni - 1) + 2`. The first address
/// of each ENI is the ENI's own; the `+ 2` is for host-network pods
/// (aws-node and kube-proxy).
pub fn eni_max_pods(t: &Ec2Type) -> u32 {
    t.max_enis * (t.ipv4_per_eni.saturating_sub(1)) + 2
}

/// Looks a type up by its exact name (an index built once: placement asks for every type of
/// the catalog in turn, and a scan each time made that quadratic).
pub fn find(name: &str) -> Option<&'static Ec2Type> {
    static BY_NAME: std::sync::OnceLock<std::collections::HashMap<&'static str, &'static Ec2Type>> =
        std::sync::OnceLock::new();
    BY_NAME
        .get_or_init(|| TYPES.iter().map(|t| (t.name, t)).collect())
        .get(name)
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    const GIB: u64 = 1024;

    fn by_family() -> BTreeMap<&'static str, Vec<&'static Ec2Type>> {
        let mut map: BTreeMap<&'static str, Vec<&'static Ec2Type>> = BTreeMap::new();
        for t in TYPES {
            map.entry(family(t.name)).or_default().push(t);
        }
        map
    }

    fn get(name: &str) -> &'static Ec2Type {
        find(name).unwrap_or_else(|| panic!("{name} missing from TYPES"))
    }

    #[test]
    fn names_are_unique_and_well_formed() {
        let mut seen = BTreeSet::new();
        for t in TYPES {
            assert!(seen.insert(t.name), "duplicate type {}", t.name);
            assert!(t.name.contains('.'), "{} has no size", t.name);
            assert!(
                family_parts(t.name).is_some(),
                "{} family does not parse",
                t.name
            );
        }
    }

    #[test]
    fn every_family_has_a_cpu_manufacturer_consistent_with_its_name() {
        for t in TYPES {
            let m = cpu_manufacturer(t.name)
                .unwrap_or_else(|| panic!("{} has no CPU manufacturer", t.name));
            assert_eq!(m == "aws", t.arch == "arm64", "{}", t.name);
            assert_eq!(m == "aws", is_graviton(t.name), "{}", t.name);
            let attrs = family_parts(t.name).unwrap().attributes;
            if attrs.contains('a') {
                assert_eq!(m, "amd", "{}", t.name);
            }
            if attrs.contains('i') {
                assert_eq!(m, "intel", "{}", t.name);
            }
        }
    }

    #[test]
    fn at_least_200_types() {
        assert!(TYPES.len() >= 200, "only {} types", TYPES.len());
    }

    #[test]
    fn required_families_are_covered() {
        let families = by_family();
        for fam in [
            "c5", "c5a", "c6i", "c6a", "c6g", "c7i", "c7g", "m5", "m5a", "m6i", "m6a", "m6g",
            "m7i", "m7g", "r5", "r5a", "r6i", "r6a", "r6g", "r7i", "r7g", "t3", "t3a", "t4g",
            "g4dn", "g5", "g6", "p3", "c5d", "m5d", "r5d", "c6id", "m6id", "r6id", "c6gd", "m6gd",
            "r6gd", "c7gd", "m7gd", "r7gd", "i4i",
        ] {
            assert!(families.contains_key(fam), "family {fam} missing");
        }
    }

    #[test]
    fn family_specific_size_ladders() {
        let sizes = |fam: &str| -> Vec<&'static str> {
            by_family()[fam]
                .iter()
                .filter(|t| !is_metal(t.name))
                .map(|t| size(t.name))
                .collect()
        };
        let std5 = [
            "large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge",
        ];
        let c5 = [
            "large", "xlarge", "2xlarge", "4xlarge", "9xlarge", "12xlarge", "18xlarge", "24xlarge",
        ];
        let grav = [
            "medium", "large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge",
        ];
        let burst = [
            "nano", "micro", "small", "medium", "large", "xlarge", "2xlarge",
        ];
        for fam in ["c5", "c5d"] {
            assert_eq!(sizes(fam), c5, "{fam}");
        }
        for fam in ["c5a", "m5", "m5a", "m5d", "r5", "r5a", "r5d"] {
            assert_eq!(sizes(fam), std5, "{fam}");
        }
        for fam in ["c6i", "m6i", "r6i", "c6id", "m6id", "r6id", "i4i"] {
            assert_eq!(sizes(fam), [&std5[..], &["32xlarge"]].concat(), "{fam}");
        }
        for fam in ["c6a", "m6a", "r6a"] {
            assert_eq!(
                sizes(fam),
                [&std5[..], &["32xlarge", "48xlarge"]].concat(),
                "{fam}"
            );
        }
        for fam in ["c7i", "m7i", "r7i"] {
            assert_eq!(sizes(fam), [&std5[..], &["48xlarge"]].concat(), "{fam}");
        }
        for fam in [
            "c6g", "c7g", "m6g", "m7g", "r6g", "r7g", "c6gd", "c7gd", "m6gd", "m7gd", "r6gd",
            "r7gd",
        ] {
            assert_eq!(sizes(fam), grav, "{fam}");
        }
        for fam in ["t3", "t3a", "t4g"] {
            assert_eq!(sizes(fam), burst, "{fam}");
        }
        assert_eq!(
            sizes("g4dn"),
            [
                "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"
            ]
        );
        let g = [
            "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge",
            "48xlarge",
        ];
        assert_eq!(sizes("g5"), g);
        assert_eq!(sizes("g6"), g);
        assert_eq!(sizes("p3"), ["2xlarge", "8xlarge", "16xlarge"]);
        // Sizes that do not exist in a family must not have been invented.
        for absent in [
            "c5.8xlarge",
            "c5.16xlarge",
            "m5.9xlarge",
            "c6g.24xlarge",
            "c5a.9xlarge",
            "g5.metal",
            "g6.metal",
            "c5d.8xlarge",
            "m5d.9xlarge",
            "c6id.48xlarge",
            "c6gd.24xlarge",
            "i4i.medium",
        ] {
            assert!(find(absent).is_none(), "{absent} does not exist");
        }
    }

    #[test]
    fn price_scales_linearly_within_family() {
        // Non-GPU, non-burstable families: price per vCPU is constant within
        // +-2%. Burstable families have a fixed vCPU count across small
        // sizes, so there the price is linear in memory instead. GPU
        // families are priced per GPU model/count and are not linear, nor are the Neuron
        // families (per device).
        for (fam, types) in by_family() {
            if is_gpu_family(fam) || NEURON.iter().any(|n| family(n.0) == fam) {
                continue;
            }
            let unit = |t: &Ec2Type| {
                if is_burstable(fam) {
                    t.on_demand_usd / t.memory_mib as f64
                } else {
                    t.on_demand_usd / f64::from(t.vcpu)
                }
            };
            let reference = unit(types.iter().find(|t| size(t.name) == "large").unwrap());
            for t in &types {
                let ratio = unit(t) / reference;
                assert!(
                    (0.98..=1.02).contains(&ratio),
                    "{}: unit price ratio {ratio:.4} vs {fam}.large",
                    t.name
                );
            }
        }
    }

    #[test]
    fn memory_per_vcpu_matches_family_category() {
        let mut checked = 0;
        for t in TYPES {
            let parts = family_parts(t.name).unwrap();
            let gib_per_vcpu = match parts.category {
                "c" => 2,
                "m" => 4,
                "r" | "i" => 8,
                _ => continue,
            };
            assert_eq!(
                t.memory_mib,
                u64::from(t.vcpu) * gib_per_vcpu * GIB,
                "{}",
                t.name
            );
            checked += 1;
        }
        assert!(checked > 150, "only {checked} c/m/r types checked");
    }

    #[test]
    fn arm64_exactly_for_graviton_families() {
        for t in TYPES {
            assert!(
                t.arch == "amd64" || t.arch == "arm64",
                "{}: arch {}",
                t.name,
                t.arch
            );
            assert_eq!(
                t.arch == "arm64",
                is_graviton(t.name),
                "{}: arch {}",
                t.name,
                t.arch
            );
        }
        for gpu_fam in ["g4dn.xlarge", "g5.xlarge", "g6.xlarge", "p3.2xlarge"] {
            assert!(!is_graviton(gpu_fam), "{gpu_fam} is not Graviton");
            assert_eq!(get(gpu_fam).arch, "amd64");
        }
        for grav in [
            "c6g", "c7g", "m6g", "m7g", "r6g", "r7g", "t4g", "c7gn", "g5g",
        ] {
            assert!(is_graviton(grav), "{grav} is Graviton");
        }
        for x86 in ["c5", "c5a", "c7i", "m6a", "t3a", "g4dn", "g5", "g6", "p3"] {
            assert!(!is_graviton(x86), "{x86} is not Graviton");
        }
    }

    #[test]
    fn eni_max_pods_within_published_bounds() {
        for t in TYPES {
            let pods = eni_max_pods(t);
            assert!((4..=737).contains(&pods), "{}: max pods {pods}", t.name);
            assert!(t.max_enis >= 2 && t.ipv4_per_eni >= 2, "{}", t.name);
        }
    }

    #[test]
    fn eni_max_pods_spot_checks() {
        // Values from the EKS eni-max-pods list, including its irregular rows.
        for (name, pods) in [
            ("t3.nano", 4),
            ("t3.small", 11),
            ("t3a.small", 8),
            ("t4g.small", 11),
            ("t3.medium", 17),
            ("t3.large", 35),
            ("t3.2xlarge", 58),
            ("c6g.medium", 8),
            ("m5.large", 29),
            ("c5.9xlarge", 234),
            ("c5.18xlarge", 737),
            ("m6i.32xlarge", 737),
            ("r7i.48xlarge", 737),
            ("g4dn.xlarge", 29),
            ("g4dn.12xlarge", 234),
            ("g4dn.16xlarge", 58),
            ("g5.xlarge", 58),
            ("g5.12xlarge", 737),
            ("g5.16xlarge", 234),
            ("g5.48xlarge", 345),
            ("g6.12xlarge", 234),
            ("g6.48xlarge", 737),
            ("p3.2xlarge", 58),
            ("p3.16xlarge", 234),
        ] {
            assert_eq!(eni_max_pods(get(name)), pods, "{name}");
        }
    }

    #[test]
    fn gpu_types_have_gpus_and_others_do_not() {
        let mut gpu_types = 0;
        for t in TYPES {
            if is_gpu_family(t.name) {
                let gpu = t.gpu.unwrap_or_else(|| panic!("{} has no gpu", t.name));
                assert!(gpu.count >= 1, "{}", t.name);
                assert_eq!(gpu.manufacturer, "nvidia", "{}", t.name);
                assert!(gpu.memory_mib >= 16 * 1000, "{}", t.name);
                let expected = match family(t.name) {
                    "g4dn" => "t4",
                    "g5" => "a10g",
                    "g6" => "l4",
                    "p3" => "v100",
                    other => panic!("unexpected GPU family {other}"),
                };
                assert_eq!(gpu.name, expected, "{}", t.name);
                gpu_types += 1;
            } else {
                assert!(t.gpu.is_none(), "{} should have no gpu", t.name);
            }
        }
        assert_eq!(gpu_types, 6 + 8 + 8 + 3);
        let count = |n: &str| get(n).gpu.unwrap().count;
        assert_eq!(count("g4dn.12xlarge"), 4);
        assert_eq!(count("g4dn.16xlarge"), 1);
        assert_eq!(count("g5.16xlarge"), 1);
        assert_eq!(count("g5.24xlarge"), 4);
        assert_eq!(count("g5.48xlarge"), 8);
        assert_eq!(count("g6.12xlarge"), 4);
        assert_eq!(count("p3.8xlarge"), 4);
        assert_eq!(count("p3.16xlarge"), 8);
    }

    #[test]
    fn hypervisor_values() {
        for t in TYPES {
            let expected = if is_metal(t.name) {
                ""
            } else if family(t.name) == "p3" {
                "xen"
            } else {
                "nitro"
            };
            assert_eq!(t.hypervisor, expected, "{}", t.name);
        }
    }

    #[test]
    fn basic_sanity() {
        for t in TYPES {
            assert!(t.vcpu >= 1, "{}", t.name);
            assert!(t.memory_mib >= 512, "{}", t.name);
            assert!(
                t.on_demand_usd > 0.0 && t.on_demand_usd < 100.0,
                "{}",
                t.name
            );
        }
        for z in ZONES {
            assert!(z.starts_with(REGION), "{z}");
        }
    }

    #[test]
    fn spot_checks_of_published_facts() {
        let c5 = get("c5.large");
        assert_eq!((c5.vcpu, c5.memory_mib, c5.on_demand_usd), (2, 4096, 0.085));
        let m5 = get("m5.24xlarge");
        assert_eq!(
            (m5.vcpu, m5.memory_mib, m5.on_demand_usd),
            (96, 384 * GIB, 4.608)
        );
        let t3 = get("t3.medium");
        assert_eq!(
            (t3.vcpu, t3.memory_mib, t3.on_demand_usd),
            (2, 4 * GIB, 0.0416)
        );
        let g5 = get("g5.xlarge");
        assert_eq!(
            (g5.vcpu, g5.memory_mib, g5.on_demand_usd),
            (4, 16 * GIB, 1.006)
        );
        let p3 = get("p3.2xlarge");
        assert_eq!(
            (p3.vcpu, p3.memory_mib, p3.on_demand_usd),
            (8, 61 * GIB, 3.06)
        );
        assert_eq!(get("c7g.medium").on_demand_usd, 0.0363);
        assert_eq!(get("g4dn.xlarge").on_demand_usd, 0.526);
    }

    #[test]
    fn instance_store_totals_match_the_published_disks() {
        // (type, disks x GB per disk) from the EC2 guide's instance store table.
        for (name, disks, gb) in [
            ("c5d.large", 1, 50),
            ("c5d.18xlarge", 2, 900),
            ("c5d.metal", 4, 900),
            ("m5d.large", 1, 75),
            ("m5d.16xlarge", 4, 600),
            ("r5d.4xlarge", 2, 300),
            ("c6id.2xlarge", 1, 474),
            ("m6id.24xlarge", 4, 1425),
            ("r6id.32xlarge", 4, 1900),
            ("c6gd.medium", 1, 59),
            ("m6gd.12xlarge", 2, 1425),
            ("r7gd.xlarge", 1, 237),
            ("m7gd.metal", 2, 1900),
            ("i4i.large", 1, 468),
            ("i4i.xlarge", 1, 937),
            ("i4i.32xlarge", 8, 3750),
            ("g4dn.xlarge", 1, 125),
            ("g4dn.16xlarge", 1, 900),
            ("g5.12xlarge", 1, 3800),
            ("g5.48xlarge", 2, 3800),
            ("g6.8xlarge", 2, 450),
            ("g6.48xlarge", 8, 940),
            ("trn1.2xlarge", 1, 474),
        ] {
            assert_eq!(get(name).local_nvme_gb, disks * gb, "{name}");
        }
        for ebs_only in [
            "m5.large",
            "c6i.32xlarge",
            "r7g.metal",
            "t3.micro",
            "p3.16xlarge",
        ] {
            assert_eq!(get(ebs_only).local_nvme_gb, 0, "{ebs_only}");
        }
        for name in ["inf2.xlarge", "inf2.8xlarge"] {
            assert_eq!(get(name).local_nvme_gb, 0, "{name} is EBS-only");
        }
    }

    #[test]
    fn instance_store_exactly_on_d_families_i4i_and_the_local_disk_gpu_types() {
        for t in TYPES {
            let parts = family_parts(t.name).unwrap();
            let has_store = (parts.category != "g" && parts.attributes.contains('d'))
                || parts.category == "i"
                || ["g4dn", "g5", "g6"].contains(&family(t.name))
                || t.name == "trn1.2xlarge";
            assert_eq!(t.local_nvme_gb > 0, has_store, "{}", t.name);
        }
    }

    #[test]
    fn d_variants_are_their_base_family_plus_disks_at_a_higher_price() {
        let mut checked = 0;
        for t in TYPES {
            let parts = family_parts(t.name).unwrap();
            if parts.category == "g" || !parts.attributes.ends_with('d') {
                continue;
            }
            let fam = family(t.name);
            let base = get(&format!("{}.{}", &fam[..fam.len() - 1], size(t.name)));
            assert_eq!(
                (t.vcpu, t.memory_mib, t.arch, t.max_enis, t.ipv4_per_eni),
                (
                    base.vcpu,
                    base.memory_mib,
                    base.arch,
                    base.max_enis,
                    base.ipv4_per_eni
                ),
                "{} vs {}",
                t.name,
                base.name
            );
            assert_eq!(t.hypervisor, base.hypervisor, "{}", t.name);
            assert_eq!(cpu_manufacturer(t.name), cpu_manufacturer(base.name));
            assert!(t.on_demand_usd > base.on_demand_usd, "{}", t.name);
            assert_eq!(base.local_nvme_gb, 0, "{}", base.name);
            checked += 1;
        }
        // c5d/m5d/r5d, c6gd/m6gd/r6gd and c7gd/m7gd/r7gd have 9 sizes; c6id/m6id/r6id 10.
        assert_eq!(checked, 9 * 9 + 3 * 10, "d rows checked");
    }

    #[test]
    fn instance_store_grows_with_size_within_a_d_family() {
        for (fam, types) in by_family() {
            if is_gpu_family(fam) {
                continue; // g5.12xlarge has more disk than g5.16xlarge
            }
            for w in types.windows(2) {
                assert!(
                    w[0].local_nvme_gb <= w[1].local_nvme_gb,
                    "{} > {}",
                    w[0].name,
                    w[1].name
                );
            }
        }
    }

    #[test]
    fn published_prices_of_instance_store_types() {
        for (name, usd) in [
            ("c5d.large", 0.096),
            ("c5d.9xlarge", 1.728),
            ("m5d.large", 0.113),
            ("r5d.24xlarge", 6.912),
            ("c6id.large", 0.1008),
            ("m6id.large", 0.11865),
            ("r6id.32xlarge", 9.6768),
            ("c6gd.medium", 0.0384),
            ("m6gd.large", 0.0904),
            ("r6gd.16xlarge", 3.6864),
            ("c7gd.medium", 0.0454),
            ("m7gd.large", 0.1068),
            ("r7gd.medium", 0.068),
            ("i4i.large", 0.172),
            ("i4i.4xlarge", 1.373),
        ] {
            assert_eq!(get(name).on_demand_usd, usd, "{name}");
        }
        let i4i = get("i4i.2xlarge");
        assert_eq!((i4i.vcpu, i4i.memory_mib), (8, 64 * GIB));
        assert_eq!(eni_max_pods(get("i4i.large")), 29);
        assert_eq!(eni_max_pods(get("i4i.16xlarge")), 737);
        assert_eq!(
            eni_max_pods(get("i4i.24xlarge")),
            437,
            "30 addresses per ENI, not 50"
        );
    }

    #[test]
    fn spot_fraction_rule() {
        for t in TYPES {
            let f = spot_fraction(t.name);
            assert!((0.30..=0.45).contains(&f), "{}: {f}", t.name);
            assert_eq!(f, spot_fraction(t.name), "deterministic");
            // Same family, same fraction, regardless of size.
            assert_eq!(f, spot_fraction(family(t.name)), "{}", t.name);
        }
        assert_eq!(spot_fraction("t3.medium"), SPOT_FRACTION_BURSTABLE);
        assert_eq!(spot_fraction("t4g.nano"), SPOT_FRACTION_BURSTABLE);
        assert_eq!(spot_fraction("g5.xlarge"), SPOT_FRACTION_GPU);
        assert_eq!(spot_fraction("p3.2xlarge"), SPOT_FRACTION_GPU);
        assert_eq!(spot_fraction("m5a.large"), SPOT_FRACTION_GEN5);
        assert_eq!(spot_fraction("c6g.large"), SPOT_FRACTION_GEN6);
        assert_eq!(spot_fraction("r7i.large"), SPOT_FRACTION_GEN7);
        assert_eq!(spot_fraction("nonsense"), SPOT_FRACTION_UNKNOWN);
        assert_eq!(spot_fraction("x2gd.large"), SPOT_FRACTION_UNKNOWN);
        // GPU discounts are the smallest, burstable the largest, newer generations shallower.
        assert!(spot_fraction("g4dn.xlarge") > spot_fraction("m7i.large"));
        assert!(spot_fraction("t3.large") < spot_fraction("m5.large"));
        assert!(spot_fraction("m5.large") < spot_fraction("m6i.large"));
        assert!(spot_fraction("m6i.large") < spot_fraction("m7i.large"));
    }

    #[test]
    fn family_parsing() {
        assert_eq!(
            family_parts("g4dn.xlarge"),
            Some(FamilyParts {
                category: "g",
                generation: 4,
                attributes: "dn"
            })
        );
        assert_eq!(
            family_parts("c6g"),
            Some(FamilyParts {
                category: "c",
                generation: 6,
                attributes: "g"
            })
        );
        assert_eq!(
            family_parts("m5"),
            Some(FamilyParts {
                category: "m",
                generation: 5,
                attributes: ""
            })
        );
        assert_eq!(family_parts("c7i.metal-24xl").unwrap().attributes, "i");
        assert_eq!(family_parts("nonsense"), None);
        assert_eq!(family_parts("5x.large"), None);
        assert_eq!(size("c7i.metal-48xl"), "metal-48xl");
        assert!(is_metal("c7i.metal-48xl") && is_metal("c5.metal") && !is_metal("c5.large"));
    }
}
