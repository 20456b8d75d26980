//! Errors from the AWS provider.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum AwsError {
    /// An AWS API call failed; the call name and the SDK's full error context.
    #[error("{call}: {message}")]
    Api { call: &'static str, message: String },
    /// The EC2NodeClass or NodeClaim asks for something that cannot be done.
    #[error("{0}")]
    Invalid(String),
}

pub(crate) fn ec2_err<E: std::error::Error + 'static, R: std::fmt::Debug>(
    call: &'static str,
) -> impl Fn(aws_sdk_ec2::error::SdkError<E, R>) -> AwsError {
    move |e| AwsError::Api {
        call,
        message: aws_sdk_ec2::error::DisplayErrorContext(e).to_string(),
    }
}

pub(crate) fn ssm_err<E: std::error::Error + 'static, R: std::fmt::Debug>(
    call: &'static str,
) -> impl Fn(aws_sdk_ssm::error::SdkError<E, R>) -> AwsError {
    move |e| AwsError::Api {
        call,
        message: aws_sdk_ssm::error::DisplayErrorContext(e).to_string(),
    }
}

/// A launch call's failure: a service error keeps EC2's code (UnauthorizedOperation,
/// InvalidParameterValue, RequestLimitExceeded after the SDK's retries, ...) so the NodeClaim
/// can show it; a transport failure stays [`adze_cloud::CloudError::Other`].
pub(crate) fn launch_err<E, R>(
    call: &'static str,
) -> impl Fn(aws_sdk_ec2::error::SdkError<E, R>) -> adze_cloud::CloudError
where
    E: std::error::Error + aws_sdk_ec2::error::ProvideErrorMetadata + 'static,
    R: std::fmt::Debug,
{
    move |e| {
        let code = e
            .as_service_error()
            .and_then(|s| s.code())
            .map(String::from);
        let message = format!("{call}: {}", aws_sdk_ec2::error::DisplayErrorContext(&e));
        match code {
            Some(code) => adze_cloud::CloudError::LaunchFailed { code, message },
            None => adze_cloud::CloudError::Other(message),
        }
    }
}

impl From<AwsError> for adze_cloud::CloudError {
    fn from(e: AwsError) -> Self {
        adze_cloud::CloudError::Other(e.to_string())
    }
}
