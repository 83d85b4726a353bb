//! Which region, and which STS (or SSO portal) endpoint, as the AWS CLI picks them: the region
//! from `--aws-region`, else `AWS_REGION` (the SDKs, AWS CLI v2), `AWS_DEFAULT_REGION`, the
//! profile's `region`; STS at `https://sts.REGION.DNS-SUFFIX` of the region's partition (also for
//! us-east-1: botocore's `sts_regional_endpoints` is `regional` by default), the global
//! `https://sts.amazonaws.com` signed for us-east-1 when no region is known or
//! `AWS_STS_REGIONAL_ENDPOINTS=legacy` asks for it in a region that had it; and over all of
//! them an endpoint the configuration names (`AWS_ENDPOINT_URL_STS`, `AWS_ENDPOINT_URL`, the
//! profile's `services` section, its `endpoint_url`), which is then the host the token is signed
//! for, as there.

use super::files::{Section, SharedFiles};
use super::vars;
use crate::error::{Exit, fail};

/// Where requests go and how they are signed: the URL as the configuration wrote it (botocore
/// keeps it so), the `host` it signs, the canonical path, the signing region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// Scheme, authority and path, without a query: `https://sts.eu-west-1.amazonaws.com/`.
    pub url: String,
    pub host: String,
    pub canonical_path: String,
    pub signing_region: String,
}

/// The partitions of botocore's `partitions.json`: region prefix → DNS suffix. A region of no
/// known partition is in `aws`'s.
const PARTITIONS: [(&str, &str); 7] = [
    ("cn-", "amazonaws.com.cn"),
    ("us-gov-", "amazonaws.com"),
    ("us-iso-", "c2s.ic.gov"),
    ("us-isob-", "sc2s.sgov.gov"),
    ("eu-isoe-", "cloud.adc-e.uk"),
    ("us-isof-", "csp.hci.ic.gov"),
    ("eusc-", "amazonaws.eu"),
];

/// The regions that had a global STS endpoint (botocore's `LEGACY_GLOBAL_STS_REGIONS`), where
/// `sts_regional_endpoints = legacy` still sends requests to it.
const LEGACY_GLOBAL_STS_REGIONS: [&str; 16] = [
    "ap-northeast-1",
    "ap-south-1",
    "ap-southeast-1",
    "ap-southeast-2",
    "aws-global",
    "ca-central-1",
    "eu-central-1",
    "eu-north-1",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "sa-east-1",
    "us-east-1",
    "us-east-2",
    "us-west-1",
    "us-west-2",
];

fn dns_suffix(region: &str) -> &'static str {
    PARTITIONS
        .iter()
        .find(|(prefix, _)| region.starts_with(prefix))
        .map_or("amazonaws.com", |(_, suffix)| suffix)
}

/// The region: the flag, the variables, the profile; checked as botocore checks a region name
/// (it becomes part of a host name).
pub(crate) fn region(
    flag: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
    profile: Option<&Section>,
) -> anyhow::Result<Option<String>> {
    let (region, from) = match flag.filter(|r| !r.is_empty()) {
        Some(region) => (region.to_string(), "--aws-region"),
        None => match [vars::AWS_REGION, vars::AWS_DEFAULT_REGION]
            .into_iter()
            .find_map(|name| env(name).filter(|v| !v.is_empty()).map(|v| (v, name)))
        {
            Some(found) => found,
            None => match profile.and_then(|p| p.get("region")) {
                Some(region) => (region.to_string(), "the profile's region"),
                None => return Ok(None),
            },
        },
    };
    let valid = !region.is_empty()
        && region.len() <= 63
        && region
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !region.starts_with('-')
        && !region.ends_with('-');
    if !valid {
        return Err(fail(
            Exit::Input,
            format!(
                "{from} names the AWS region {:?}, which is not a region name; give one like eu-west-1",
                crate::text::printable_brief(&region, 80)
            ),
        ));
    }
    Ok(Some(region))
}

impl Endpoint {
    /// The region's own STS endpoint, or the global one (no region, or `legacy_global` in a
    /// region that had it).
    pub fn for_region(region: Option<&str>, legacy_global: bool) -> Endpoint {
        let global = match region {
            None | Some("aws-global") => true,
            Some(region) => legacy_global && LEGACY_GLOBAL_STS_REGIONS.contains(&region),
        };
        let (host, signing_region) = match region {
            Some(region) if !global => (
                format!("sts.{region}.{}", dns_suffix(region)),
                region.to_string(),
            ),
            _ => ("sts.amazonaws.com".to_string(), "us-east-1".to_string()),
        };
        Endpoint {
            url: format!("https://{host}/"),
            host,
            canonical_path: "/".into(),
            signing_region,
        }
    }

