//! Where int128/kubelogin keeps the login of a `get-token` stanza, named exactly as kubelogin
//! names it, so that `convert-kubeconfig` carries a stanza's own login and never another
//! user's: kubelogin keys its cache (pkg/tokencache) on everything that makes a login differ —
//! the issuer, client and secret, the extra scopes, the redirect URL, PKCE, access token or ID
//! token, the request headers, the TLS settings, the password grant's user name and the
//! authorization request's extra parameters — and names the entry by the SHA-256 of that
//! `tokencache.Key` in Go's `encoding/gob`. This module writes the same gob bytes (the type
//! definitions of the types involved, then the value) and so the same name.
//!
//! The key's types changed with kubelogin's releases ([`Release`]: 1.31 made the key of the
//! settings, 1.32 made PKCE a method, 1.33 added the redirect URL, 1.34 the request headers,
//! 1.36 the extra parameters), and each release names the same stanza's entry otherwise: a
//! stanza's login is looked for under the name of every release that runs the stanza (one
//! whose flags it does not use cannot have written it, and a name computed without such a flag
//! could be another stanza's).
//!
//! Go iterates a map in random order, and gob writes a map in iteration order: with two or more
//! request headers or extra parameters, each kubelogin run may have written under another of
//! the possible names. [`names_of`] gives all of them (every order), so the entry is found
//! whichever order wrote it; with so many entries that the orders cannot be tried, it says so.
//! The reference values in the tests were made by Go's own encoder with kubelogin's types at
//! each release (`tests/support/kubelogin_cache_key.go`).

use super::command_line::{GetToken, Grant, Pkce, Storage};

/// gob's first type id for user types (encoding/gob's `firstUserId` + 1): kubelogin encodes the
/// key first thing in a process, so its types get the ids from here on, in the order gob meets
/// them: `Key`, `Provider`, `[]string`, `map[string]string` (from 1.34), `Config`.
const KEY: i64 = 65;
const PROVIDER: i64 = 66;
const STRINGS: i64 = 67;
const STRING_MAP: i64 = 68;
/// gob's built-in type ids.
const BOOL: i64 = 1;
const INT: i64 = 2;
const STRING: i64 = 6;

/// More orders than this are not tried (8 entries in one map, or the product over both).
const MAX_ORDERS: usize = 40_320;

/// The releases of kubelogin whose `tokencache.Key` differs, each standing for the releases up
/// to the next; the key was of other settings before 1.31.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// 1.31: `Provider{IssuerURL, ClientID, ClientSecret, ExtraScopes, UsePKCE bool,
    /// UseAccessToken}`, `TLSClientConfig`, `Username`.
    V1_31,
    /// 1.32: `UsePKCE` became `PKCEMethod`.
    V1_32,
    /// 1.33: `Provider.RedirectURL`.
    V1_33,
    /// 1.34 and 1.35: `Provider.RequestHeaders`.
    V1_34,
    /// 1.36 and later: `Key.AuthRequestExtraParams`.
    V1_36,
}

impl Release {
    /// Newest first.
    pub const ALL: [Release; 5] = [
        Release::V1_36,
        Release::V1_34,
        Release::V1_33,
        Release::V1_32,
        Release::V1_31,
    ];

    /// Whether a kubelogin of this release (or of one it stands for) runs `line`: every flag it
    /// gives is one that release has.
    pub fn runs(self, line: &GetToken) -> bool {
        let since = |release: Release| self as u8 >= release as u8;
        let until_1_35 = line.gave("oidc-redirect-url-hostname")
            || line.gave("oidc-redirect-url-authcode-keyboard");
        let client_credentials = line.grant == Grant::ClientCredentials;
        !(line.gave("oidc-pkce-method") && !since(Release::V1_32)
            || line.gave("token-cache-storage") && !since(Release::V1_32)
            || line.gave("oidc-redirect-url") && !since(Release::V1_33)
            || client_credentials && !since(Release::V1_33)
            || line.token_cache_storage == Storage::None && !since(Release::V1_33)
            || line.gave("oidc-request-header") && !since(Release::V1_34)
            || until_1_35 && since(Release::V1_36))
    }

