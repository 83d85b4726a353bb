//! What int128/kubelogin's own flags (`cli/kubelogin_flags.rs`) change in kubecred's settings:
//! each mapped, or ignored with a notice saying why (`peers::kubelogin::why_ignored`).

use crate::cli::KubeloginFlags;
use crate::error::{Exit, fail};
use crate::peers::kubelogin::why_ignored;

/// What kubelogin's flags change in kubecred's settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubeloginSettings {
    /// From `--oidc-pkce-method`: `None` leaves the choice to discovery.
    pub pkce: Option<bool>,
    /// From `--oidc-redirect-url-hostname`, trimmed.
    pub redirect_host: Option<String>,
    /// From `--password` (the password grant).
    pub password: Option<crate::secret::Secret>,
    /// From `--oidc-request-header`, as given (split like --request-header's).
    pub request_headers: Vec<String>,
}

/// Names the ignored flags in a notice, and maps the rest.
pub fn resolve(flags: &KubeloginFlags) -> anyhow::Result<KubeloginSettings> {
    for flag in flags.ignored_given() {
        crate::log::notice(format!(
            "ignoring kubelogin's {flag}: {}",
            why_ignored(flag)
        ));
    }
    Ok(KubeloginSettings {
        pkce: pkce_from_method(flags.oidc_pkce_method.as_deref())?,
        redirect_host: flags
            .oidc_redirect_url_hostname
            .as_deref()
            .map(|host| host.trim().to_string()),
        password: flags.password.clone().map(crate::secret::Secret::new),
        request_headers: flags.oidc_request_header.clone(),
    })
}

/// kubelogin's `--oidc-pkce-method`: `auto` leaves the choice to discovery, `no` turns PKCE off,
/// `S256` on.
fn pkce_from_method(method: Option<&str>) -> anyhow::Result<Option<bool>> {
    let Some(method) = method else {
        return Ok(None);
    };
    match method.trim() {
        m if m.eq_ignore_ascii_case("auto") => Ok(None),
        m if m.eq_ignore_ascii_case("no") => Ok(Some(false)),
        m if m.eq_ignore_ascii_case("S256") => Ok(Some(true)),
        _ => Err(fail(
            Exit::Input,
            format!(
                "--oidc-pkce-method {method:?} is not one of auto, no, S256 (or use --pkce / --pkce=false)"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::exit_code_of;

    #[test]
    fn pkce_methods() {
        assert_eq!(pkce_from_method(None).unwrap(), None);
        assert_eq!(pkce_from_method(Some("auto")).unwrap(), None);
        assert_eq!(pkce_from_method(Some("no")).unwrap(), Some(false));
        assert_eq!(pkce_from_method(Some("s256")).unwrap(), Some(true));
        let err = pkce_from_method(Some("plain")).unwrap_err();
        assert_eq!(exit_code_of(&err), Exit::Input);
    }

    #[test]
    fn kubelogins_password_is_taken_and_never_shown() {
        let flags = KubeloginFlags {
            password: Some("hunter2".into()),
            ..Default::default()
        };
        let settings = resolve(&flags).unwrap();
        assert_eq!(
            settings.password.as_ref().map(|p| p.expose()),
            Some("hunter2")
        );
        assert!(!format!("{settings:?}").contains("hunter2"));
    }
}