    /// An endpoint URL the configuration names, as written; `from` says where it came from.
    fn configured(text: &str, region: &str, from: &str) -> anyhow::Result<Endpoint> {
        let invalid = |why: &str| {
            fail(
                Exit::Input,
                format!(
                    "{from} is not an endpoint URL ({why}): {}; give one like https://sts.eu-west-1.amazonaws.com",
                    crate::text::printable_brief(&crate::text::redact_userinfo(text), 200)
                ),
            )
        };
        let parsed = url::Url::parse(text).map_err(|err| invalid(&err.to_string()))?;
        let default_port = match parsed.scheme() {
            "https" => 443,
            "http" => 80,
            _ => return Err(invalid("not http or https")),
        };
        let Some(hostname) = parsed.host_str() else {
            return Err(invalid("no host"));
        };
        // The authority and path as written (botocore keeps the URL's text).
        let after_scheme = &text[text.find("://").map_or(0, |at| at + 3)..];
        let authority_end = after_scheme
            .find(['/', '?', '#'])
            .unwrap_or(after_scheme.len());
        let authority = &after_scheme[..authority_end];
        let rest = &after_scheme[authority_end..];
        let path = &rest[..rest.find(['?', '#']).unwrap_or(rest.len())];
        let path = if path.is_empty() { "/" } else { path };
        // botocore's `_host_from_url`: the host name alone when the port is the scheme's own,
        // else the authority as written.
        let host = if authority.contains('@') {
            return Err(invalid("it carries a user name or password"));
        } else if parsed.port_or_known_default() == Some(default_port)
            && authority
                .rsplit_once(':')
                .is_some_and(|(_, port)| port.parse::<u16>().ok() == Some(default_port))
        {
            hostname.to_string()
        } else {
            authority.to_string()
        };
        Ok(Endpoint {
            url: format!("{}://{authority}{path}", parsed.scheme()),
            host,
            canonical_path: path.to_string(),
            signing_region: region.to_string(),
        })
    }
}

/// Whether the configured endpoints are to be ignored (`AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`,
/// or the profile's `ignore_configured_endpoint_urls`).
fn ignore_configured(env: &dyn Fn(&str) -> Option<String>, profile: Option<&Section>) -> bool {
    env(vars::AWS_IGNORE_CONFIGURED_ENDPOINT_URLS)
        .or_else(|| {
            profile
                .and_then(|p| p.get("ignore_configured_endpoint_urls"))
                .map(str::to_string)
        })
        .is_some_and(|value| value.eq_ignore_ascii_case("true"))
}

/// The endpoint URL the configuration names for `service` (`sts`, `sso`), and where it came
/// from, in botocore's order: the service's variable, `AWS_ENDPOINT_URL`, the profile's
/// `services` section, the profile's `endpoint_url`.
fn configured_url(
    service: &str,
    service_variable: &str,
    env: &dyn Fn(&str) -> Option<String>,
    files: &SharedFiles,
    profile_name: &str,
    profile: Option<&Section>,
) -> anyhow::Result<Option<(String, String)>> {
    if ignore_configured(env, profile) {
        return Ok(None);
    }
    for name in [service_variable, vars::AWS_ENDPOINT_URL] {
        if let Some(url) = env(name).filter(|v| !v.is_empty()) {
            return Ok(Some((url, name.to_string())));
        }
    }
    let Some(profile) = profile else {
        return Ok(None);
    };
    if let Some(services) = profile.get("services") {
        let section = files.services(services).ok_or_else(|| {
            fail(
                Exit::Input,
                format!(
                    "AWS profile {profile_name:?} names the services section {services:?}, which {} has not; add [services {services}] or remove `services` from the profile",
                    files.config_path.display()
                ),
            )
        })?;
        if let Some(url) = section
            .nested
            .get(service)
            .and_then(|values| values.get("endpoint_url"))
            .filter(|v| !v.is_empty())
        {
            return Ok(Some((
                url.clone(),
                format!("[services {services}] {service}.endpoint_url"),
            )));
        }
    }
    Ok(profile.get("endpoint_url").map(|url| {
        (
            url.to_string(),
            format!("AWS profile {profile_name:?}'s endpoint_url"),
        )
    }))
}