    fn has_redirect_url(self) -> bool {
        self as u8 >= Release::V1_33 as u8
    }

    fn has_request_headers(self) -> bool {
        self as u8 >= Release::V1_34 as u8
    }

    fn has_extra_params(self) -> bool {
        self == Release::V1_36
    }

    /// The type id gob gives `tlsclientconfig.Config`: it comes after the map type's, which
    /// is there from 1.34, when a field first took a map.
    fn tls_config_id(self) -> i64 {
        if self.has_request_headers() { 69 } else { 68 }
    }
}

/// The names kubelogin may have given the cache entry of `line`: those of every release that
/// runs it ([`names_of`]), newest first. The error says why none can be told.
pub fn file_names(line: &GetToken) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut untold = None;
    for release in Release::ALL {
        match names_of(release, line) {
            Ok(some) => names.extend(some),
            Err(why) => untold = untold.or(Some(why)),
        }
    }
    match untold {
        Some(why) if names.is_empty() => Err(why),
        _ => Ok(names),
    }
}

/// The names a kubelogin of `release` gives the cache entry of `line`: one, unless a map holds
/// several entries; none when that release does not run `line`.
pub fn names_of(release: Release, line: &GetToken) -> Result<Vec<String>, String> {
    if !release.runs(line) {
        return Ok(Vec::new());
    }
    let headers = orders(
        line.request_headers
            .as_deref()
            .filter(|_| release.has_request_headers()),
    )?;
    let params = orders(
        extra_params(line)
            .as_deref()
            .filter(|_| release.has_extra_params()),
    )?;
    if headers.len().saturating_mul(params.len()) > MAX_ORDERS {
        return Err(
            "its request headers and extra parameters are too many to find kubelogin's cache entry by"
                .into(),
        );
    }
    let mut names = Vec::new();
    for header_order in &headers {
        for param_order in &params {
            let bytes = encode(
                release,
                line,
                header_order.as_deref(),
                param_order.as_deref(),
            );
            names.push(crate::digest::sha256_hex(&bytes));
        }
    }
    Ok(names)
}

/// The key's `AuthRequestExtraParams`: the browser and keyboard logins' extra parameters, the
/// client credentials grant's always (kubelogin builds that map even when empty), no others.
fn extra_params(line: &GetToken) -> Option<Vec<(String, String)>> {
    match line.grant {
        Grant::AuthcodeBrowser | Grant::AuthcodeKeyboard => line.auth_request_extra_params.clone(),
        Grant::ClientCredentials => {
            Some(line.auth_request_extra_params.clone().unwrap_or_default())
        }
        Grant::Password | Grant::DeviceCode => None,
    }
}

/// The key's `Provider.RedirectURL` (from 1.33): `--oidc-redirect-url`, or
/// `--oidc-redirect-url-authcode-keyboard` over it (1.33 and 1.34).
fn redirect_url(line: &GetToken) -> &str {
    line.redirect_url_authcode_keyboard
        .as_deref()
        .or(line.redirect_url.as_deref())
        .unwrap_or("")
}

/// Every order of a map's entries (`[None]` for no map).
type Entries = Vec<(String, String)>;
fn orders(map: Option<&[(String, String)]>) -> Result<Vec<Option<Entries>>, String> {
    let Some(map) = map else {
        return Ok(vec![None]);
    };
    if map.len() > 8 {
        return Err(format!(
            "its {} request headers or extra parameters are too many to find kubelogin's cache entry by",
            map.len()
        ));
    }
    let mut all = Vec::new();
    permute(&mut map.to_vec(), 0, &mut all);
    Ok(all.into_iter().map(Some).collect())
}

fn permute(items: &mut Entries, from: usize, out: &mut Vec<Entries>) {
    if from + 1 >= items.len() {
        out.push(items.clone());
        return;
    }
    for i in from..items.len() {
        items.swap(from, i);
        permute(items, from + 1, out);
        items.swap(from, i);
    }
}

