//! On-demand prices from the AWS Price List API (`GetProducts`). AWS serves it from a few
//! regions only and many private clusters cannot reach it; then the embedded catalog's list
//! prices stand in, so a missing price never blocks a launch. Prices change rarely, so a
//! successful answer is kept for hours (see [`OnDemandPrices`]).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use aws_sdk_pricing::types::{Filter, FilterType};

use crate::error::AwsError;

/// How long a successful Price List answer is used before asking again.
pub const PRICES_TTL: Duration = Duration::from_secs(12 * 3600);
/// How long to wait before asking again after the API failed (or was never reached).
pub const RETRY_AFTER: Duration = Duration::from_secs(15 * 60);

/// The region whose Price List endpoint serves `region`'s prices: AWS runs the API in
/// us-east-1, eu-central-1 and ap-south-1 (and cn-northwest-1 for the China partition).
pub fn pricing_region(region: &str) -> &'static str {
    if region.starts_with("cn-") {
        "cn-northwest-1"
    } else if region.starts_with("eu-") || region.starts_with("il-") {
        "eu-central-1"
    } else if ["ap-", "me-", "af-"].iter().any(|p| region.starts_with(p)) {
        "ap-south-1"
    } else {
        "us-east-1"
    }
}

/// One `PriceList` document → (instance type, USD per hour) when it carries an hourly
/// on-demand price; `Ok(None)` for products that are not priced that way (or are free, which
/// only placeholder SKUs are). Errors name what is missing, so a format change is visible.
pub fn parse_product(doc: &str) -> Result<Option<(String, f64)>, String> {
    let v: serde_json::Value = serde_json::from_str(doc).map_err(|e| format!("not JSON: {e}"))?;
    let Some(instance_type) = v["product"]["attributes"]["instanceType"].as_str() else {
        return Err("product.attributes.instanceType missing".into());
    };
    let Some(terms) = v["terms"]["OnDemand"].as_object() else {
        return Ok(None);
    };
    for term in terms.values() {
        let Some(dims) = term["priceDimensions"].as_object() else {
            continue;
        };
        for dim in dims.values() {
            if dim["unit"].as_str() != Some("Hrs") {
                continue;
            }
            let Some(usd) = dim["pricePerUnit"]["USD"].as_str() else {
                continue;
            };
            let price: f64 = usd
                .parse()
                .map_err(|_| format!("{instance_type}: price {usd:?} is not a number"))?;
            if price > 0.0 {
                return Ok(Some((instance_type.to_string(), price)));
            }
        }
    }
    Ok(None)
}

/// The Price List's `operatingSystem` values Adze prices: Linux nodes, and Windows Server
/// nodes (License Included, no SQL Server), whose price less the Linux one is the licence.
pub const LINUX: &str = "Linux";
pub const WINDOWS: &str = "Windows";

/// Every shared-tenancy on-demand price in `region` for `operating_system` ([`LINUX`] or
/// [`WINDOWS`]), by instance type.
pub async fn fetch(
    client: &aws_sdk_pricing::Client,
    region: &str,
    operating_system: &str,
) -> Result<BTreeMap<String, f64>, AwsError> {
    let term = |field: &str, value: &str| {
        Filter::builder()
            .r#type(FilterType::TermMatch)
            .field(field)
            .value(value)
            .build()
            .expect("type, field and value are set")
    };
    let mut pages = client
        .get_products()
        .service_code("AmazonEC2")
        .format_version("aws_v1")
        .filters(term("regionCode", region))
        .filters(term("operatingSystem", operating_system))
        .filters(term("tenancy", "Shared"))
        .filters(term("preInstalledSw", "NA"))
        .filters(term("capacitystatus", "Used"))
        .filters(term("licenseModel", "No License required"))
        .max_results(100)
        .into_paginator()
        .send();
    let mut out = BTreeMap::new();
    let mut malformed = 0usize;
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| AwsError::Api {
            call: "GetProducts",
            message: aws_sdk_pricing::error::DisplayErrorContext(e).to_string(),
        })?;
        for doc in page.price_list.unwrap_or_default() {
            match parse_product(&doc) {
                Ok(Some((t, p))) => {
                    out.entry(t).or_insert(p);
                }
                Ok(None) => {}
                Err(e) => {
                    malformed += 1;
                    tracing::debug!(error = %e, "skipping a price list entry");
                }
            }
        }
    }
    if malformed > 0 {
        tracing::warn!(
            malformed,
            priced = out.len(),
            "some price list entries could not be read"
        );
    }
    Ok(out)
}

/// The last Price List answer, and when to ask again.
#[derive(Debug, Default)]
pub struct OnDemandPrices {
    prices: BTreeMap<String, f64>,
    next: Option<Instant>,
}

impl OnDemandPrices {
    /// Prices by type (empty until the API has answered once: callers fall back per type).
    pub fn get(&self) -> &BTreeMap<String, f64> {
        &self.prices
    }

    pub fn is_due(&self, now: Instant) -> bool {
        self.next.is_none_or(|at| now >= at)
    }