/// The STS endpoint for this region and configuration.
pub(crate) fn sts(
    region: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
    files: &SharedFiles,
    profile_name: &str,
) -> anyhow::Result<Endpoint> {
    let profile = files.profile(profile_name);
    if let Some((url, from)) = configured_url(
        "sts",
        vars::AWS_ENDPOINT_URL_STS,
        env,
        files,
        profile_name,
        profile,
    )? {
        let Some(region) = region else {
            // As the AWS CLI: an endpoint of one's own is signed for the region one names.
            return Err(fail(
                Exit::Input,
                format!(
                    "{from} names an STS endpoint, but no AWS region is set to sign for; give --aws-region (or set AWS_REGION)"
                ),
            ));
        };
        return Endpoint::configured(&url, region, &from);
    }
    let legacy = env(vars::AWS_STS_REGIONAL_ENDPOINTS)
        .or_else(|| {
            profile
                .and_then(|p| p.get("sts_regional_endpoints"))
                .map(str::to_string)
        })
        .is_some_and(|mode| mode == "legacy");
    Ok(Endpoint::for_region(region, legacy))
}

/// The SSO portal's endpoint in `region` (the SSO session's, not the profile's).
pub(crate) fn sso_portal(
    region: &str,
    env: &dyn Fn(&str) -> Option<String>,
    files: &SharedFiles,
    profile_name: &str,
) -> anyhow::Result<Endpoint> {
    let profile = files.profile(profile_name);
    if let Some((url, from)) = configured_url(
        "sso",
        vars::AWS_ENDPOINT_URL_SSO,
        env,
        files,
        profile_name,
        profile,
    )? {
        return Endpoint::configured(&url, region, &from);
    }
    let host = format!("portal.sso.{region}.{}", dns_suffix(region));
    Ok(Endpoint {
        url: format!("https://{host}/"),
        host,
        canonical_path: "/".into(),
        signing_region: region.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name: &str| map.get(name).cloned()
    }

    fn sts_url(region: Option<&str>, env: &[(&str, &str)], config: &str) -> String {
        let files = SharedFiles::from_texts(config, "");
        let endpoint = sts(region, &env_of(env), &files, "default").unwrap();
        format!(
            "{} {} {}",
            endpoint.url, endpoint.host, endpoint.signing_region
        )
    }

    /// What the AWS CLI (botocore 1.43) signed for each case.
    #[test]
    fn the_sts_endpoint_is_the_aws_clis() {
        let none: &[(&str, &str)] = &[];
        for (region, expected) in [
            (
                None,
                "https://sts.amazonaws.com/ sts.amazonaws.com us-east-1",
            ),
            (
                Some("us-east-1"),
                "https://sts.us-east-1.amazonaws.com/ sts.us-east-1.amazonaws.com us-east-1",
            ),
            (
                Some("cn-north-1"),
                "https://sts.cn-north-1.amazonaws.com.cn/ sts.cn-north-1.amazonaws.com.cn cn-north-1",
            ),
            (
                Some("us-gov-west-1"),
                "https://sts.us-gov-west-1.amazonaws.com/ sts.us-gov-west-1.amazonaws.com us-gov-west-1",
            ),
            (
                Some("aws-global"),
                "https://sts.amazonaws.com/ sts.amazonaws.com us-east-1",
            ),
            (
                Some("xx-yy-1"),
                "https://sts.xx-yy-1.amazonaws.com/ sts.xx-yy-1.amazonaws.com xx-yy-1",
            ),
        ] {
            assert_eq!(sts_url(region, none, ""), expected, "{region:?}");
        }
        let legacy = [(vars::AWS_STS_REGIONAL_ENDPOINTS, "legacy")];
        assert_eq!(
            sts_url(Some("eu-west-1"), &legacy, ""),
            "https://sts.amazonaws.com/ sts.amazonaws.com us-east-1"
        );
        assert_eq!(
            sts_url(Some("ap-east-1"), &legacy, ""),
            "https://sts.ap-east-1.amazonaws.com/ sts.ap-east-1.amazonaws.com ap-east-1"
        );
        assert_eq!(
            sts_url(
                Some("eu-west-1"),
                none,
                "[default]\nsts_regional_endpoints = legacy\n"
            ),
            "https://sts.amazonaws.com/ sts.amazonaws.com us-east-1"
        );
    }

    #[test]
    fn a_configured_endpoint_is_the_signed_host_as_written() {
        let region = Some("eu-west-1");
        assert_eq!(
            sts_url(
                region,
                &[(vars::AWS_ENDPOINT_URL, "https://x.example:8443/p/")],
                ""
            ),
            "https://x.example:8443/p/ x.example:8443 eu-west-1"
        );
        assert_eq!(
            sts_url(
                region,
                &[(vars::AWS_ENDPOINT_URL, "https://X.example:443")],
                ""
            ),
            "https://X.example:443/ x.example eu-west-1"
        );
        assert_eq!(
            sts_url(
                region,
                &[
                    (vars::AWS_ENDPOINT_URL_STS, "http://127.0.0.1:9/base"),
                    (vars::AWS_ENDPOINT_URL, "https://other")
                ],
                ""
            ),
            "http://127.0.0.1:9/base 127.0.0.1:9 eu-west-1"
        );
        let services = "[default]\nservices = local\nendpoint_url = https://global.example\n[services local]\nsts =\n  endpoint_url = http://127.0.0.1:7\n";
        assert_eq!(
            sts_url(region, &[], services),
            "http://127.0.0.1:7/ 127.0.0.1:7 eu-west-1"
        );
        assert_eq!(
            sts_url(
                region,
                &[],
                "[default]\nendpoint_url = https://global.example\n"
            ),
            "https://global.example/ global.example eu-west-1"
        );
        assert_eq!(
            sts_url(
                region,
                &[
                    (vars::AWS_ENDPOINT_URL_STS, "http://127.0.0.1:9"),
                    (vars::AWS_IGNORE_CONFIGURED_ENDPOINT_URLS, "true")
                ],
                services
            ),
            "https://sts.eu-west-1.amazonaws.com/ sts.eu-west-1.amazonaws.com eu-west-1"
        );
    }

    #[test]
    fn bad_regions_and_endpoints_are_named_in_one_line() {
        let files = SharedFiles::from_texts("", "");
        let line = |result: anyhow::Result<Endpoint>| crate::error::one_line(&result.unwrap_err());
        assert_eq!(
            line(sts(
                None,
                &env_of(&[(vars::AWS_ENDPOINT_URL_STS, "http://127.0.0.1:9")]),
                &files,
                "default"
            )),
            "AWS_ENDPOINT_URL_STS names an STS endpoint, but no AWS region is set to sign for; give --aws-region (or set AWS_REGION)"
        );
        assert_eq!(
            line(sts(
                Some("eu-west-1"),
                &env_of(&[(vars::AWS_ENDPOINT_URL, "not-a-url")]),
                &files,
                "default"
            )),
            "AWS_ENDPOINT_URL is not an endpoint URL (relative URL without a base): not-a-url; give one like https://sts.eu-west-1.amazonaws.com"
        );
        let err = region(
            None,
            &env_of(&[(vars::AWS_DEFAULT_REGION, "bad/region")]),
            None,
        )
        .unwrap_err();
        assert_eq!(
            crate::error::one_line(&err),
            "AWS_DEFAULT_REGION names the AWS region \"bad/region\", which is not a region name; give one like eu-west-1"
        );
        let missing = SharedFiles::from_texts("[default]\nservices = nope\n", "");
        assert_eq!(
            line(sts(Some("eu-west-1"), &env_of(&[]), &missing, "default")),
            "AWS profile \"default\" names the services section \"nope\", which /home/u/.aws/config has not; add [services nope] or remove `services` from the profile"
        );
    }

    #[test]
    fn the_region_comes_from_the_flag_the_variables_then_the_profile() {
        let profile = SharedFiles::from_texts("[default]\nregion = from-profile-1\n", "");
        let profile = profile.profile("default");
        let env = env_of(&[
            (vars::AWS_DEFAULT_REGION, "default-1"),
            (vars::AWS_REGION, "region-1"),
        ]);
        assert_eq!(
            region(Some("flag-1"), &env, profile).unwrap().as_deref(),
            Some("flag-1")
        );
        assert_eq!(
            region(None, &env, profile).unwrap().as_deref(),
            Some("region-1")
        );
        let env = env_of(&[(vars::AWS_DEFAULT_REGION, "default-1")]);
        assert_eq!(
            region(None, &env, profile).unwrap().as_deref(),
            Some("default-1")
        );
        assert_eq!(
            region(None, &env_of(&[]), profile).unwrap().as_deref(),
            Some("from-profile-1")
        );
        assert_eq!(region(None, &env_of(&[]), None).unwrap(), None);
    }
}