/// gob's encoding of `release`'s `tokencache.Key` for `line`, with the maps in these orders:
/// the type definitions, then the value.
fn encode(
    release: Release,
    line: &GetToken,
    headers: Option<&[(String, String)]>,
    params: Option<&[(String, String)]>,
) -> Vec<u8> {
    let mut out = Vec::new();
    for definition in type_definitions(release) {
        out.extend(definition);
    }
    let mut value = Message::new(KEY);
    let mut key = value.open();
    {
        let mut provider = key.nested(0);
        provider.string(0, &line.issuer_url);
        provider.string(1, &line.client_id);
        provider.string(2, line.client_secret.as_ref().map_or("", |s| s.expose()));
        provider.strings(3, &line.extra_scopes);
        // Fields after ExtraScopes move up one where RedirectURL is not there yet.
        let shift = usize::from(release.has_redirect_url());
        if release.has_redirect_url() {
            provider.string(4, redirect_url(line));
        }
        match release {
            Release::V1_31 => provider.bool(4, line.pkce == Pkce::S256),
            _ => provider.int(4 + shift, line.pkce as i64),
        }
        provider.bool(5 + shift, line.use_access_token);
        if release.has_request_headers() {
            provider.map(7, headers);
        }
        provider.close();
    }
    {
        let mut tls = key.nested(1);
        tls.strings(0, &line.ca_files);
        tls.strings(1, &line.ca_data);
        tls.bool(2, line.skip_tls_verify);
        tls.int(3, line.renegotiation as i64);
        tls.close();
    }
    // The user name is in the key only for the password grant.
    let username = (line.grant == Grant::Password)
        .then_some(line.username.as_deref())
        .flatten()
        .unwrap_or("");
    key.string(2, username);
    if release.has_extra_params() {
        key.map(3, params);
    }
    key.close();
    out.extend(value.finish());
    out
}

/// The type definitions gob sends before the first value of a type: one message each, in the
/// order of their ids.
fn type_definitions(release: Release) -> Vec<Vec<u8>> {
    let tls_config = release.tls_config_id();
    let mut key_fields = vec![
        ("Provider", PROVIDER),
        ("TLSClientConfig", tls_config),
        ("Username", STRING),
    ];
    if release.has_extra_params() {
        key_fields.push(("AuthRequestExtraParams", STRING_MAP));
    }
    let mut provider_fields = vec![
        ("IssuerURL", STRING),
        ("ClientID", STRING),
        ("ClientSecret", STRING),
        ("ExtraScopes", STRINGS),
    ];
    if release.has_redirect_url() {
        provider_fields.push(("RedirectURL", STRING));
    }
    provider_fields.push(match release {
        Release::V1_31 => ("UsePKCE", BOOL),
        _ => ("PKCEMethod", INT),
    });
    provider_fields.push(("UseAccessToken", BOOL));
    if release.has_request_headers() {
        provider_fields.push(("RequestHeaders", STRING_MAP));
    }
    let mut definitions = vec![
        struct_type("Key", KEY, &key_fields),
        struct_type("Provider", PROVIDER, &provider_fields),
        collection_type(1, "[]string", STRINGS, &[STRING]),
    ];
    if release.has_request_headers() {
        definitions.push(collection_type(
            3,
            "map[string]string",
            STRING_MAP,
            &[STRING, STRING],
        ));
    }
    definitions.push(struct_type(
        "Config",
        tls_config,
        &[
            ("CACertFilename", STRINGS),
            ("CACertData", STRINGS),
            ("SkipTLSVerify", BOOL),
            ("Renegotiation", INT),
        ],
    ));
    definitions
}

/// gob's `wireType` with its `StructT` (field 2): a `structType` of `CommonType` and fields.
fn struct_type(name: &str, id: i64, fields: &[(&str, i64)]) -> Vec<u8> {
    let mut message = Message::new(-id);
    let mut wire = message.open();
    let mut structure = wire.nested(2);
    common_type(&mut structure, name, id);
    structure.field(1);
    structure.body.uint(fields.len() as u64);
    for (field_name, field_id) in fields {
        let mut field = Fields::new(&mut *structure.body);
        field.string(0, field_name);
        field.int(1, *field_id);
        field.close();
    }
    structure.close();
    wire.close();
    message.finish()
}

