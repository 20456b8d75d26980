//! EC2's status checks for node repair: DescribeInstanceStatus for the cluster's instances,
//! each instance's instance, system and attached-EBS checks turned into
//! [`adze_cloud::StatusCheck`]s. Which of them count as unhealthy is node repair's decision
//! ([`adze_scheduling::disruption::repair`]); this module only reads.
//!
//! Asked by instance id, in batches of [`BATCH`], each paginated; `IncludeAllInstances` is left
//! false, so only running instances answer (a stopped or terminated one has no checks to fail).
//! An id EC2 no longer knows fails its whole batch with `InvalidInstanceID.NotFound`; the batch
//! is asked again once without the ids the error names, so one gone instance does not blind
//! repair to the other 99.

use std::collections::{BTreeMap, BTreeSet};

use adze_cloud::StatusCheck;
use adze_scheduling::disruption::repair::{CheckKind, CheckStatus};
use aws_sdk_ec2::error::ProvideErrorMetadata;
use aws_sdk_ec2::types::InstanceStatus;

use crate::error::AwsError;
use crate::sweep::paginate;

/// Instance ids per DescribeInstanceStatus request.
pub const BATCH: usize = 100;

const CALL: &str = "DescribeInstanceStatus";

/// One instance's checks as EC2 reported them, in the order instance, system, attached EBS.
pub fn checks_of(s: &InstanceStatus) -> Vec<StatusCheck> {
    let check = |kind, name: Option<&str>, status: Option<&str>, since: Option<i64>| StatusCheck {
        kind,
        name: name.unwrap_or("reachability").to_string(),
        status: CheckStatus::parse(status.unwrap_or("")),
        impaired_since: since,
    };
    let mut out = Vec::new();
    for (kind, summary) in [
        (CheckKind::Instance, s.instance_status()),
        (CheckKind::System, s.system_status()),
    ] {
        for d in summary.map(|s| s.details()).unwrap_or_default() {
            out.push(check(
                kind,
                d.name().map(|n| n.as_str()),
                d.status().map(|s| s.as_str()),
                d.impaired_since().map(|t| t.secs()),
            ));
        }
    }
    for d in s
        .attached_ebs_status()
        .map(|s| s.details())
        .unwrap_or_default()
    {
        out.push(check(
            CheckKind::AttachedEbs,
            d.name().map(|n| n.as_str()),
            d.status().map(|s| s.as_str()),
            d.impaired_since().map(|t| t.secs()),
        ));
    }
    out
}

/// The instance ids an `InvalidInstanceID.NotFound` message names (`The instance IDs
/// 'i-1, i-2' do not exist`).
pub fn missing_ids(message: &str) -> BTreeSet<String> {
    message
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| {
            w.strip_prefix("i-")
                .is_some_and(|hex| !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()))
        })
        .map(String::from)
        .collect()
}

/// Why a batch failed: ids EC2 does not know (ask again without them), or anything else.
enum BatchError {
    NotFound(BTreeSet<String>),
    Other(AwsError),
}

/// The checks of `instance_ids` (by instance id) that EC2 reports; instances it reports no
/// checks for are left out.
pub async fn describe(
    ec2: &aws_sdk_ec2::Client,
    instance_ids: &[String],
) -> Result<BTreeMap<String, Vec<StatusCheck>>, AwsError> {
    let mut out = BTreeMap::new();
    for batch in instance_ids.chunks(BATCH) {
        let statuses = match describe_batch(ec2, batch).await {
            Ok(s) => s,
            Err(BatchError::NotFound(gone)) if !gone.is_empty() => {
                tracing::debug!(gone = ?gone, "instances EC2 no longer knows left out of the status-check batch");
                let rest: Vec<String> = batch
                    .iter()
                    .filter(|id| !gone.contains(*id))
                    .cloned()
                    .collect();
                if rest.is_empty() {
                    continue;
                }
                describe_batch(ec2, &rest).await.map_err(|e| match e {
                    BatchError::Other(e) => e,
                    BatchError::NotFound(ids) => AwsError::Api {
                        call: CALL,
                        message: format!("InvalidInstanceID.NotFound: {ids:?}"),
                    },
                })?
            }
            Err(BatchError::NotFound(_)) => {
                return Err(AwsError::Api {
                    call: CALL,
                    message: "InvalidInstanceID.NotFound naming no instance id".into(),
                });
            }
            Err(BatchError::Other(e)) => return Err(e),
        };
        for s in statuses {
            if let Some(id) = s.instance_id() {
                out.insert(id.to_string(), checks_of(&s));
            }
        }
    }
    Ok(out)
}

