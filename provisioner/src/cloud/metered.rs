//! [`Metered`]: a [`CloudProvider`] that records every call of the provider it wraps —
//! `adze_cloudprovider_duration_seconds{method,provider}` and, on failure,
//! `adze_cloudprovider_errors_total{op,error}` — so no call site counts anything itself.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use adze_api::NodeClaim;
use adze_scheduling::InstanceType;
use futures::future::BoxFuture;

use super::{CloudError, CloudProvider, Instance, StatusCheck, ZonalShift};
use crate::metrics::{CloudCallLabels, CloudErrorLabels, Provisioner};

/// The trait's methods, as the `method` (and `op`) label names them.
pub const METHODS: [&str; 10] = [
    "create",
    "delete",
    "get",
    "list",
    "instance_types",
    "is_drifted",
    "drifted_claims",
    "instance_health",
    "zonal_shifts",
    "reboot",
];

/// The `error` label of a failed call.
pub fn error_kind(e: &CloudError) -> &'static str {
    match e {
        CloudError::InsufficientCapacity { .. } => "insufficient_capacity",
        CloudError::LaunchFailed { .. } => "launch_refused",
        CloudError::Other(_) => "other",
    }
}

pub struct Metered {
    inner: Arc<dyn CloudProvider>,
    metrics: &'static Provisioner,
}

impl Metered {
    /// Wraps `inner`, listing its methods' series at 0 (a launch can only fail for capacity
    /// or a refusal; any call can fail otherwise).
    pub fn wrap(inner: Arc<dyn CloudProvider>) -> Arc<dyn CloudProvider> {
        let metrics = crate::metrics::provisioner();
        for method in METHODS {
            let _ = metrics.cloud_duration.get_or_create(&CloudCallLabels {
                method: method.into(),
                provider: inner.name().into(),
            });
        }
        let errors = ["insufficient_capacity", "launch_refused", "other"]
            .map(|e| ("create", e))
            .into_iter()
            .chain(
                [
                    "delete",
                    "get",
                    "list",
                    "is_drifted",
                    "drifted_claims",
                    "instance_health",
                    "zonal_shifts",
                    "reboot",
                ]
                .map(|op| (op, "other")),
            );
        for (op, error) in errors {
            let _ = metrics.cloud_errors.get_or_create(&CloudErrorLabels {
                op: op.into(),
                error: error.into(),
            });
        }
        Arc::new(Metered { inner, metrics })
    }

    fn observe(&self, method: &str, start: Instant) {
        self.metrics
            .cloud_duration
            .get_or_create(&CloudCallLabels {
                method: method.into(),
                provider: self.inner.name().into(),
            })
            .observe(start.elapsed().as_secs_f64());
    }

    async fn call<T>(
        &self,
        method: &'static str,
        call: impl Future<Output = Result<T, CloudError>>,
    ) -> Result<T, CloudError> {
        let start = Instant::now();
        let result = call.await;
        self.observe(method, start);
        if let Err(e) = &result {
            self.metrics
                .cloud_errors
                .get_or_create(&CloudErrorLabels {
                    op: method.into(),
                    error: error_kind(e).into(),
                })
                .inc();
        }
        result
    }
}

impl CloudProvider for Metered {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn create<'a>(&'a self, claim: &'a NodeClaim) -> BoxFuture<'a, Result<Instance, CloudError>> {
        Box::pin(self.call("create", self.inner.create(claim)))
    }

    fn delete<'a>(&'a self, claim: &'a NodeClaim) -> BoxFuture<'a, Result<(), CloudError>> {
        Box::pin(self.call("delete", self.inner.delete(claim)))
    }