/// gob's `wireType` with its `SliceT` (field 1: `sliceType{CommonType, Elem}`) or `MapT`
/// (field 3: `mapType{CommonType, Key, Elem}`).
fn collection_type(wire_field: usize, name: &str, id: i64, elements: &[i64]) -> Vec<u8> {
    let mut message = Message::new(-id);
    let mut wire = message.open();
    let mut collection = wire.nested(wire_field);
    common_type(&mut collection, name, id);
    for (index, element) in elements.iter().enumerate() {
        collection.int(index + 1, *element);
    }
    collection.close();
    wire.close();
    message.finish()
}

fn common_type(fields: &mut Fields<'_>, name: &str, id: i64) {
    let mut common = fields.nested(0);
    common.string(0, name);
    common.int(1, id);
    common.close();
}

/// One gob message: its type id (negative for a type definition) and body, sent behind their
/// length.
struct Message {
    body: Buffer,
}

impl Message {
    fn new(type_id: i64) -> Message {
        let mut body = Buffer::default();
        body.int(type_id);
        Message { body }
    }

    /// The top-level struct's fields.
    fn open(&mut self) -> Fields<'_> {
        Fields::new(&mut self.body)
    }

    fn finish(self) -> Vec<u8> {
        let mut out = Buffer::default();
        out.uint(self.body.0.len() as u64);
        out.0.extend(self.body.0);
        out.0
    }
}

/// A struct's fields as gob writes them: each as the delta from the previous field's number,
/// zero values left out (an empty map is not zero: it is sent), a 0 at the end.
struct Fields<'a> {
    body: &'a mut Buffer,
    last: i64,
}

impl<'a> Fields<'a> {
    fn new(body: &'a mut Buffer) -> Fields<'a> {
        Fields { body, last: -1 }
    }

    fn field(&mut self, number: usize) {
        let number = number as i64;
        self.body.uint((number - self.last) as u64);
        self.last = number;
    }

    fn nested(&mut self, number: usize) -> Fields<'_> {
        self.field(number);
        Fields::new(self.body)
    }

    fn string(&mut self, number: usize, value: &str) {
        if !value.is_empty() {
            self.field(number);
            self.body.string(value);
        }
    }

    fn strings(&mut self, number: usize, values: &[String]) {
        if !values.is_empty() {
            self.field(number);
            self.body.uint(values.len() as u64);
            for value in values {
                self.body.string(value);
            }
        }
    }

    fn int(&mut self, number: usize, value: i64) {
        if value != 0 {
            self.field(number);
            self.body.int(value);
        }
    }

    fn bool(&mut self, number: usize, value: bool) {
        if value {
            self.field(number);
            self.body.uint(1);
        }
    }

    fn map(&mut self, number: usize, entries: Option<&[(String, String)]>) {
        if let Some(entries) = entries {
            self.field(number);
            self.body.uint(entries.len() as u64);
            for (key, value) in entries {
                self.body.string(key);
                self.body.string(value);
            }
        }
    }

    fn close(self) {
        self.body.uint(0);
    }
}

/// gob's numbers and strings.
#[derive(Default)]
struct Buffer(Vec<u8>);

impl Buffer {
    /// Below 128 one byte; else the byte count negated, then the bytes, big-endian.
    fn uint(&mut self, value: u64) {
        if value < 128 {
            self.0.push(value as u8);
            return;
        }
        let bytes = value.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        self.0.push((skip as u8).wrapping_sub(8));
        self.0.extend(&bytes[skip..]);
    }

    /// Zigzag: the sign in the low bit.
    fn int(&mut self, value: i64) {
        let folded = if value < 0 {
            (!(value as u64) << 1) | 1
        } else {
            (value as u64) << 1
        };
        self.uint(folded);
    }