async fn describe_batch(
    ec2: &aws_sdk_ec2::Client,
    ids: &[String],
) -> Result<Vec<InstanceStatus>, BatchError> {
    let mut last: Option<String> = None;
    paginate(|next| {
        // A token handed back twice would page forever; EC2 should never do it.
        let repeated = next.is_some() && next == last;
        last.clone_from(&next);
        let req = ec2
            .describe_instance_status()
            .set_instance_ids(Some(ids.to_vec()))
            .include_all_instances(false)
            .set_next_token(next);
        async move {
            if repeated {
                return Err(BatchError::Other(AwsError::Api {
                    call: CALL,
                    message: "the same NextToken came back twice; stopped paging".into(),
                }));
            }
            match req.send().await {
                Ok(resp) => Ok((resp.instance_statuses.unwrap_or_default(), resp.next_token)),
                Err(e) => {
                    let service = e.as_service_error();
                    if service.and_then(|s| s.code()) == Some("InvalidInstanceID.NotFound") {
                        let message = service.and_then(|s| s.message()).unwrap_or_default();
                        return Err(BatchError::NotFound(missing_ids(message)));
                    }
                    Err(BatchError::Other(AwsError::Api {
                        call: CALL,
                        message: aws_sdk_ec2::error::DisplayErrorContext(e).to_string(),
                    }))
                }
            }
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_ec2::primitives::DateTime;
    use aws_sdk_ec2::types::{
        EbsStatusDetails, EbsStatusSummary, InstanceStatusDetails, InstanceStatusSummary,
        StatusName, StatusType, SummaryStatus,
    };

    fn summary(status: StatusType, since: Option<i64>) -> InstanceStatusSummary {
        let mut d = InstanceStatusDetails::builder()
            .name(StatusName::Reachability)
            .status(status);
        if let Some(t) = since {
            d = d.impaired_since(DateTime::from_secs(t));
        }
        InstanceStatusSummary::builder()
            .status(SummaryStatus::Impaired)
            .details(d.build())
            .build()
    }

    #[test]
    fn each_check_keeps_its_kind_status_and_impaired_since() {
        let s = InstanceStatus::builder()
            .instance_id("i-0abc")
            .instance_status(summary(StatusType::Passed, None))
            .system_status(summary(StatusType::Failed, Some(1_767_225_600)))
            .attached_ebs_status(
                EbsStatusSummary::builder()
                    .details(
                        EbsStatusDetails::builder()
                            .name(StatusName::Reachability)
                            .status(StatusType::InsufficientData)
                            .build(),
                    )
                    .build(),
            )
            .build();
        let checks = checks_of(&s);
        assert_eq!(checks.len(), 3);
        assert_eq!(checks[0].kind, CheckKind::Instance);
        assert_eq!(checks[0].status, CheckStatus::Passed);
        assert!(!checks[0].is_failing());
        assert_eq!(checks[1].kind, CheckKind::System);
        assert_eq!(checks[1].name, "reachability");
        assert_eq!(checks[1].status, CheckStatus::Failed);
        assert_eq!(checks[1].impaired_since, Some(1_767_225_600));
        assert!(checks[1].is_failing());
        assert_eq!(checks[2].kind, CheckKind::AttachedEbs);
        assert_eq!(checks[2].status, CheckStatus::InsufficientData);
        // An instance with no checks reported yet has none.
        assert!(checks_of(&InstanceStatus::builder().instance_id("i-1").build()).is_empty());
    }

    #[test]
    fn the_ids_a_not_found_error_names_are_read_back() {
        assert_eq!(
            missing_ids("The instance IDs 'i-0123abcd, i-0fedcba9' do not exist"),
            BTreeSet::from(["i-0123abcd".to_string(), "i-0fedcba9".to_string()])
        );
        assert_eq!(
            missing_ids("The instance ID 'i-1' does not exist"),
            BTreeSet::from(["i-1".to_string()])
        );
        assert!(missing_ids("Invalid id: \"i-\" (expecting \"i-...\")").is_empty());
    }
}
