//! ARC zonal shift for `--enable-zonal-shift`: GetManagedResource on the EKS cluster's ARN
//! (one call, no pagination), its `zonalShifts` and `autoshifts` turned into
//! [`adze_cloud::ZonalShift`]s. Which of them count is
//! [`adze_scheduling::zonal_shift`]'s rule; this module only reads and checks what it reads.
//!
//! `zonalShifts` holds every shift on the cluster ARC reports as current — started by hand,
//! by zonal autoshift or by a practice run — each with the zone ID it moves away from
//! (`awayFrom`), its `expiryTime` and its `appliedStatus`. An entry in `autoshifts` has no
//! expiry of its own (it lasts until AWS ends it); it is read as lasting
//! [`AUTOSHIFT_HOLD_SECS`] from the reading, so a reading that can no longer be renewed (ARC
//! unreachable) does not hold a zone away for ever. IAM:
//! `arc-zonal-shift:GetManagedResource` on the cluster's ARN.

use adze_cloud::ZonalShift;
use aws_sdk_arczonalshift::operation::get_managed_resource::GetManagedResourceOutput;
use aws_sdk_arczonalshift::types::{AppliedStatus, AutoshiftAppliedStatus};

use crate::error::AwsError;

const CALL: &str = "GetManagedResource";

/// How long an autoshift (which carries no expiry) is held from the reading that saw it:
/// Karpenter's provider gives autoshifts a day.
pub const AUTOSHIFT_HOLD_SECS: i64 = 24 * 3600;

fn invalid(field: String, message: &str) -> AwsError {
    AwsError::Api {
        call: CALL,
        message: format!("{field}: {message}"),
    }
}

/// The shifts in one GetManagedResource answer, read at `now` (Unix seconds). An entry
/// without a zone, with no expiry or with an applied status this code does not know fails
/// the whole reading, naming the entry: a half-read answer must not read as "no shift".
pub fn shifts_of(out: &GetManagedResourceOutput, now: i64) -> Result<Vec<ZonalShift>, AwsError> {
    let mut shifts = Vec::new();
    for (i, z) in out.zonal_shifts().iter().enumerate() {
        let at = |f: &str| format!("zonalShifts[{i}].{f}");
        if z.away_from().is_empty() {
            return Err(invalid(at("awayFrom"), "missing"));
        }
        let expires_at = z.expiry_time().secs();
        if expires_at <= 0 {
            return Err(invalid(at("expiryTime"), "missing"));
        }
        let applied = match z.applied_status() {
            AppliedStatus::Applied => true,
            AppliedStatus::NotApplied => false,
            other => {
                return Err(invalid(
                    at("appliedStatus"),
                    &format!("{:?} is not APPLIED or NOT_APPLIED", other.as_str()),
                ));
            }
        };
        shifts.push(ZonalShift {
            away_from: z.away_from().to_string(),
            expires_at,
            applied,
            kind: z
                .shift_type()
                .map_or("ZONAL_SHIFT", |t| t.as_str())
                .to_string(),
        });
    }
    for (i, a) in out.autoshifts().iter().enumerate() {
        let at = |f: &str| format!("autoshifts[{i}].{f}");
        if a.away_from().is_empty() {
            return Err(invalid(at("awayFrom"), "missing"));
        }
        let applied = match a.applied_status() {
            AutoshiftAppliedStatus::Applied => true,
            AutoshiftAppliedStatus::NotApplied => false,
            other => {
                return Err(invalid(
                    at("appliedStatus"),
                    &format!("{:?} is not APPLIED or NOT_APPLIED", other.as_str()),
                ));
            }
        };
        shifts.push(ZonalShift {
            away_from: a.away_from().to_string(),
            expires_at: now
                .checked_add(AUTOSHIFT_HOLD_SECS)
                .ok_or_else(|| invalid(at("startTime"), "the clock is out of range"))?,
            applied,
            kind: "ZONAL_AUTOSHIFT".into(),
        });
    }
    Ok(shifts)
}