    /// Records an attempt: a non-empty answer replaces the prices for [`PRICES_TTL`]; a
    /// failure or an empty answer keeps the previous prices and retries after
    /// [`RETRY_AFTER`].
    pub fn record(&mut self, answer: Result<BTreeMap<String, f64>, AwsError>, now: Instant) {
        match answer {
            Ok(prices) if !prices.is_empty() => {
                tracing::info!(
                    types = prices.len(),
                    "on-demand prices from the Price List API"
                );
                self.prices = prices;
                self.next = Some(now + PRICES_TTL);
            }
            Ok(_) => {
                tracing::warn!(
                    "the Price List API returned no EC2 prices; using the embedded catalog's"
                );
                self.next = Some(now + RETRY_AFTER);
            }
            Err(e) => {
                tracing::warn!(error = %e, "Price List API unreachable; using the embedded catalog's on-demand prices");
                self.next = Some(now + RETRY_AFTER);
            }
        }
    }
}

/// One `PriceList` entry as GetProducts returns it (trimmed to the fields we read), for the
/// fault proxy and tests: moto has no Price List API.
pub fn product_document(
    instance_type: &str,
    region: &str,
    operating_system: &str,
    usd: &str,
) -> String {
    serde_json::json!({
        "product": {
            "productFamily": "Compute Instance",
            "attributes": {
                "instanceType": instance_type,
                "regionCode": region,
                "operatingSystem": operating_system,
                "tenancy": "Shared",
                "capacitystatus": "Used",
                "preInstalledSw": "NA"
            },
            "sku": "SKU1"
        },
        "serviceCode": "AmazonEC2",
        "terms": {
            "OnDemand": {
                "SKU1.JRTCKXETXF": {
                    "priceDimensions": {
                        "SKU1.JRTCKXETXF.6YS6EN2CT7": {
                            "unit": "Hrs",
                            "pricePerUnit": {"USD": usd},
                            "description": format!("per On Demand {operating_system} instance hour")
                        }
                    },
                    "sku": "SKU1",
                    "effectiveDate": "2026-11-01T00:00:00Z"
                }
            }
        }
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_hourly_on_demand_price_is_read_from_a_product_document() {
        assert_eq!(
            parse_product(&product_document(
                "m5.large",
                "us-east-1",
                LINUX,
                "0.0960000000"
            ))
            .unwrap(),
            Some(("m5.large".to_string(), 0.096))
        );
    }

    #[test]
    fn free_placeholder_skus_and_products_without_on_demand_terms_are_skipped() {
        assert_eq!(
            parse_product(&product_document(
                "m5.large",
                "us-east-1",
                LINUX,
                "0.0000000000"
            ))
            .unwrap(),
            None
        );
        let reserved_only = serde_json::json!({
            "product": {"attributes": {"instanceType": "m5.large"}},
            "terms": {"Reserved": {}}
        });
        assert_eq!(parse_product(&reserved_only.to_string()).unwrap(), None);
    }

    #[test]
    fn malformed_documents_are_errors_naming_what_is_wrong() {
        assert!(parse_product("{").unwrap_err().contains("not JSON"));
        let no_type = serde_json::json!({"product": {"attributes": {}}});
        assert!(
            parse_product(&no_type.to_string())
                .unwrap_err()
                .contains("instanceType")
        );
        assert!(
            parse_product(&product_document("m5.large", "us-east-1", LINUX, "cheap"))
                .unwrap_err()
                .contains("not a number")
        );
    }

    #[test]
    fn each_region_asks_the_price_list_endpoint_that_serves_it() {
        assert_eq!(pricing_region("us-west-2"), "us-east-1");
        assert_eq!(pricing_region("ca-central-1"), "us-east-1");
        assert_eq!(pricing_region("eu-west-1"), "eu-central-1");
        assert_eq!(pricing_region("ap-northeast-1"), "ap-south-1");
        assert_eq!(pricing_region("cn-north-1"), "cn-northwest-1");
    }

    #[test]
    fn a_good_answer_is_kept_for_hours_and_a_failure_keeps_it_and_retries_sooner() {
        let t0 = Instant::now();
        let mut p = OnDemandPrices::default();
        assert!(p.is_due(t0), "never asked: due at once");
        p.record(Ok(BTreeMap::from([("m5.large".into(), 0.1)])), t0);
        assert!(!p.is_due(t0 + RETRY_AFTER));
        assert!(p.is_due(t0 + PRICES_TTL));
        p.record(
            Err(AwsError::Api {
                call: "GetProducts",
                message: "timeout".into(),
            }),
            t0 + PRICES_TTL,
        );
        assert_eq!(p.get().get("m5.large"), Some(&0.1), "previous prices kept");
        assert!(p.is_due(t0 + PRICES_TTL + RETRY_AFTER));
        p.record(Ok(BTreeMap::new()), t0);
        assert_eq!(p.get().len(), 1, "an empty answer does not wipe prices");
    }
}