    fn string(&mut self, value: &str) {
        self.uint(value.len() as u64);
        self.0.extend(value.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::super::command_line::{Read, read};
    use super::*;

    fn line(text: &str) -> GetToken {
        let words: Vec<String> = text.split_whitespace().map(String::from).collect();
        let env = |name: &str| (name == "HOME").then(|| "/home/u".to_string());
        match read(&words, &env) {
            Read::GetToken(line) => *line,
            other => panic!("{text}: {other:?}"),
        }
    }

    /// Made by Go's `encoding/gob` and `crypto/sha256` with kubelogin's `tokencache.Key`,
    /// `oidc.Provider` and `tlsclientconfig.Config` (field for field, `tls.RenegotiationSupport`
    /// included), for the values named in each case.
    #[test]
    fn names_are_the_ones_go_computes() {
        // Key{Provider{IssuerURL, ClientID}}.
        let minimal = line(
            "get-token --oidc-issuer-url=https://issuer.example.com --oidc-client-id=YOUR_CLIENT_ID",
        );
        assert_eq!(
            names_of(Release::V1_36, &minimal).unwrap(),
            ["679e71383bf4183e62085ee8f82fe913109b9bc7d07c2653226d501f7be7db33"]
        );
        // Every field set: secret, scopes, redirect URL, PKCE S256, access token, a header, a
        // CA file and data, skip-verify, renegotiation once, the password grant's user, and an
        // extra parameter (which no command line pairs with the password grant: given here).
        let full = line(
            "get-token --oidc-issuer-url=https://issuer.example.com --oidc-client-id=YOUR_CLIENT_ID --oidc-client-secret=YOUR_CLIENT_SECRET --oidc-extra-scope=email,profile --oidc-redirect-url=http://localhost:8000 --oidc-pkce-method=S256 --oidc-use-access-token --oidc-request-header=Origin=localhost:8080 --certificate-authority=~/.kube/ca.crt --certificate-authority-data=QUJD --insecure-skip-tls-verify --tls-renegotiation-once --grant-type=password --username=bob",
        );
        let bytes = encode(
            Release::V1_36,
            &full,
            full.request_headers.as_deref(),
            Some(&[("prompt".to_string(), "login".to_string())]),
        );
        assert_eq!(
            crate::digest::sha256_hex(&bytes),
            "908d2d578d10a5aa51bec83916b54a3bf0a6198825e178d12a7119fc80c3d0b4"
        );
        // A non-nil empty map is sent (client credentials' extra parameters).
        let cc = line(
            "get-token --oidc-issuer-url=https://i --oidc-client-id=c --grant-type=client-credentials",
        );
        assert_eq!(
            names_of(Release::V1_36, &cc).unwrap(),
            ["faa9145942c55d5d20f7cb1152c5ac841bd03befb6d9fd09c075a13a1c382897"]
        );
        // PKCE "no" and renegotiation "freely": the ints.
        let ints = line(
            "get-token --oidc-issuer-url=https://i --oidc-client-id=c --oidc-pkce-method=no --tls-renegotiation-freely",
        );
        assert_eq!(
            names_of(Release::V1_36, &ints).unwrap(),
            ["d8d14bd94e50c22bc893fd17f239cf16f42edbaf411bc399159fe77270b6dce6"]
        );
        // A string over 255 bytes and one that is not ASCII: the lengths' encoding.
        let long = format!(
            "get-token --oidc-issuer-url=https://login.example.com/{}/realms/k8s --oidc-client-id=ü-client",
            "a".repeat(219)
        );
        assert_eq!(
            names_of(Release::V1_36, &line(&long)).unwrap(),
            ["f43687ba3b567e630fb7462553ecfbe97e39a322c7ded81bc453e93685af106c"]
        );
    }

    #[test]
    fn every_order_of_a_map_is_a_name_kubelogin_may_have_written() {
        // Go wrote these four for two headers and two parameters over 2,000 runs.
        let two = line(
            "get-token --oidc-issuer-url=https://i --oidc-client-id=c --oidc-request-header=A=1,B=2 --oidc-auth-request-extra-params=x=1,y=2",
        );
        let mut names = names_of(Release::V1_36, &two).unwrap();
        names.sort();
        assert_eq!(
            names,
            [
                "175a1f7a3f553906cf6b9b179a3065e3bc999db8bda9c36ba69026e23e5de57d",
                "235811f8df1748a5029e17b771a2b25376b198fbf7913fbcf79b38b97c326998",
                "e6f6cf1b41e709b1f6f645b49390f57c4cb5f95106c655236e00b39cac9753e7",
                "ed11780713cb661447c6a263ab255b018f2e7a20a2344ef4886c1efc264b8e12",
            ]
        );
        let many: Vec<String> = (0..9).map(|i| format!("k{i}={i}")).collect();
        let too_many = line(&format!(
            "get-token --oidc-issuer-url=https://i --oidc-client-id=c --oidc-auth-request-extra-params={}",
            many.join(",")
        ));
        assert!(
            names_of(Release::V1_36, &too_many)
                .unwrap_err()
                .contains("too many")
        );
    }

    #[test]
    fn what_keys_a_login_apart_changes_the_name() {
        let base = "get-token --oidc-issuer-url=https://i --oidc-client-id=c";
        let name = |extra: &str| file_names(&line(&format!("{base} {extra}"))).unwrap();
        let plain = name("");
        for other in [
            "--grant-type=password --username=bob",
            "--username=alice",
            "--oidc-extra-scope=groups",
            "--oidc-auth-request-extra-params=prompt=login",
            "--oidc-use-access-token",
        ] {
            assert_ne!(name(other), plain, "{other}");
        }
        // What kubelogin does not key on: the device flow's extra parameters, the browser.
        assert_eq!(name("--skip-open-browser --browser-command=firefox"), plain);
        assert_eq!(
            name("--grant-type=device-code --oidc-auth-request-extra-params=prompt=login"),
            name("--grant-type=device-code")
        );
    }

    /// Made by Go's `encoding/gob` and `crypto/sha256` with the key's types as each release's
    /// tag has them (`go run tests/support/kubelogin_cache_key.go RELEASE`).
    #[test]
    fn every_release_since_1_31_names_the_entry_as_go_does() {
        use Release::*;
        let by_release = |text: &str| -> Vec<(Release, Vec<String>)> {
            let line = line(text);
            Release::ALL
                .iter()
                .map(|release| (*release, names_of(*release, &line).unwrap()))
                .filter(|(_, names)| !names.is_empty())
                .collect()
        };
        let one = |release: Release, name: &str| (release, vec![name.to_string()]);
        let base = "get-token --oidc-issuer-url=https://issuer.example.com --oidc-client-id=YOUR_CLIENT_ID";
        // Every release runs a stanza of the flags they all have.
        let minimal = [
            one(
                V1_36,
                "679e71383bf4183e62085ee8f82fe913109b9bc7d07c2653226d501f7be7db33",
            ),
            one(
                V1_34,
                "1a0eff17fbd5fc228abb0943e272fd44deb0f1bec027480fe8ff37c985e5308c",
            ),
            one(
                V1_33,
                "49141d10c45d3004bd21dd1f42ac0b64fc8ded666498b0895bb94689ae479c80",
            ),
            one(
                V1_32,
                "aca842f295a8a03b7b20e26047836d75768c4d72db65df22d5ad58b51016026c",
            ),
            one(
                V1_31,
                "e530403589a0bedc4ab55ff11b5c04208a6f23bcaf0f7a13edf7aa56868b5ab9",
            ),
        ];
        assert_eq!(by_release(base), minimal);
        assert_eq!(
            file_names(&line(base)).unwrap(),
            minimal
                .iter()
                .map(|(_, names)| names[0].clone())
                .collect::<Vec<_>>()
        );
        // Secret, scopes, PKCE (1.31's switch), access token, TLS, the password grant's user.
        assert_eq!(
            by_release(&format!(
                "{base} --oidc-client-secret=YOUR_CLIENT_SECRET --oidc-extra-scope=email,profile --oidc-use-pkce --oidc-use-access-token --certificate-authority=~/.kube/ca.crt --certificate-authority-data=QUJD --insecure-skip-tls-verify --tls-renegotiation-once --grant-type=password --username=bob"
            )),
            [
                one(
                    V1_36,
                    "2c31422a646718991380e69bbf975adffa14f89dacf637406bfa8c8901793494"
                ),
                one(
                    V1_34,
                    "36d0d2e90195abe8ed8799c6b14f0c2ce3d8bac5dfc8d587c6bd77737a9bf5f4"
                ),
                one(
                    V1_33,
                    "cabfa98655ac7dc1f967eee2b8b2c5ecb15792712670f0514bddd5423554d2db"
                ),
                one(
                    V1_32,
                    "2c3ad805f1335451649e481c13843f80c102d6747cb6cc250019d630a79fd6b1"
                ),
                one(
                    V1_31,
                    "494fb2b9e9e7e9be06095b776f8f69d823b9b5d5b8d2cd0d0c2177d11b6854a7"
                ),
            ]
        );
        // The redirect URL (1.33) and a request header (1.34): only releases that have them.
        assert_eq!(
            by_release(&format!(
                "{base} --oidc-redirect-url=http://localhost:8000 --oidc-request-header=Origin=localhost:8080"
            )),
            [
                one(
                    V1_36,
                    "e4c9903e806ec567ab87e5937e64053315cfe7cf022db4e930281d3b86003df6"
                ),
                one(
                    V1_34,
                    "cb07430e9ba1b875364a5edb947d29587926bdaa2d628d12ecf0fff9f117b08f"
                ),
            ]
        );
        // --oidc-redirect-url-authcode-keyboard, which 1.35 removed: the redirect URL to 1.33
        // and 1.34, nothing in the key before.
        assert_eq!(
            by_release(&format!(
                "{base} --grant-type=authcode-keyboard --oidc-redirect-url-authcode-keyboard=urn:ietf:wg:oauth:2.0:oob"
            )),
            [
                one(
                    V1_34,
                    "a8d6649212d378c78ecfa88371f1ca8396975ac38b8c3c3b796f45ae445f2d0f"
                ),
                one(
                    V1_33,
                    "ca3e6d5792edd96d3b990ec82c291ad84e893bb1844ea9a838f2010e00610300"
                ),
                minimal[3].clone(),
                minimal[4].clone(),
            ]
        );
        // --oidc-redirect-url-hostname, which 1.35 removed too: never in the key.
        assert_eq!(
            by_release(&format!("{base} --oidc-redirect-url-hostname=127.0.0.1")),
            minimal[1..]
        );
        // Two headers: every order 1.34 may have written.
        let mut two = names_of(
            V1_34,
            &line("get-token --oidc-issuer-url=https://i --oidc-client-id=c --oidc-request-header=A=1,B=2"),
        )
        .unwrap();
        two.sort();
        assert_eq!(
            two,
            [
                "400fd8b0ec53516c24231f433879dc184a5199080afbc0d73606138c6f93a55c",
                "c5c752f09dbd704701a6a81268b01fbe82a1a7f9f6bbe3a6f48573f07315a534",
            ]
        );
    }

    #[test]
    fn a_release_runs_a_line_of_the_flags_it_has() {
        use Release::*;
        let runs = |extra: &str| -> Vec<Release> {
            let line = line(&format!(
                "get-token --oidc-issuer-url=https://i --oidc-client-id=c {extra}"
            ));
            Release::ALL
                .into_iter()
                .filter(|release| release.runs(&line))
                .collect()
        };
        assert_eq!(
            runs("--oidc-pkce-method=S256"),
            [V1_36, V1_34, V1_33, V1_32]
        );
        assert_eq!(
            runs("--token-cache-storage=disk"),
            [V1_36, V1_34, V1_33, V1_32]
        );
        assert_eq!(runs("--token-cache-storage=none"), [V1_36, V1_34, V1_33]);
        assert_eq!(
            runs("--grant-type=client-credentials"),
            [V1_36, V1_34, V1_33]
        );
        assert_eq!(
            runs("--oidc-redirect-url=http://localhost"),
            [V1_36, V1_34, V1_33]
        );
        assert_eq!(runs("--oidc-request-header=A=1"), [V1_36, V1_34]);
        assert_eq!(
            runs("--oidc-redirect-url-hostname=127.0.0.1"),
            [V1_34, V1_33, V1_32, V1_31]
        );
        // 1.34 takes both the flags 1.35 removed and the request headers: every line read is
        // run by some release.
        assert_eq!(
            runs("--oidc-request-header=A=1 --oidc-redirect-url-authcode-keyboard=urn:x"),
            [V1_34]
        );
    }
}
