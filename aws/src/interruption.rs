//! Interruption notices from EventBridge, delivered through an SQS queue.
//!
//! [`parse`] turns one message body into [`Notice`]s (pure, unit-tested on real-shaped JSON);
//! [`Queue`] long-polls and deletes; [`run`] marks the NodeClaim of each affected instance
//! `Interrupted` (the shared contract: the provisioner pre-launches a replacement and drains).
//! A message that cannot be parsed is logged, counted and deleted: it would never parse later.
//! So is an event from another account or region than the provisioner's ([`Origin`]): the
//! queue's policy admits only the stack's own EventBridge rules, and this check holds even
//! where the queue was made by hand with a looser policy.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;
use thiserror::Error;

/// What happened to which instances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub kind: NoticeKind,
    pub instance_ids: Vec<String>,
    /// RFC3339; when the instance is expected to go away, if known.
    pub deadline: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoticeKind {
    /// Two-minute warning before EC2 reclaims a spot instance.
    SpotInterruption,
    /// Two-minute warning before EC2 terminates an instance in an interruptible capacity
    /// reservation whose owner is taking the capacity back.
    ReservationInterruption,
    /// EC2 says the instance is at elevated risk of interruption; no deadline.
    RebalanceRecommendation,
    /// AWS Health scheduled maintenance (stop, retirement, reboot).
    ScheduledChange { event_type: String },
    /// The instance changed state; `state` is EC2's spelling ("stopping", "terminated", ...).
    StateChange { state: String },
}

impl Notice {
    /// The `Interrupted` condition reason, or None when the notice calls for no action:
    /// rebalance recommendations are advisory (a spot warning follows if it matters) and a
    /// state change to pending/running is not an interruption.
    pub fn interruption_reason(&self) -> Option<&'static str> {
        match &self.kind {
            NoticeKind::SpotInterruption => Some("SpotInterruption"),
            NoticeKind::ReservationInterruption => {
                Some(adze_api::conditions::nodeclaim::REASON_CAPACITY_RESERVATION_INTERRUPTION)
            }
            NoticeKind::RebalanceRecommendation => None,
            NoticeKind::ScheduledChange { .. } => Some("ScheduledChange"),
            NoticeKind::StateChange { state } => match state.as_str() {
                "stopping" | "stopped" | "shutting-down" | "terminated" => {
                    Some("InstanceStateChange")
                }
                _ => None,
            },
        }
    }

    /// The condition message: what happened and by when.
    pub fn message(&self) -> String {
        let what = match &self.kind {
            NoticeKind::SpotInterruption => "EC2 will reclaim this spot instance".to_string(),
            NoticeKind::ReservationInterruption => {
                "EC2 will reclaim this instance's interruptible capacity reservation".to_string()
            }
            NoticeKind::RebalanceRecommendation => "EC2 recommends rebalancing".to_string(),
            NoticeKind::ScheduledChange { event_type } => {
                format!("AWS Health scheduled change {event_type}")
            }
            NoticeKind::StateChange { state } => format!("instance is {state}"),
        };
        match &self.deadline {
            Some(d) => format!("{what}; deadline {d}"),
            None => what,
        }
    }
}

/// The account and region whose events this provisioner acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub account: String,
    pub region: String,
}

impl Origin {
    /// The account from the queue's URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`,
    /// as GetQueueUrl answers; the same shape from moto): no STS call, so no permission beyond
    /// the queue's. `region` is the provisioner's own (`--region`).
    pub fn from_queue_url(url: &str, region: &str) -> Result<Origin, String> {
        let path = url
            .split_once("://")
            .map_or(url, |(_, rest)| rest)
            .split_once('/')
            .map(|(_, path)| path)
            .unwrap_or_default();
        let account = path.split('/').next().unwrap_or_default();
        if account.len() != 12 || !account.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "--interruption-queue: the queue URL {url:?} does not name an account \
                 (expected https://sqs.REGION.amazonaws.com/ACCOUNT/NAME)"
            ));
        }
        if region.is_empty() {
            return Err("--region: empty; interruption events are checked against it".into());
        }
        Ok(Origin {
            account: account.to_string(),
            region: region.to_string(),
        })
    }
}

