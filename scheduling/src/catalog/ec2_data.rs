//! Published facts about real EC2 instance types (placeholder: being filled in).

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

pub const TYPES: &[Ec2Type] = &[];

/// Spot price as a fraction of on-demand for a type (documented rule, not live data).
pub fn spot_fraction(_name: &str) -> f64 {
    0.35
}
