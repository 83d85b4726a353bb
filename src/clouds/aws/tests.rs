//! Unit tests of the AWS source, with loopback doubles for STS, SSO and the metadata services.
