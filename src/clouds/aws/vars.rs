//! Every environment variable the AWS source reads, in one place (the AWS CLI's and SDKs' names;
//! crate::env_vars lists kubecred's own).

/// The profile, when `--aws-profile` does not name one; `AWS_DEFAULT_PROFILE` is botocore's
/// older name, read after it.
pub const AWS_PROFILE: &str = "AWS_PROFILE";
pub const AWS_DEFAULT_PROFILE: &str = "AWS_DEFAULT_PROFILE";
/// The region, when `--aws-region` does not name one: `AWS_REGION` (the SDKs and AWS CLI v2),
/// then `AWS_DEFAULT_REGION` (every AWS CLI), then the profile's `region`.
pub const AWS_REGION: &str = "AWS_REGION";
pub const AWS_DEFAULT_REGION: &str = "AWS_DEFAULT_REGION";
/// Where the shared files are (`~/.aws/config`, `~/.aws/credentials` otherwise).
pub const AWS_CONFIG_FILE: &str = "AWS_CONFIG_FILE";
pub const AWS_SHARED_CREDENTIALS_FILE: &str = "AWS_SHARED_CREDENTIALS_FILE";
/// Static credentials; `AWS_SECURITY_TOKEN` is the older name of the session token, and
/// `AWS_CREDENTIAL_EXPIRATION` says until when they are valid.
pub const AWS_ACCESS_KEY_ID: &str = "AWS_ACCESS_KEY_ID";
pub const AWS_SECRET_ACCESS_KEY: &str = "AWS_SECRET_ACCESS_KEY";
pub const AWS_SESSION_TOKEN: &str = "AWS_SESSION_TOKEN";
pub const AWS_SECURITY_TOKEN: &str = "AWS_SECURITY_TOKEN";
pub const AWS_CREDENTIAL_EXPIRATION: &str = "AWS_CREDENTIAL_EXPIRATION";
/// Web identity (EKS IRSA, CI): a token file and the role to assume with it.
pub const AWS_WEB_IDENTITY_TOKEN_FILE: &str = "AWS_WEB_IDENTITY_TOKEN_FILE";
pub const AWS_ROLE_ARN: &str = "AWS_ROLE_ARN";
pub const AWS_ROLE_SESSION_NAME: &str = "AWS_ROLE_SESSION_NAME";
/// Where STS (and every service) is asked, over the region's endpoint; and the switch that
/// ignores the configured endpoints.
pub const AWS_ENDPOINT_URL_STS: &str = "AWS_ENDPOINT_URL_STS";
pub const AWS_ENDPOINT_URL_SSO: &str = "AWS_ENDPOINT_URL_SSO";
pub const AWS_ENDPOINT_URL: &str = "AWS_ENDPOINT_URL";
pub const AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: &str = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS";
/// `legacy`: the global STS endpoint for the regions that had it (botocore's switch).
pub const AWS_STS_REGIONAL_ENDPOINTS: &str = "AWS_STS_REGIONAL_ENDPOINTS";
/// Container credentials (ECS, EKS Pod Identity): a path on 169.254.170.2, or a full URL, and
/// the authorization header's value or the file holding it.
pub const AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: &str = "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI";
pub const AWS_CONTAINER_CREDENTIALS_FULL_URI: &str = "AWS_CONTAINER_CREDENTIALS_FULL_URI";
pub const AWS_CONTAINER_AUTHORIZATION_TOKEN: &str = "AWS_CONTAINER_AUTHORIZATION_TOKEN";
pub const AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: &str = "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE";
/// The instance metadata service (IMDSv2): off, or at another address.
pub const AWS_EC2_METADATA_DISABLED: &str = "AWS_EC2_METADATA_DISABLED";
pub const AWS_EC2_METADATA_SERVICE_ENDPOINT: &str = "AWS_EC2_METADATA_SERVICE_ENDPOINT";
pub const AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE: &str = "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE";