    fn get<'a>(
        &'a self,
        provider_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Instance>, CloudError>> {
        Box::pin(self.call("get", self.inner.get(provider_id)))
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<Instance>, CloudError>> {
        Box::pin(self.call("list", self.inner.list()))
    }

    fn instance_types(&self) -> Vec<Arc<InstanceType>> {
        let start = Instant::now();
        let types = self.inner.instance_types();
        self.observe("instance_types", start);
        types
    }

    fn is_drifted<'a>(&'a self, claim: &'a NodeClaim) -> BoxFuture<'a, Result<bool, CloudError>> {
        Box::pin(self.call("is_drifted", self.inner.is_drifted(claim)))
    }

    /// Forwarded (not left to the default, which would call the inner provider's per-claim
    /// check and lose its batch path), and timed as one call of its own.
    fn drifted_claims<'a>(
        &'a self,
        claims: &'a [Arc<NodeClaim>],
    ) -> BoxFuture<'a, Result<BTreeSet<String>, CloudError>> {
        Box::pin(self.call("drifted_claims", self.inner.drifted_claims(claims)))
    }

    /// Forwarded (the default would report nothing known for every provider).
    fn instance_health<'a>(
        &'a self,
        provider_ids: &'a [String],
    ) -> BoxFuture<'a, Result<std::collections::BTreeMap<String, Vec<StatusCheck>>, CloudError>>
    {
        Box::pin(self.call("instance_health", self.inner.instance_health(provider_ids)))
    }

    /// Forwarded (the default would refuse for every provider).
    fn reboot<'a>(&'a self, provider_id: &'a str) -> BoxFuture<'a, Result<(), CloudError>> {
        Box::pin(self.call("reboot", self.inner.reboot(provider_id)))
    }

    /// Forwarded (the default would report no shift for every provider).
    fn zonal_shifts(&self) -> BoxFuture<'_, Result<Vec<ZonalShift>, CloudError>> {
        Box::pin(self.call("zonal_shifts", self.inner.zonal_shifts()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fails every launch for capacity and every other call with `Other`.
    struct Failing;

    impl CloudProvider for Failing {
        fn name(&self) -> &'static str {
            "metered-test"
        }
        fn create<'a>(&'a self, _: &'a NodeClaim) -> BoxFuture<'a, Result<Instance, CloudError>> {
            Box::pin(async {
                Err(CloudError::InsufficientCapacity {
                    instance_type: "m5.large".into(),
                    zone: "us-east-1a".into(),
                    capacity_type: "spot".into(),
                    message: "none left".into(),
                })
            })
        }
        fn delete<'a>(&'a self, _: &'a NodeClaim) -> BoxFuture<'a, Result<(), CloudError>> {
            Box::pin(async { Ok(()) })
        }
        fn get<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Option<Instance>, CloudError>> {
            Box::pin(async { Ok(None) })
        }
        fn list(&self) -> BoxFuture<'_, Result<Vec<Instance>, CloudError>> {
            Box::pin(async { Err(CloudError::Other("throttled".into())) })
        }
        fn instance_types(&self) -> Vec<Arc<InstanceType>> {
            Vec::new()
        }
        fn is_drifted<'a>(&'a self, _: &'a NodeClaim) -> BoxFuture<'a, Result<bool, CloudError>> {
            Box::pin(async { Ok(false) })
        }
        fn drifted_claims<'a>(
            &'a self,
            _: &'a [Arc<NodeClaim>],
        ) -> BoxFuture<'a, Result<BTreeSet<String>, CloudError>> {
            Box::pin(async { Err(CloudError::Other("RequestLimitExceeded".into())) })
        }
        fn instance_health<'a>(
            &'a self,
            _: &'a [String],
        ) -> BoxFuture<'a, Result<std::collections::BTreeMap<String, Vec<StatusCheck>>, CloudError>>
        {
            Box::pin(async { Err(CloudError::Other("UnauthorizedOperation".into())) })
        }
        fn zonal_shifts(&self) -> BoxFuture<'_, Result<Vec<ZonalShift>, CloudError>> {
            Box::pin(async { Err(CloudError::Other("AccessDeniedException".into())) })
        }
    }

    fn claim() -> NodeClaim {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "adze.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c"},
            "spec": {"nodeClassRef": {"group": "aws.adze.sh", "kind": "EC2NodeClass", "name": "d"}},
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn every_call_is_timed_by_method_and_failures_counted_by_kind() {
        let cloud = Metered::wrap(Arc::new(Failing));
        assert_eq!(cloud.name(), "metered-test");
        let before = crate::metrics::render();
        assert!(
            before.contains(
                "\nadze_cloudprovider_duration_seconds_count{method=\"is_drifted\",provider=\"metered-test\"} 0\n"
            ),
            "listed at 0 before any call: {before}"
        );
        let errors = |op: &str, error: &str| {
            crate::metrics::provisioner()
                .cloud_errors
                .get(&CloudErrorLabels {
                    op: op.into(),
                    error: error.into(),
                })
                .map_or(0, |c| c.get())
        };
        let (ice, list, drift) = (
            errors("create", "insufficient_capacity"),
            errors("list", "other"),
            errors("drifted_claims", "other"),
        );
        // The batch call reaches the inner provider's own implementation, and its failure is
        // counted under its own label.
        assert!(cloud.drifted_claims(&[Arc::new(claim())]).await.is_err());
        assert_eq!(errors("drifted_claims", "other"), drift + 1);
        // So does the status-check read.
        let health = errors("instance_health", "other");
        assert!(cloud.instance_health(&["i-1".into()]).await.is_err());
        assert_eq!(errors("instance_health", "other"), health + 1);
        // And the zonal-shift read.
        let shifts = errors("zonal_shifts", "other");
        assert!(cloud.zonal_shifts().await.is_err());
        assert_eq!(errors("zonal_shifts", "other"), shifts + 1);
        // And a reboot the provider cannot do (the trait's default refuses).
        let reboots = errors("reboot", "other");
        assert!(cloud.reboot("i-1").await.is_err());
        assert_eq!(errors("reboot", "other"), reboots + 1);
        assert!(cloud.create(&claim()).await.is_err());
        assert!(cloud.list().await.is_err());
        cloud.delete(&claim()).await.unwrap();
        cloud.delete(&claim()).await.unwrap();
        assert!(cloud.instance_types().is_empty());
        assert_eq!(errors("create", "insufficient_capacity"), ice + 1);
        assert_eq!(errors("list", "other"), list + 1);
        let text = crate::metrics::render();
        for (method, n) in [
            ("create", 1),
            ("list", 1),
            ("delete", 2),
            ("get", 0),
            ("instance_types", 1),
            ("drifted_claims", 1),
            ("is_drifted", 0),
            ("instance_health", 1),
            ("zonal_shifts", 1),
            ("reboot", 1),
        ] {
            let line = format!(
                "\nadze_cloudprovider_duration_seconds_count{{method=\"{method}\",provider=\"metered-test\"}} {n}\n"
            );
            assert!(text.contains(&line), "{line} in {text}");
        }
        assert!(
            text.contains(
                "\nadze_cloudprovider_errors_total{op=\"create\",error=\"insufficient_capacity\"} "
            ),
            "{text}"
        );
    }
}