#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum ParseError {
    #[error(
        "event from account {account} in {region}, not this cluster's account {expected_account} in {expected_region}"
    )]
    Foreign {
        account: String,
        region: String,
        expected_account: String,
        expected_region: String,
    },
    #[error("message body is not JSON: {0}")]
    NotJson(String),
    #[error("message has no field {0}")]
    Missing(&'static str),
    #[error("unsupported event: source {source_:?}, detail-type {detail_type:?}")]
    Unsupported {
        source_: String,
        detail_type: String,
    },
}

/// Parses one EventBridge event (the SQS message body), refusing events of another account
/// or region than `origin`.
pub fn parse(body: &str, origin: &Origin) -> Result<Notice, ParseError> {
    let v: Value = serde_json::from_str(body).map_err(|e| ParseError::NotJson(e.to_string()))?;
    let s = |key: &'static str| -> Result<&str, ParseError> {
        v.get(key)
            .and_then(Value::as_str)
            .ok_or(ParseError::Missing(key))
    };
    let (account, region) = (s("account")?, s("region")?);
    if account != origin.account || region != origin.region {
        return Err(ParseError::Foreign {
            account: account.into(),
            region: region.into(),
            expected_account: origin.account.clone(),
            expected_region: origin.region.clone(),
        });
    }
    let source = s("source")?;
    let detail_type = s("detail-type")?;
    let detail = v.get("detail").ok_or(ParseError::Missing("detail"))?;
    let instance_id = || -> Result<Vec<String>, ParseError> {
        detail
            .get("instance-id")
            .and_then(Value::as_str)
            .map(|id| vec![id.to_string()])
            .ok_or(ParseError::Missing("detail.instance-id"))
    };
    let time = v.get("time").and_then(Value::as_str);
    match (source, detail_type) {
        ("aws.ec2", "EC2 Spot Instance Interruption Warning") => Ok(Notice {
            kind: NoticeKind::SpotInterruption,
            instance_ids: instance_id()?,
            // EC2 gives two minutes from the warning.
            deadline: time.and_then(|t| plus_seconds(t, 120)),
        }),
        ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning") => Ok(Notice {
            kind: NoticeKind::ReservationInterruption,
            instance_ids: instance_id()?,
            // The event names the termination time; else EC2's two minutes from the warning.
            deadline: detail
                .get("instance-termination-time")
                .and_then(Value::as_str)
                .and_then(normalize_time)
                .or_else(|| time.and_then(|t| plus_seconds(t, 120))),
        }),
        ("aws.ec2", "EC2 Instance Rebalance Recommendation") => Ok(Notice {
            kind: NoticeKind::RebalanceRecommendation,
            instance_ids: instance_id()?,
            deadline: None,
        }),
        ("aws.ec2", "EC2 Instance State-change Notification") => Ok(Notice {
            kind: NoticeKind::StateChange {
                state: detail
                    .get("state")
                    .and_then(Value::as_str)
                    .ok_or(ParseError::Missing("detail.state"))?
                    .to_string(),
            },
            instance_ids: instance_id()?,
            deadline: None,
        }),
        ("aws.health", "AWS Health Event") => {
            let ids: Vec<String> = detail
                .get("affectedEntities")
                .and_then(Value::as_array)
                .ok_or(ParseError::Missing("detail.affectedEntities"))?
                .iter()
                .filter_map(|e| e.get("entityValue").and_then(Value::as_str))
                .filter(|id| id.starts_with("i-"))
                .map(String::from)
                .collect();
            if ids.is_empty() {
                return Err(ParseError::Missing("detail.affectedEntities[].entityValue"));
            }
            Ok(Notice {
                kind: NoticeKind::ScheduledChange {
                    event_type: detail
                        .get("eventTypeCode")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown")
                        .to_string(),
                },
                instance_ids: ids,
                deadline: detail
                    .get("startTime")
                    .and_then(Value::as_str)
                    .and_then(normalize_time),
            })
        }
        _ => Err(ParseError::Unsupported {
            source_: source.into(),
            detail_type: detail_type.into(),
        }),
    }
}