/// The zonal shifts on the resource `arn` (the EKS cluster), read at `now`.
#[tracing::instrument(skip(client))]
pub async fn read(
    client: &aws_sdk_arczonalshift::Client,
    arn: &str,
    now: i64,
) -> Result<Vec<ZonalShift>, AwsError> {
    let out = client
        .get_managed_resource()
        .resource_identifier(arn)
        .send()
        .await
        .map_err(|e| AwsError::Api {
            call: CALL,
            message: aws_sdk_arczonalshift::error::DisplayErrorContext(e).to_string(),
        })?;
    shifts_of(&out, now)
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    const ARN: &str = "arn:aws:eks:us-east-1:123456789012:cluster/demo";

    /// A stand-in for ARC's endpoint: answers every request with `status`, `error_type` (the
    /// `x-amzn-ErrorType` header ARC sets on errors) and `body`, and records each request line.
    async fn stand_in(
        status: u16,
        error_type: Option<&'static str>,
        body: String,
    ) -> (String, Arc<Mutex<Vec<String>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                let mut buf = vec![0u8; 16384];
                let mut got = Vec::new();
                // The request has no body (a GET): read up to the end of its headers.
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    let Ok(n) = sock.read(&mut buf).await else {
                        break;
                    };
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
                let text = String::from_utf8_lossy(&got).to_string();
                log.lock()
                    .unwrap()
                    .push(text.lines().next().unwrap_or_default().to_string());
                let mut head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                    body.len()
                );
                if let Some(t) = error_type {
                    head.push_str(&format!("x-amzn-errortype: {t}\r\n"));
                }
                head.push_str("\r\n");
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(body.as_bytes()).await;
                let _ = sock.shutdown().await;
            }
        });
        (url, seen)
    }

    fn client(url: &str) -> aws_sdk_arczonalshift::Client {
        // The same client Clients::new gives the SDK (it speaks plain HTTP to a local endpoint).
        let http = aws_smithy_http_client::Builder::new()
            .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
            ))
            .build_https();
        let conf = aws_sdk_arczonalshift::Config::builder()
            .http_client(http)
            .behavior_version(aws_sdk_arczonalshift::config::BehaviorVersion::latest())
            .region(aws_sdk_arczonalshift::config::Region::new("us-east-1"))
            .endpoint_url(url)
            .credentials_provider(aws_credential_types::Credentials::from_keys(
                "testing", "testing", None,
            ))
            .retry_config(aws_sdk_arczonalshift::config::retry::RetryConfig::disabled())
            .build();
        aws_sdk_arczonalshift::Client::from_conf(conf)
    }

    #[tokio::test]
    async fn reads_manual_shifts_practice_runs_and_autoshifts_from_arc() {
        let body = serde_json::json!({
            "arn": ARN,
            "name": "demo",
            "appliedWeights": {"use1-az1": 0.0, "use1-az2": 1.0, "use1-az3": 1.0},
            "zonalShifts": [
                {"appliedStatus": "APPLIED", "zonalShiftId": "zs-1", "resourceIdentifier": ARN,
                 "awayFrom": "use1-az1", "expiryTime": 1_767_229_200, "startTime": 1_767_225_600,
                 "comment": "az1 impaired", "shiftType": "ZONAL_SHIFT"},
                {"appliedStatus": "NOT_APPLIED", "zonalShiftId": "zs-2", "resourceIdentifier": ARN,
                 "awayFrom": "use1-az2", "expiryTime": 1_767_229_200, "startTime": 1_767_225_600,
                 "comment": "weekly practice", "shiftType": "PRACTICE_RUN"}
            ],
            "autoshifts": [
                {"appliedStatus": "APPLIED", "awayFrom": "use1-az3", "startTime": 1_767_225_600}
            ],
            "zonalAutoshiftStatus": "ENABLED"
        })
        .to_string();
        let (url, seen) = stand_in(200, None, body).await;
        let now = 1_767_226_000;
        let shifts = read(&client(&url), ARN, now).await.unwrap();
        assert_eq!(
            shifts,
            vec![
                ZonalShift {
                    away_from: "use1-az1".into(),
                    expires_at: 1_767_229_200,
                    applied: true,
                    kind: "ZONAL_SHIFT".into(),
                },
                ZonalShift {
                    away_from: "use1-az2".into(),
                    expires_at: 1_767_229_200,
                    applied: false,
                    kind: "PRACTICE_RUN".into(),
                },
                ZonalShift {
                    away_from: "use1-az3".into(),
                    expires_at: now + AUTOSHIFT_HOLD_SECS,
                    applied: true,
                    kind: "ZONAL_AUTOSHIFT".into(),
                },
            ]
        );
        // Asked about the cluster by its ARN, percent-encoded into the path.
        let line = seen.lock().unwrap()[0].clone();
        assert!(
            line.starts_with(
                "GET /managedresources/arn%3Aaws%3Aeks%3Aus-east-1%3A123456789012%3Acluster%2Fdemo"
            ),
            "{line}"
        );
        let away = adze_scheduling::zonal_shift::zones_away(&shifts, now);
        assert_eq!(
            away.into_iter().collect::<Vec<_>>(),
            ["use1-az1", "use1-az3"]
        );
    }

    #[tokio::test]
    async fn no_shift_on_the_cluster_reads_as_none() {
        let body = serde_json::json!({"arn": ARN, "name": "demo", "appliedWeights": {},
            "zonalShifts": [], "autoshifts": []})
        .to_string();
        let (url, _) = stand_in(200, None, body).await;
        assert!(read(&client(&url), ARN, 0).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn access_denied_is_an_error_naming_the_call_not_an_empty_reading() {
        let body = serde_json::json!({
            "message": "User is not authorized to perform: arc-zonal-shift:GetManagedResource"
        })
        .to_string();
        let (url, _) = stand_in(403, Some("AccessDeniedException"), body).await;
        let err = read(&client(&url), ARN, 0).await.unwrap_err().to_string();
        assert!(err.starts_with("GetManagedResource"), "{err}");
        assert!(err.contains("AccessDeniedException"), "{err}");
    }

    #[tokio::test]
    async fn a_shift_without_its_zone_fails_the_reading_and_names_the_entry() {
        let body = serde_json::json!({"arn": ARN, "appliedWeights": {}, "autoshifts": [],
            "zonalShifts": [{"appliedStatus": "APPLIED", "zonalShiftId": "zs-1",
                "resourceIdentifier": ARN, "expiryTime": 1_767_229_200,
                "startTime": 1_767_225_600, "comment": ""}]})
        .to_string();
        let (url, _) = stand_in(200, None, body).await;
        let err = read(&client(&url), ARN, 0).await.unwrap_err().to_string();
        assert!(err.contains("zonalShifts[0].awayFrom"), "{err}");
    }
}
