//! The AWS source's requests, all through kubecred's own HTTP client (`crate::http`: bounded,
//! proxies as curl reads them, the system's roots loaded lazily, no redirects), built on first
//! need: signing with keys from the environment or a file sends nothing. The instance metadata
//! service gets a client of its own with the SDKs' one-second bound and no retries, so that off
//! EC2 the chain's last step fails in a second, not after the provider's timeout; a container's
//! credentials endpoint one with botocore's two seconds and no proxy (the agent is on the task's
//! or pod's own link, where botocore asks it directly too).

use crate::config::HttpSettings;
use crate::error::{Exit, fail, outage};
use crate::http::{self, Answer, Client, Outgoing, Recipient, Replay};
use reqwest::Method;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::cell::OnceCell;
use std::time::Duration;
use url::Url;

/// What the requests may take: the HTTP settings (`--http-timeout`, the CAs, the proxies), the
/// time retries may start in (what is left of the entry's lock timeout), and how long a
/// `credential_process` may run.
#[derive(Debug, Clone)]
pub struct Network {
    pub http: HttpSettings,
    pub retry_window: Duration,
    pub process_timeout: Duration,
}

/// The instance metadata service's bound per request: botocore's `metadata_service_timeout`.
const METADATA_TIMEOUT: Duration = Duration::from_secs(1);

/// The container credentials endpoint's bound per request: botocore's `ContainerMetadataFetcher`.
const CONTAINER_TIMEOUT: Duration = Duration::from_secs(2);
/// Its retries may start within this long (botocore tries it three times).
const CONTAINER_RETRIES: Duration = Duration::from_secs(5);

/// Answers are small XML or JSON documents.
const BODY_CAP: u64 = 256 * 1024;

/// The clients, each built when first asked for.
pub(super) struct Clients<'a> {
    network: &'a Network,
    main: OnceCell<Client>,
    metadata: OnceCell<Client>,
    container: OnceCell<Client>,
}

impl<'a> Clients<'a> {
    pub fn new(network: &'a Network) -> Self {
        Clients {
            network,
            main: OnceCell::new(),
            metadata: OnceCell::new(),
            container: OnceCell::new(),
        }
    }

    pub fn network(&self) -> &Network {
        self.network
    }

    fn main(&self) -> anyhow::Result<&Client> {
        if let Some(client) = self.main.get() {
            return Ok(client);
        }
        let client = http::client(&self.network.http, self.network.retry_window)?;
        Ok(self.main.get_or_init(|| client))
    }

    fn metadata(&self) -> anyhow::Result<&Client> {
        if let Some(client) = self.metadata.get() {
            return Ok(client);
        }
        let settings = HttpSettings {
            timeout: METADATA_TIMEOUT,
            ..self.network.http.clone()
        };
        let client = http::client(&settings, Duration::ZERO)?;
        Ok(self.metadata.get_or_init(|| client))
    }

    fn container(&self) -> anyhow::Result<&Client> {
        if let Some(client) = self.container.get() {
            return Ok(client);
        }
        let settings = HttpSettings {
            timeout: CONTAINER_TIMEOUT,
            proxy: crate::config::ProxyEnvironment::default(),
            ..self.network.http.clone()
        };
        let client = http::client(&settings, CONTAINER_RETRIES)?;
        Ok(self.container.get_or_init(|| client))
    }

    /// Sends a request to AWS (STS, the SSO portal). `what`
    /// names it in messages: "the AssumeRole request to https://sts.eu-west-1.amazonaws.com/".
    /// No answer is an outage.
    pub fn send(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
        what: &str,
    ) -> anyhow::Result<Answer> {
        self.send_with(self.main()?, method, url, headers, body, what)
    }

    /// The same to a container's credentials endpoint.
    pub fn send_to_container(
        &self,
        url: &str,
        headers: &[(&str, String)],
        what: &str,
    ) -> anyhow::Result<Answer> {
        self.send_with(
            self.container()?,
            Method::GET,
            url,
            headers,
            Vec::new(),
            what,
        )
    }

    /// The same to the instance metadata service.
    pub fn send_to_metadata(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, String)],
        what: &str,
    ) -> anyhow::Result<Answer> {
        self.send_with(self.metadata()?, method, url, headers, Vec::new(), what)
    }

    fn send_with(
        &self,
        client: &Client,
        method: Method,
        url: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
        what: &str,
    ) -> anyhow::Result<Answer> {
        let parsed = Url::parse(url).map_err(|err| {
            fail(
                Exit::Input,
                format!("{what}: {url} is not a URL ({err}); check the AWS configuration"),
            )
        })?;
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| fail(Exit::Input, format!("{what}: a bad header name {name}")))?;
            let mut value = HeaderValue::from_str(value).map_err(|_| {
                fail(
                    Exit::Input,
                    format!("{what}: the {name} header's value cannot be sent in HTTP"),
                )
            })?;
            // Authorization, session tokens: reqwest's logs never show them.
            value.set_sensitive(true);
            map.append(name, value);
        }
        crate::debug!(1, "{what}");
        client
            .send(&Outgoing {
                method,
                url: &parsed,
                headers: map,
                body,
                what,
                body_cap: BODY_CAP,
                replay: Replay::Safe,
                recipient: Recipient::Other,
            })
            .map_err(|failure| outage(format!("{what}: {failure}")))
    }
}