fn normalize_time(t: &str) -> Option<String> {
    parse_time(t).map(|ts| ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}

fn parse_time(t: &str) -> Option<k8s_openapi::jiff::Timestamp> {
    // AWS Health uses "Sat, 05 Jun 2021 04:00:00 GMT"; EventBridge "time" is RFC3339.
    t.parse::<k8s_openapi::jiff::Timestamp>().ok().or_else(|| {
        k8s_openapi::jiff::fmt::rfc2822::parse(t)
            .ok()
            .map(|z| z.timestamp())
    })
}

fn plus_seconds(t: &str, secs: i64) -> Option<String> {
    let ts = parse_time(t)?;
    let later = ts
        .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(secs))
        .ok()?;
    Some(later.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}

/// The instance ID in a providerID `aws:///us-east-1a/i-0123…`, or in any other providerID of
/// that shape (`<scheme>:///<zone>/i-…`: the simulated cloud's), so notices reach NodeClaims of
/// whichever cloud provider runs.
pub fn instance_id_of(provider_id: &str) -> Option<&str> {
    provider_id
        .split_once(":///")?
        .1
        .rsplit('/')
        .next()
        .filter(|id| id.starts_with("i-"))
}

/// One received message: its receipt handle and what it said.
#[derive(Debug)]
pub struct Received {
    pub receipt_handle: String,
    pub notice: Result<Notice, ParseError>,
}

/// What the queue loop has done with messages so far, for `/metrics` (the provisioner exports
/// these as `adze_interruption_messages_total{result}`).
#[derive(Debug, Default)]
pub struct QueueStats {
    /// Unparseable or not an EventBridge event we know: logged and deleted.
    pub malformed: AtomicU64,
    /// Marked a NodeClaim `Interrupted` (or found none to mark) and deleted.
    pub acted: AtomicU64,
    /// Parsed, but needing no action (e.g. an instance entering `running`); deleted.
    pub no_action: AtomicU64,
    /// Could not be handled now; left on the queue to come back.
    pub failed: AtomicU64,
    /// An event of another account or region: logged and deleted, never acted on.
    pub foreign: AtomicU64,
}

impl QueueStats {
    /// (result label, count) pairs.
    pub fn snapshot(&self) -> [(&'static str, u64); 5] {
        [
            ("malformed", self.malformed.load(Ordering::Relaxed)),
            ("acted", self.acted.load(Ordering::Relaxed)),
            ("no_action", self.no_action.load(Ordering::Relaxed)),
            ("failed", self.failed.load(Ordering::Relaxed)),
            ("foreign", self.foreign.load(Ordering::Relaxed)),
        ]
    }
}

/// The SQS queue EventBridge delivers to.
#[derive(Clone)]
pub struct Queue {
    pub sqs: aws_sdk_sqs::Client,
    pub url: String,
    /// Events of any other account or region are dropped.
    pub origin: Origin,
    /// Long-poll wait (at most 20 s in SQS).
    pub wait: Duration,
    pub stats: std::sync::Arc<QueueStats>,
}

impl Queue {
    /// Fails when `url` names no account (see [`Origin::from_queue_url`]).
    pub fn new(sqs: aws_sdk_sqs::Client, url: String, region: &str) -> Result<Self, String> {
        let origin = Origin::from_queue_url(&url, region)?;
        Ok(Queue {
            sqs,
            url,
            origin,
            wait: Duration::from_secs(20),
            stats: Default::default(),
        })
    }

    /// Long-polls once; malformed messages are counted, logged and deleted here.
    pub async fn receive(&self) -> Result<Vec<Received>, String> {
        let out = self
            .sqs
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(10)
            .wait_time_seconds(self.wait.as_secs().min(20) as i32)
            .send()
            .await
            .map_err(|e| {
                format!(
                    "ReceiveMessage: {}",
                    aws_sdk_sqs::error::DisplayErrorContext(e)
                )
            })?;
        let mut received = Vec::new();
        for m in out.messages.unwrap_or_default() {
            let Some(receipt) = m.receipt_handle else {
                continue;
            };
            let notice = parse(m.body.as_deref().unwrap_or_default(), &self.origin);
            if let Err(e) = &notice {
                if matches!(e, ParseError::Foreign { .. }) {
                    self.stats.foreign.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(message_id = ?m.message_id, error = %e, "dropping an interruption event of another account or region");
                } else {
                    self.stats.malformed.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(message_id = ?m.message_id, error = %e, "dropping malformed interruption message");
                }
                self.delete(&receipt).await?;
                continue;
            }
            received.push(Received {
                receipt_handle: receipt,
                notice,
            });
        }
        Ok(received)
    }

    pub async fn delete(&self, receipt: &str) -> Result<(), String> {
        self.sqs
            .delete_message()
            .queue_url(&self.url)
            .receipt_handle(receipt)
            .send()
            .await
            .map_err(|e| {
                format!(
                    "DeleteMessage: {}",
                    aws_sdk_sqs::error::DisplayErrorContext(e)
                )
            })?;
        Ok(())
    }
}

/// Polls forever, marking affected NodeClaims `Interrupted`. A message is deleted once handled;
/// one whose NodeClaim update failed stays in the queue and comes back after its visibility
/// timeout.
pub async fn run(queue: Queue, client: kube::Client) {
    let claims: kube::Api<adze_api::NodeClaim> = kube::Api::all(client);
    loop {
        let received = match queue.receive().await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "interruption queue receive failed");
                tokio::time::sleep(Duration::from_secs(5)).await;
                continue;
            }
        };
        for r in received {
            let Ok(notice) = &r.notice else { continue };
            match mark_interrupted(&claims, notice).await {
                Ok(()) => {
                    let counter = if notice.interruption_reason().is_some() {
                        &queue.stats.acted
                    } else {
                        &queue.stats.no_action
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                    if let Err(e) = queue.delete(&r.receipt_handle).await {
                        tracing::warn!(error = %e, "could not delete handled message");
                    }
                }
                Err(e) => {
                    queue.stats.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(error = %e, ?notice, "could not mark NodeClaim interrupted")
                }
            }
        }
    }
}

