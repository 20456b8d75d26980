//! SDK clients for one region, optionally against a local endpoint (moto, or our fault proxy).

use std::time::Duration;

use aws_config::{BehaviorVersion, Region};

#[derive(Clone)]
pub struct Clients {
    pub ec2: aws_sdk_ec2::Client,
    pub ssm: aws_sdk_ssm::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub iam: aws_sdk_iam::Client,
    /// Only for DescribeCluster ([`crate::cluster`]).
    pub eks: aws_sdk_eks::Client,
    /// In the Price List API's own region (see [`crate::pricing::pricing_region`]).
    pub pricing: aws_sdk_pricing::Client,
    /// ARC zonal shift, only for GetManagedResource ([`crate::zonal_shift`]).
    pub arc: aws_sdk_arczonalshift::Client,
}

/// Every SDK request's User-Agent carries `app/adze-provisioner-<version>` (the SDK's app
/// name: no `/` allowed), so CloudTrail's userAgent field names Adze and its version.
fn app_name() -> aws_config::AppName {
    aws_config::AppName::new(concat!("adze-provisioner-", env!("CARGO_PKG_VERSION")))
        .expect("a literal of the characters AppName allows")
}

impl Clients {
    /// With `endpoint`, every service goes there, and credentials come from the environment or
    /// fixed test values (moto accepts any); without it, the SDK's default chain applies.
    pub async fn new(region: &str, endpoint: Option<&str>) -> Clients {
        let http = aws_smithy_http_client::Builder::new()
            .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
            ))
            .build_https();
        // The SDK sets no overall timeout: without one, a connection that stops answering
        // would hold a launch (and the batch behind it) forever. One attempt may take 40 s
        // (SQS long polls wait 20 s); the call as a whole, with retries, 2 minutes.
        let timeouts = aws_config::timeout::TimeoutConfig::builder()
            .connect_timeout(Duration::from_secs(5))
            .operation_attempt_timeout(Duration::from_secs(40))
            .operation_timeout(Duration::from_secs(120))
            .build();
        // EC2 throttles per account and per action class (RequestLimitExceeded). The default
        // three attempts give up within a couple of seconds, which a busy account exceeds;
        // adaptive mode also slows this client's own sends once it has been throttled.
        let retries = aws_config::retry::RetryConfig::adaptive().with_max_attempts(8);
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .app_name(app_name())
            .region(Region::new(region.to_string()))
            .timeout_config(timeouts)
            .retry_config(retries)
            .http_client(http);
        if let Some(url) = endpoint {
            let key = std::env::var("AWS_ACCESS_KEY_ID").unwrap_or_else(|_| "testing".into());
            let secret =
                std::env::var("AWS_SECRET_ACCESS_KEY").unwrap_or_else(|_| "testing".into());
            loader = loader.endpoint_url(url).credentials_provider(
                aws_credential_types::Credentials::from_keys(key, secret, None),
            );
        }
        let conf = loader.load().await;
        Clients {
            ec2: aws_sdk_ec2::Client::new(&conf),
            ssm: aws_sdk_ssm::Client::new(&conf),
            sqs: aws_sdk_sqs::Client::new(&conf),
            iam: aws_sdk_iam::Client::new(&conf),
            eks: aws_sdk_eks::Client::new(&conf),
            arc: aws_sdk_arczonalshift::Client::new(&conf),
            // Shorter: prices are optional (the catalog stands in), and the first catalog
            // refresh, which startup waits for, asks for them.
            pricing: aws_sdk_pricing::Client::from_conf(
                aws_sdk_pricing::config::Builder::from(&conf)
                    .region(Region::new(crate::pricing::pricing_region(region)))
                    .timeout_config(
                        aws_config::timeout::TimeoutConfig::builder()
                            .connect_timeout(Duration::from_secs(5))
                            .operation_attempt_timeout(Duration::from_secs(15))
                            .operation_timeout(Duration::from_secs(30))
                            .build(),
                    )
                    .build(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_sdk_client_names_adze_and_its_version() {
        // An endpoint nothing listens on: building the clients makes no request.
        let c = Clients::new("us-east-1", Some("http://127.0.0.1:9")).await;
        let want = format!("adze-provisioner-{}", env!("CARGO_PKG_VERSION"));
        let names = [
            c.ec2.config().app_name(),
            c.ssm.config().app_name(),
            c.sqs.config().app_name(),
            c.iam.config().app_name(),
            c.eks.config().app_name(),
            c.pricing.config().app_name(),
        ];
        for name in names {
            assert_eq!(name.map(|n| n.as_ref()), Some(want.as_str()));
        }
    }
}
