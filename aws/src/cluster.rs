//! What a node needs to join this cluster: the API server endpoint, its CA, the service CIDR
//! (nodeadm refuses a NodeConfig without it and derives the cluster DNS address from it) and
//! the Kubernetes version (it picks the node image). Each comes from a flag when given, else
//! from the cluster itself: the API server's `/version`, EKS `DescribeCluster`, the pod's own
//! service-account CA. Anything still unknown stops the provisioner with the flag to set,
//! instead of launching nodes that can never join.

use std::net::IpAddr;

use thiserror::Error;

/// The settings written into every node's user data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterJoin {
    pub endpoint: String,
    /// Base64 of the CA bundle (PEM).
    pub ca: String,
    pub service_cidr: String,
    /// `MAJOR.MINOR`, e.g. `1.33`.
    pub version: String,
}

/// What the flags (chart values) set; `None` is "discover it".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    pub endpoint: Option<String>,
    pub ca: Option<String>,
    pub service_cidr: Option<String>,
    pub version: Option<String>,
}

/// What EKS `DescribeCluster` said, as far as it answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Described {
    pub endpoint: Option<String>,
    pub ca: Option<String>,
    pub service_cidr: Option<String>,
    pub version: Option<String>,
    /// The cluster's ARN: what ARC zonal shift knows it by ([`crate::zonal_shift`]).
    pub arn: Option<String>,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum JoinError {
    #[error("cannot tell nodes how to join: {what} unknown; set {flag} (chart value {value}){why}")]
    Missing {
        what: &'static str,
        flag: &'static str,
        value: &'static str,
        why: String,
    },
    #[error("{flag}: {message}")]
    Invalid { flag: &'static str, message: String },
}

/// Combines the sources, flags first. `apiserver_version` is the cluster's own `/version`
/// (`gitVersion`, e.g. `v1.33.2-eks-1234`); `local_ca` the base64 of this pod's
/// service-account CA; `describe_error` why DescribeCluster gave nothing, for the message.
pub fn resolve(
    overrides: &Overrides,
    described: &Described,
    apiserver_version: Option<&str>,
    local_ca: Option<&str>,
    describe_error: Option<&str>,
) -> Result<ClusterJoin, JoinError> {
    let why = describe_error
        .map(|e| format!(" (EKS DescribeCluster failed: {e})"))
        .unwrap_or_default();
    let pick = |a: &Option<String>, b: &Option<String>| {
        a.clone()
            .filter(|s| !s.trim().is_empty())
            .or_else(|| b.clone().filter(|s| !s.trim().is_empty()))
    };
    let missing = |what, flag, value| JoinError::Missing {
        what,
        flag,
        value,
        why: why.clone(),
    };
    let endpoint = pick(&overrides.endpoint, &described.endpoint).ok_or_else(|| {
        missing(
            "the API server endpoint",
            "--cluster-endpoint",
            "clusterEndpoint",
        )
    })?;
    if !endpoint.starts_with("https://") {
        return Err(JoinError::Invalid {
            flag: "--cluster-endpoint",
            message: format!("{endpoint:?} is not an https:// URL"),
        });
    }
    let ca = pick(&overrides.ca, &described.ca)
        .or_else(|| local_ca.map(String::from).filter(|s| !s.is_empty()))
        .ok_or_else(|| missing("the cluster CA", "--cluster-ca", "clusterCABundle"))?;
    check_ca(&ca)?;
    let service_cidr = pick(&overrides.service_cidr, &described.service_cidr)
        .ok_or_else(|| missing("the service CIDR", "--service-cidr", "serviceCIDR"))?;
    cluster_dns(&service_cidr).map_err(|message| JoinError::Invalid {
        flag: "--service-cidr",
        message,
    })?;
    let version = overrides
        .version
        .clone()
        .filter(|s| !s.is_empty())
        .or_else(|| apiserver_version.and_then(minor_version))
        .or_else(|| described.version.clone())
        .ok_or_else(|| {
            missing(
                "the Kubernetes version",
                "--kubernetes-version",
                "aws.kubernetesVersion",
            )
        })?;
    if minor_version(&version).as_deref() != Some(version.as_str()) {
        return Err(JoinError::Invalid {
            flag: "--kubernetes-version",
            message: format!("{version:?} is not MAJOR.MINOR (e.g. 1.33)"),
        });
    }
    Ok(ClusterJoin {
        endpoint,
        ca,
        service_cidr,
        version,
    })
}

/// `v1.33.2-eks-1234` or `1.33` → `1.33`.
pub fn minor_version(v: &str) -> Option<String> {
    let v = v.trim().trim_start_matches('v');
    let mut parts = v.split('.');
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: String = parts
        .next()?
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    let minor: u32 = minor.parse().ok()?;
    Some(format!("{major}.{minor}"))
}

/// The cluster DNS address kubelet is given: the service CIDR's tenth address (what the EKS
/// images and nodeadm derive, `10.100.0.10` for `10.100.0.0/16`; `…::a` for IPv6).
pub fn cluster_dns(cidr: &str) -> Result<String, String> {
    let (ip, bits) = cidr
        .split_once('/')
        .ok_or_else(|| format!("{cidr:?} is not a CIDR (ADDRESS/BITS)"))?;
    let ip: IpAddr = ip
        .parse()
        .map_err(|e| format!("{cidr:?}: bad address: {e}"))?;
    let bits: u32 = bits
        .parse()
        .map_err(|e| format!("{cidr:?}: bad prefix length: {e}"))?;
    match ip {
        IpAddr::V4(v4) if bits <= 28 => {
            let base = u32::from(v4) & (u32::MAX.checked_shl(32 - bits).unwrap_or(0));
            Ok(std::net::Ipv4Addr::from(base + 10).to_string())
        }
        IpAddr::V6(v6) if bits <= 124 => {
            let base = u128::from(v6) & (u128::MAX.checked_shl(128 - bits).unwrap_or(0));
            Ok(std::net::Ipv6Addr::from(base + 10).to_string())
        }
        _ => Err(format!(
            "{cidr:?}: prefix /{bits} leaves no room for services"
        )),
    }
}

/// The CA must be base64 of a PEM certificate: nodeadm and Bottlerocket refuse anything else,
/// and an empty one fails TLS on every node.
fn check_ca(ca: &str) -> Result<(), JoinError> {
    use base64::Engine;
    let bad = |message: String| JoinError::Invalid {
        flag: "--cluster-ca",
        message,
    };
    let pem = base64::engine::general_purpose::STANDARD
        .decode(ca.trim())
        .map_err(|e| bad(format!("not base64: {e}")))?;
    if !String::from_utf8_lossy(&pem).contains("-----BEGIN CERTIFICATE-----") {
        return Err(bad(
            "not base64 of a PEM certificate (-----BEGIN CERTIFICATE-----)".into(),
        ));
    }
    Ok(())
}

/// Asks EKS about the cluster; `Err` carries why it could not (no permission, not EKS).
pub async fn describe(eks: &aws_sdk_eks::Client, name: &str) -> Result<Described, String> {
    let out = eks
        .describe_cluster()
        .name(name)
        .send()
        .await
        .map_err(|e| aws_sdk_eks::error::DisplayErrorContext(e).to_string())?;
    let Some(c) = out.cluster else {
        return Ok(Described::default());
    };
    let net = c.kubernetes_network_config;
    Ok(Described {
        endpoint: c.endpoint,
        ca: c.certificate_authority.and_then(|a| a.data),
        service_cidr: net.as_ref().and_then(|n| {
            n.service_ipv4_cidr
                .clone()
                .or_else(|| n.service_ipv6_cidr.clone())
        }),
        version: c.version,
        arn: c.arn,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn ca() -> String {
        base64::engine::general_purpose::STANDARD
            .encode("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    }

    fn eks() -> Described {
        Described {
            endpoint: Some("https://ABC.gr7.us-east-1.eks.amazonaws.com".into()),
            ca: Some(ca()),
            service_cidr: Some("172.20.0.0/16".into()),
            version: Some("1.33".into()),
            arn: None,
        }
    }

    #[test]
    fn everything_comes_from_the_cluster_when_no_flag_is_set() {
        let j = resolve(
            &Overrides::default(),
            &eks(),
            Some("v1.33.4-eks-a1b2"),
            None,
            None,
        )
        .unwrap();
        assert_eq!(j.endpoint, "https://ABC.gr7.us-east-1.eks.amazonaws.com");
        assert_eq!(j.service_cidr, "172.20.0.0/16");
        assert_eq!(j.version, "1.33");
    }

    #[test]
    fn flags_win_and_the_apiserver_version_beats_describe_cluster() {
        let o = Overrides {
            endpoint: Some("https://10.0.0.1:6443".into()),
            service_cidr: Some("10.100.0.0/16".into()),
            ..Default::default()
        };
        let j = resolve(&o, &eks(), Some("v1.20.2"), None, None).unwrap();
        assert_eq!(j.endpoint, "https://10.0.0.1:6443");
        assert_eq!(j.service_cidr, "10.100.0.0/16");
        assert_eq!(
            j.version, "1.20",
            "the cluster's own version, never a default"
        );
    }

    #[test]
    fn a_missing_setting_names_the_flag_and_why_discovery_failed() {
        let o = Overrides {
            endpoint: Some("https://k8s:6443".into()),
            ca: Some(ca()),
            ..Default::default()
        };
        let err = resolve(
            &o,
            &Described::default(),
            Some("v1.30.1"),
            None,
            Some("AccessDeniedException"),
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("service CIDR"), "{text}");
        assert!(text.contains("--service-cidr"), "{text}");
        assert!(text.contains("serviceCIDR"), "{text}");
        assert!(text.contains("AccessDeniedException"), "{text}");
    }

    #[test]
    fn an_empty_or_non_pem_ca_is_refused() {
        let mut o = Overrides {
            endpoint: Some("https://k8s:6443".into()),
            service_cidr: Some("10.100.0.0/16".into()),
            version: Some("1.30".into()),
            ca: Some(String::new()),
        };
        let err = resolve(&o, &Described::default(), None, None, None).unwrap_err();
        assert!(err.to_string().contains("--cluster-ca"), "{err}");
        o.ca = Some("Q0EK".into()); // base64 of "CA\n"
        let err = resolve(&o, &Described::default(), None, None, None).unwrap_err();
        assert!(err.to_string().contains("PEM"), "{err}");
        // The pod's own service-account CA is the cluster's: used when nothing else says.
        o.ca = None;
        assert!(resolve(&o, &Described::default(), None, Some(&ca()), None).is_ok());
    }

    #[test]
    fn cluster_dns_is_the_tenth_service_address() {
        assert_eq!(cluster_dns("10.100.0.0/16").unwrap(), "10.100.0.10");
        assert_eq!(cluster_dns("172.20.0.0/16").unwrap(), "172.20.0.10");
        assert_eq!(cluster_dns("10.96.0.0/12").unwrap(), "10.96.0.10");
        assert_eq!(cluster_dns("fd12:3456::/108").unwrap(), "fd12:3456::a");
        assert!(cluster_dns("10.100.0.0").is_err());
        assert!(cluster_dns("10.100.0.0/31").is_err());
    }

    #[test]
    fn versions_are_cut_to_major_minor() {
        assert_eq!(minor_version("v1.33.2-eks-1234").as_deref(), Some("1.33"));
        assert_eq!(minor_version("1.30").as_deref(), Some("1.30"));
        assert_eq!(minor_version("latest"), None);
        let o = Overrides {
            version: Some("1.30.2".into()),
            ..Default::default()
        };
        let err = resolve(&o, &eks(), None, None, None).unwrap_err();
        assert!(err.to_string().contains("--kubernetes-version"), "{err}");
    }
}