/// Sets `Interrupted=True` on the NodeClaims whose instance the notice names.
pub async fn mark_interrupted(
    claims: &kube::Api<adze_api::NodeClaim>,
    notice: &Notice,
) -> Result<(), kube::Error> {
    let Some(reason) = notice.interruption_reason() else {
        tracing::info!(?notice, "notice needs no action");
        return Ok(());
    };
    for claim in claims.list(&Default::default()).await? {
        let status = claim.status.clone().unwrap_or_default();
        let Some(id) = status.provider_id.as_deref().and_then(instance_id_of) else {
            continue;
        };
        if !notice.instance_ids.iter().any(|i| i == id) {
            continue;
        }
        let name = claim.metadata.name.clone().unwrap_or_default();
        let mut conditions = status.conditions.clone();
        conditions.retain(|c| c.type_ != adze_api::conditions::nodeclaim::INTERRUPTED);
        let now = k8s_openapi::jiff::Timestamp::now();
        conditions.push(k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
            type_: adze_api::conditions::nodeclaim::INTERRUPTED.into(),
            status: "True".into(),
            reason: reason.into(),
            message: notice.message(),
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now),
            observed_generation: claim.metadata.generation,
        });
        let patch = serde_json::json!({
            "metadata": {"resourceVersion": claim.metadata.resource_version},
            "status": {"conditions": conditions},
        });
        claims
            .patch_status(&name, &Default::default(), &kube::api::Patch::Merge(&patch))
            .await?;
        tracing::info!(nodeclaim = %name, instance = id, reason, "marked NodeClaim interrupted");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub const SPOT: &str = r#"{"version":"0","id":"1e5527d7-bb36-4607-3370-4164db56a40e","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"2026-11-22T23:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1b:instance/i-0b662ef9931388ba0"],"detail":{"instance-id":"i-0b662ef9931388ba0","instance-action":"terminate"}}"#;
    const REBALANCE: &str = r#"{"version":"0","id":"2","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","account":"123456789012","time":"2026-11-22T23:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1b:instance/i-0b662ef9931388ba0"],"detail":{"instance-id":"i-0b662ef9931388ba0"}}"#;
    const HEALTH: &str = r#"{"version":"0","id":"3","detail-type":"AWS Health Event","source":"aws.health","account":"123456789012","time":"2026-11-22T23:00:00Z","region":"us-east-1","resources":["i-0abc"],"detail":{"eventArn":"arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_STOP_SCHEDULED/x","service":"EC2","eventTypeCode":"AWS_EC2_INSTANCE_STOP_SCHEDULED","eventTypeCategory":"scheduledChange","startTime":"Sat, 28 Nov 2026 04:00:00 GMT","eventDescription":[{"language":"en_US","latestDescription":"retire"}],"affectedEntities":[{"entityValue":"i-0abc"},{"entityValue":"i-0def"}]}}"#;
    const RESERVATION: &str = r#"{"version":"0","id":"5","detail-type":"EC2 Capacity Reservation Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"2026-11-22T23:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-0abc"],"detail":{"instance-id":"i-0abc","instance-action":"terminate","instance-termination-time":"2026-11-22T23:02:05Z","azId":"use1-az1"}}"#;
    const STATE: &str = r#"{"version":"0","id":"4","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","account":"123456789012","time":"2026-11-22T23:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-0abc"],"detail":{"instance-id":"i-0abc","state":"stopping"}}"#;

    fn ours() -> Origin {
        Origin {
            account: "123456789012".into(),
            region: "us-east-1".into(),
        }
    }

    fn parse(body: &str) -> Result<Notice, ParseError> {
        super::parse(body, &ours())
    }

    #[test]
    fn events_of_another_account_or_region_are_refused() {
        for (from, to) in [
            (r#""account":"123456789012""#, r#""account":"210987654321""#),
            (r#""region":"us-east-1""#, r#""region":"eu-west-1""#),
        ] {
            for body in [SPOT, REBALANCE, HEALTH, STATE] {
                let foreign = body.replace(from, to);
                assert_ne!(foreign, body, "the fixture has {from}");
                let e = parse(&foreign).unwrap_err();
                assert!(matches!(e, ParseError::Foreign { .. }), "{e:?}");
                assert!(
                    e.to_string()
                        .contains("not this cluster's account 123456789012 in us-east-1")
                );
            }
        }
        // Without them the event cannot be judged: refused as malformed.
        let bare = SPOT.replace(r#""account":"123456789012","#, "");
        assert_eq!(parse(&bare), Err(ParseError::Missing("account")));
        let bare = SPOT.replace(r#""region":"us-east-1","#, "");
        assert_eq!(parse(&bare), Err(ParseError::Missing("region")));
    }

    #[test]
    fn the_account_comes_from_the_queue_url() {
        let o = Origin::from_queue_url(
            "https://sqs.eu-west-1.amazonaws.com/210987654321/my-cluster",
            "eu-west-1",
        )
        .unwrap();
        assert_eq!(o.account, "210987654321");
        assert_eq!(o.region, "eu-west-1");
        // moto's shape.
        let o =
            Origin::from_queue_url("http://127.0.0.1:5000/123456789012/q", "us-east-1").unwrap();
        assert_eq!(o, ours());
        for bad in [
            "https://sqs.eu-west-1.amazonaws.com/my-cluster",
            "https://sqs.eu-west-1.amazonaws.com/",
            "my-cluster",
            "https://sqs.eu-west-1.amazonaws.com/12345678901x/q",
        ] {
            let e = Origin::from_queue_url(bad, "eu-west-1").unwrap_err();
            assert!(e.contains("--interruption-queue"), "{bad}: {e}");
        }
        assert!(
            Origin::from_queue_url("http://h/123456789012/q", "")
                .unwrap_err()
                .contains("--region")
        );
    }

    #[test]
    fn spot_warning_has_a_two_minute_deadline() {
        let n = parse(SPOT).unwrap();
        assert_eq!(n.kind, NoticeKind::SpotInterruption);
        assert_eq!(n.instance_ids, ["i-0b662ef9931388ba0"]);
        assert_eq!(n.deadline.as_deref(), Some("2026-11-22T23:02:00Z"));
        assert_eq!(n.interruption_reason(), Some("SpotInterruption"));
        assert!(n.message().contains("deadline 2026-11-22T23:02:00Z"));
    }

    #[test]
    fn interruptible_reservation_warning_interrupts_with_its_own_reason_and_deadline() {
        let n = parse(RESERVATION).unwrap();
        assert_eq!(n.kind, NoticeKind::ReservationInterruption);
        assert_eq!(n.instance_ids, vec!["i-0abc".to_string()]);
        assert_eq!(n.deadline.as_deref(), Some("2026-11-22T23:02:05Z"));
        assert_eq!(
            n.interruption_reason(),
            Some("CapacityReservationInterruption")
        );
        assert!(n.message().contains("interruptible capacity reservation"));
        assert!(n.message().contains("2026-11-22T23:02:05Z"));
        // Without a termination time: two minutes from the event.
        let bare =
            RESERVATION.replace(r#","instance-termination-time":"2026-11-22T23:02:05Z""#, "");
        assert_eq!(
            parse(&bare).unwrap().deadline.as_deref(),
            Some("2026-11-22T23:02:00Z")
        );
        let no_instance = RESERVATION.replace(r#""instance-id":"i-0abc","#, "");
        assert_eq!(
            parse(&no_instance),
            Err(ParseError::Missing("detail.instance-id"))
        );
    }

    #[test]
    fn rebalance_recommendation_is_advisory() {
        let n = parse(REBALANCE).unwrap();
        assert_eq!(n.kind, NoticeKind::RebalanceRecommendation);
        assert_eq!(n.interruption_reason(), None);
    }

    #[test]
    fn health_scheduled_change_names_every_affected_instance_and_its_start() {
        let n = parse(HEALTH).unwrap();
        assert_eq!(n.instance_ids, ["i-0abc", "i-0def"]);
        assert_eq!(n.deadline.as_deref(), Some("2026-11-28T04:00:00Z"));
        assert_eq!(n.interruption_reason(), Some("ScheduledChange"));
        assert!(n.message().contains("AWS_EC2_INSTANCE_STOP_SCHEDULED"));
    }

    #[test]
    fn stopping_is_an_interruption_but_running_is_not() {
        let n = parse(STATE).unwrap();
        assert_eq!(n.interruption_reason(), Some("InstanceStateChange"));
        let running = parse(&STATE.replace("stopping", "running")).unwrap();
        assert_eq!(running.interruption_reason(), None);
    }

    #[test]
    fn malformed_messages_are_errors_naming_what_is_missing() {
        assert!(matches!(parse("not json"), Err(ParseError::NotJson(_))));
        assert_eq!(
            parse(
                r#"{"account":"123456789012","region":"us-east-1","source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":{}}"#
            ),
            Err(ParseError::Missing("detail.instance-id"))
        );
        assert!(matches!(
            parse(
                r#"{"account":"123456789012","region":"us-east-1","source":"aws.s3","detail-type":"Object Created","detail":{}}"#
            ),
            Err(ParseError::Unsupported { .. })
        ));
    }

    #[test]
    fn provider_id_yields_the_instance_id() {
        assert_eq!(instance_id_of("aws:///us-east-1a/i-0abc"), Some("i-0abc"));
        assert_eq!(instance_id_of("adze-sim://x"), None);
        assert_eq!(
            instance_id_of("adze-sim:///us-east-1b/i-73706f74"),
            Some("i-73706f74")
        );
        assert_eq!(instance_id_of("kind://docker/adze/node-1"), None);
    }
}
