#!/usr/bin/env node
// kubecred test bed: one Node process that runs, on loopback only,
//   (a) a real OpenID Provider (oidc-provider 9) with an admin API under /__testbed/,
//   (b) an HTTPS stand-in for kube-apiserver's OIDC authenticator.
//
// Usage: node testbed.mjs ['<json options>']      (or options in env TESTBED_OPTIONS)
// When both servers listen it prints exactly one JSON line on stdout and nothing else, ever.
// It stops (and removes its temp dir) on SIGTERM, SIGINT, and EOF on a piped stdin.
// See README.md next to this file for options, clients and the admin API.

import { execFileSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import { format } from 'node:util';

import { createLocalJWKSet, decodeJwt, exportJWK, generateKeyPair, importJWK, jwtVerify, SignJWT } from 'jose';

import { makeCiIssuer, TOKEN_EXCHANGE } from './ci_issuer.mjs';

let ci = null; // the test CI issuer (ci_issuer.mjs), made once the issuer URL is known
let signing = null; // { jwk, keys, issuer }: the provider's RS256 key (all its keys) and issuer, for the tokens the bed mints itself

// ---------------------------------------------------------------------------------------------
// stdout belongs to the startup line alone. oidc-provider prints its NOTICEs with console.info
// (stdout!) and its WARNINGs (e.g. "Unsupported runtime" on Node 20) with console.warn, so every
// console method is re-pointed at stderr BEFORE oidc-provider is imported (hence the dynamic
// import below), and the chatty ones are dropped unless verbose.
// ---------------------------------------------------------------------------------------------
const VERBOSE = process.env.TESTBED_VERBOSE === '1';
const toStderr = (...args) => { process.stderr.write(`testbed: ${format(...args)}\n`); };
const quiet = (...args) => { if (VERBOSE) toStderr(...args); };
console.log = quiet;
console.info = quiet;
console.debug = quiet;
console.warn = quiet;
console.error = toStderr;
// A harness that closes its end of our stdout/stderr must not crash us with EPIPE.
process.stdout.on('error', () => {});
process.stderr.on('error', () => {});

const { default: Provider, errors, interactionPolicy } = await import('oidc-provider');

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------
const DEFAULTS = {
  idpTls: false,
  idpHost: '127.0.0.1', // the issuer's host: '127.0.0.1' or 'localhost' (a name, for socks5h://)
  httpsCallbackPort: null, // a port: the client `kubecred-https` takes https://localhost:PORT/callback
  idTokenTtl: 600,
  accessTokenTtl: 600,
  clientCredentialsTtl: 600,
  refreshTokenTtl: 86400,
  deviceCodeTtl: 300,
  deviceInterval: 1, // seconds, returned as `interval` by the device authorization endpoint
  refreshError: null, // e.g. "invalid_grant": every refresh_token grant fails with it
  tokenError: null, // e.g. "temporarily_unavailable" (503): every token request fails with it
  providerDown: false, // every provider request (not the admin API) has its connection reset
  deviceSlowDown: 0, // the first N polls of each device code answer slow_down
  tokenDelayMs: 0, // delay every token endpoint request by this much before it is handled
  tokenResponsePatch: null, // e.g. {"access_token": ""}: merged into every successful token response
  // A client credentials answer to a request with the openid scope carries an ID token (sub and
  // aud the client), signed with the provider's key, as some providers (Dex) issue one; oidc-provider
  // issues none.
  clientCredentialsIdToken: false,
  discoveryPatch: null, // merged into the discovery document (a member set to null stays, as null)
  deviceResponsePatch: null, // merged into the device authorization answer (a member set to null is left out)
  // e.g. {"error": "invalid_grant", "error_description": "AADSTS53003: …", "error_codes": [53003]}:
  // the answer (400) to every device code poll that would have given tokens, as a policy applied
  // after the sign-in does (Entra ID's Conditional Access)
  devicePollRefusal: null,
  apiRejectedTokens: [], // bearer tokens the API stand-in answers 401 (as if revoked or its keys rotated)
  // e.g. "http://127.0.0.1:PORT/review": the API stand-in (not the audienceApis ones) authenticates every bearer token by
  // this webhook instead of as an OIDC JWT, as a managed cluster does (GKE, EKS's
  // aws-iam-authenticator: Kubernetes' webhook token authentication). It POSTs {"token": T} and
  // takes {"username": U, "groups": [...]} (200) or any other answer as a refusal.
  apiWebhook: null,
  idTokenSigningAlg: 'RS256', // RS256 | ES256
  accessTokenSigningAlg: 'RS256', // RS256 | ES256 (JWT access tokens)
  resources: null, // null: any absolute URI is an accepted resource indicator; else an allow-list
  groups: ['developers'], // groups claim of every account ...
  accounts: {}, // ... unless overridden per login: {"bob": {"groups": [], "email": "b@x"}}
  apiAudiences: ['kubecred', 'kubecred-confidential', 'https://kubernetes.testbed'],
  usernameClaim: 'sub',
  usernamePrefix: '',
  groupsClaim: 'groups',
  groupsPrefix: '',
  // e.g. ["https://a.example", "https://b.example"]: one more API stand-in per audience (same
  // handler, same CA), each accepting only tokens whose aud holds its own audience (not
  // apiAudiences); their URLs are in the startup line's audience_apis, their counters in
  // stats.audience_apis. One login, a token for every cluster.
  audienceApis: [],
  // Entra ID's form: a code exchange or refresh whose scope holds api://NAME/.default (one such
  // scope per request, else invalid_scope) answers a JWT access token with aud api://NAME.
  scopeAudiences: false,
  // e.g. "https://default.example": every access token of a refresh grant or of a user's token
  // exchange carries this aud instead of the one asked for (Auth0 answers an unknown audience
  // with its default one, silently).
  derivedAudienceOverride: null,
  // Those answers (refresh grant, user token exchange) carry an opaque access token, not a JWT.
  derivedOpaque: false,
  exitOnStdinEof: true,
};

// Knobs that POST /__testbed/config may change while the bed runs (TTLs apply to new tokens).
const RUNTIME_KEYS = new Set([
  'refreshError', 'tokenError', 'providerDown', 'deviceSlowDown', 'tokenDelayMs', 'deviceInterval',
  'idTokenTtl', 'accessTokenTtl', 'clientCredentialsTtl', 'refreshTokenTtl', 'deviceCodeTtl',
  'groups', 'accounts', 'apiAudiences', 'usernameClaim', 'usernamePrefix', 'groupsClaim',
  'groupsPrefix', 'resources', 'tokenResponsePatch', 'discoveryPatch', 'apiRejectedTokens',
  'deviceResponsePatch', 'devicePollRefusal', 'clientCredentialsIdToken', 'scopeAudiences',
  'derivedAudienceOverride', 'derivedOpaque', 'apiWebhook',
]);

function parseOptions() {
  const sources = [process.env.TESTBED_OPTIONS, process.argv[2]].filter((s) => s && s.trim());
  const merged = { ...DEFAULTS };
  for (const src of sources) {
    let parsed;
    try {
      parsed = JSON.parse(src);
    } catch (err) {
      throw new Error(`options are not valid JSON (${err.message}): ${src}`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new Error('options must be a JSON object');
    }
    for (const key of Object.keys(parsed)) {
      if (!(key in DEFAULTS)) throw new Error(`unknown option "${key}"`);
    }
    Object.assign(merged, parsed);
  }
  const auds = merged.audienceApis;
  if (!Array.isArray(auds) || auds.some((a) => typeof a !== 'string' || !a) || new Set(auds).size !== auds.length) {
    throw new Error(`audienceApis must be a list of distinct audiences, not ${JSON.stringify(auds)}`);
  }
  return merged;
}

let cfg;
try {
  cfg = parseOptions();
} catch (err) {
  console.error(err.message);
  process.exit(2);
}

// ---------------------------------------------------------------------------------------------
// Counters (GET /__testbed/stats)
// ---------------------------------------------------------------------------------------------
const GRANT_TYPES = ['client_credentials', 'refresh_token', 'authorization_code',
  'urn:ietf:params:oauth:grant-type:device_code', TOKEN_EXCHANGE];

function freshStats() {
  return {
    token: Object.fromEntries([...GRANT_TYPES.map((g) => [g, 0]), ['total', 0]]),
    authorization: 0,
    device_authorization: 0,
    discovery: 0,
    jwks: 0,
    revocation: 0,
    introspection: 0,
    userinfo: 0,
    // Connections reset while providerDown was set.
    refused: 0,
    api: { requests: 0, unauthorized: 0, last_user: null },
    // The same per audienceApis stand-in, by its audience.
    audience_apis: Object.fromEntries((cfg.audienceApis ?? []).map((aud) => [aud, { requests: 0, unauthorized: 0, last_user: null }])),
  };
}
let stats = freshStats();
const devicePolls = new Map(); // device_code -> number of polls seen (for deviceSlowDown)

// The provider's requests as they arrived (GET /__testbed/requests): method, path, the query as
// sent (undecoded: `?…&redirect_uri=http%3A%2F%2Flocalhost%3A8000&…`), headers (names in lower
// case), the answer's status, and for a token request the form's grant_type, redirect_uri, audience, resource and
// scope (no secret), so that tests see what a client sent, byte for byte.
// Also the GitHub Actions stand-in's; not the rest of the admin API's, not the API stand-in's own
// fetches; the latest REQUEST_LOG_LIMIT only.
const REQUEST_LOG_LIMIT = 500;
let requestLog = [];
function recordRequest(req, res, url) {
  if (req.headers['x-testbed-internal'] === '1') return;
  const entry = { method: req.method, path: url.pathname, query: url.search, headers: { ...req.headers } };
  req.testbedEntry = entry;
  // The answer's HTTP status, once sent (null until then, or when the connection was reset).
  entry.status = null;
  res.on('finish', () => { entry.status = res.statusCode; });
  requestLog.push(entry);
  if (requestLog.length > REQUEST_LOG_LIMIT) requestLog = requestLog.slice(-REQUEST_LOG_LIMIT);
}

// ---------------------------------------------------------------------------------------------
// State dir and a throwaway test CA (the API stand-in always needs it; the IdP with idpTls).
// ---------------------------------------------------------------------------------------------
const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kubecred-testbed-'));

function makeCertificates(dir) {
  const cnf = path.join(dir, 'openssl.cnf');
  // A private config so the system openssl.cnf adds no surprising extensions. rustls/webpki
  // wants a proper CA (basicConstraints CA:TRUE + keyCertSign) and a leaf with CA:FALSE + SANs.
  fs.writeFileSync(cnf, [
    '[req]', 'distinguished_name = dn', 'prompt = no', '[dn]', 'CN = kubecred testbed',
    '[ca_ext]', 'basicConstraints = critical, CA:TRUE', 'keyUsage = critical, keyCertSign, cRLSign',
    'subjectKeyIdentifier = hash',
    '[server_ext]', 'basicConstraints = critical, CA:FALSE',
    'keyUsage = critical, digitalSignature, keyEncipherment', 'extendedKeyUsage = serverAuth',
    'subjectAltName = IP:127.0.0.1, IP:::1, DNS:localhost',
    'subjectKeyIdentifier = hash', 'authorityKeyIdentifier = keyid', '',
  ].join('\n'));
  const f = (name) => path.join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  const run = (args) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  run(['req', '-x509', '-config', cnf, '-extensions', 'ca_ext', ...ec, '-keyout', f('ca.key'),
    '-out', f('ca.pem'), '-days', '2', '-subj', `/CN=kubecred testbed CA ${crypto.randomUUID()}`]);
  run(['req', '-new', '-config', cnf, ...ec, '-keyout', f('server.key'), '-out', f('server.csr'),
    '-subj', '/CN=localhost']);
  run(['x509', '-req', '-in', f('server.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'),
    '-set_serial', `0x${crypto.randomBytes(8).toString('hex')}`, '-days', '2',
    '-extfile', cnf, '-extensions', 'server_ext', '-out', f('server.pem')]);
  return {
    caFile: f('ca.pem'),
    caPem: fs.readFileSync(f('ca.pem'), 'utf8'),
    key: fs.readFileSync(f('server.key')),
    cert: fs.readFileSync(f('server.pem')),
  };
}

// ---------------------------------------------------------------------------------------------
// Storage adapter: like oidc-provider's memory adapter, but unbounded (its LRU holds only 1000
// entries, which a stress test could evict) and enumerable, so the admin API can destroy every
// refresh token at once.
// ---------------------------------------------------------------------------------------------
const store = new Map(); // `${model}:${id}` -> { payload, expiresAt }
const uidIndex = new Map(); // session uid -> id
const userCodeIndex = new Map(); // user code -> id
const nowMs = () => Date.now();

class TestbedAdapter {
  constructor(model) { this.model = model; }

  key(id) { return `${this.model}:${id}`; }

  get(id) {
    const entry = store.get(this.key(id));
    if (!entry) return undefined;
    if (entry.expiresAt <= nowMs()) {
      store.delete(this.key(id));
      return undefined;
    }
    return entry;
  }

  async upsert(id, payload, expiresIn) {
    const expiresAt = typeof expiresIn === 'number' ? nowMs() + expiresIn * 1000 : Infinity;
    store.set(this.key(id), { payload: structuredClone(payload), expiresAt });
    if (this.model === 'Session' && payload.uid) uidIndex.set(payload.uid, id);
    if (payload.userCode) userCodeIndex.set(payload.userCode, id);
  }

  async find(id) {
    const entry = this.get(id);
    return entry ? structuredClone(entry.payload) : undefined;
  }

  async findByUid(uid) {
    const id = uidIndex.get(uid);
    return id === undefined ? undefined : this.find(id);
  }

  async findByUserCode(userCode) {
    const id = userCodeIndex.get(userCode);
    return id === undefined ? undefined : this.find(id);
  }

  async consume(id) {
    const entry = this.get(id);
    if (entry) entry.payload.consumed = Math.floor(nowMs() / 1000);
  }

  async destroy(id) {
    store.delete(this.key(id));
  }

  async revokeByGrantId(grantId) {
    for (const [key, entry] of store) {
      if (entry.payload.grantId === grantId) store.delete(key);
    }
  }

  static destroyAll(model) {
    let n = 0;
    for (const key of store.keys()) {
      if (key.startsWith(`${model}:`)) {
        store.delete(key);
        n += 1;
      }
    }
    return n;
  }
}

// Sweep expired entries now and then so a long soak does not grow without bound.
setInterval(() => {
  const now = nowMs();
  for (const [key, entry] of store) if (entry.expiresAt <= now) store.delete(key);
  for (const [uid, id] of uidIndex) if (!store.has(`Session:${id}`)) uidIndex.delete(uid);
  for (const [code, id] of userCodeIndex) if (!store.has(`DeviceCode:${id}`)) userCodeIndex.delete(code);
}, 30_000).unref();

// ---------------------------------------------------------------------------------------------
// Accounts: any login works; sub = the login typed.
// ---------------------------------------------------------------------------------------------
function accountClaims(login) {
  const over = cfg.accounts?.[login] ?? {};
  return {
    sub: login,
    email: over.email ?? `${login}@testbed.example`,
    email_verified: over.email_verified ?? true,
    name: over.name ?? `${login.charAt(0).toUpperCase()}${login.slice(1)} Testbed`,
    preferred_username: over.preferred_username ?? login,
    groups: over.groups ?? cfg.groups,
  };
}

// ---------------------------------------------------------------------------------------------
// HTML for the device-flow pages and errors. The defaults @import a Google font (this machine has
// no internet, and traffic off loopback must not happen); these add data-testbed-page markers that
// browser.mjs uses to know where it is.
// ---------------------------------------------------------------------------------------------
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
function page(marker, title, body) {
  return `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>body{font-family:sans-serif;margin:2em auto;max-width:30em}button{margin-top:1em}</style>
</head><body data-testbed-page="${esc(marker)}"><h1>${esc(title)}</h1>${body}</body></html>`;
}

const deviceFlowPages = {
  async userCodeInputSource(ctx, form, out, err) {
    let marker = 'device-input';
    let msg = '<p>Enter the code displayed on your device</p>';
    if (err && (err.userCode || err.name === 'NoCodeError')) {
      marker = 'device-input-bad-code';
      msg = '<p id="testbed-error">The code you entered is incorrect. Try again</p>';
    } else if (err && err.name === 'AbortedError') {
      marker = 'device-aborted';
      msg = '<p id="testbed-error">The Sign-in request was interrupted</p>';
    } else if (err) {
      marker = 'device-error';
      msg = `<p id="testbed-error">There was an error processing your request: ${esc(err.name)} ${esc(err.message ?? '')}</p>`;
    }
    ctx.body = page(marker, 'Sign-in', `${msg}${form}
<button type="submit" form="op.deviceInputForm">Continue</button>`);
  },
  async userCodeConfirmSource(ctx, form, client, deviceInfo, userCode) {
    ctx.body = page('device-confirm', 'Confirm Device', `
<p><strong>${esc(client.clientName || client.clientId)}</strong></p>
<p>The following code should be displayed on your device: <code>${esc(userCode)}</code></p>
${form}
<button autofocus type="submit" form="op.deviceConfirmForm">Continue</button>
<button type="submit" form="op.deviceConfirmForm" value="yes" name="abort">[ Abort ]</button>`);
  },
  async successSource(ctx) {
    ctx.body = page('device-success', 'Sign-in Success',
      '<p>Your sign-in was successful, you can now close this page.</p>');
  },
};

async function renderError(ctx, out) {
  ctx.type = 'html';
  ctx.body = page('error', 'oops! something went wrong', Object.entries(out)
    .map(([k, v]) => `<pre><strong>${esc(k)}</strong>: ${esc(v)}</pre>`).join(''));
}

// ---------------------------------------------------------------------------------------------
// Provider configuration
// ---------------------------------------------------------------------------------------------
const BASE_RS_SCOPES = ['openid', 'profile', 'email', 'groups', 'offline_access'];
// kubecred's default redirect URIs, and int128/kubelogin's and MSAL's (`http://localhost:PORT`, no
// path). oidc-provider compares loopback redirect URIs of native clients without their port and
// after URL normalisation (`http://localhost:8000` and `http://localhost:8000/` both match
// `http://localhost`): what a client sent byte for byte is in GET /__testbed/requests.
const REDIRECT_URIS = ['http://localhost/callback', 'http://127.0.0.1/callback', 'http://[::1]/callback',
  'http://localhost'];

const CLIENTS = [
  {
    client_id: 'kubecred',
    application_type: 'native',
    token_endpoint_auth_method: 'none',
    // Token exchange (RFC 8693): a user's access token for one for another audience.
    grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code', TOKEN_EXCHANGE],
    response_types: ['code'],
    redirect_uris: REDIRECT_URIS,
  },
  {
    // A public client the provider refuses the device flow (no device_code grant), while
    // discovery still lists the device authorization endpoint, as real providers do.
    client_id: 'kubecred-no-device',
    application_type: 'native',
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token', TOKEN_EXCHANGE],
    response_types: ['code'],
    redirect_uris: REDIRECT_URIS,
  },
  {
    client_id: 'kubecred-confidential',
    client_secret: 'testbed-confidential-secret',
    application_type: 'native',
    token_endpoint_auth_method: 'client_secret_basic',
    grant_types: ['authorization_code', 'refresh_token', TOKEN_EXCHANGE],
    response_types: ['code'],
    redirect_uris: REDIRECT_URIS,
  },
  {
    client_id: 'kubecred-cc',
    client_secret: 'testbed-cc-secret',
    token_endpoint_auth_method: 'client_secret_basic',
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
  },
  {
    client_id: 'kubecred-cc-post',
    client_secret: 'testbed-cc-post-secret',
    token_endpoint_auth_method: 'client_secret_post',
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
  },
];

// Consent is auto-granted: whatever the request asks for (OIDC scopes, claims, resource scopes)
// is added to the session's grant, so the login form is the only page a browser has to fill.
async function loadExistingGrant(ctx) {
  const { oidc } = ctx;
  const { Grant } = oidc.provider;
  const { accountId } = oidc.account; // oidc-provider calls this only once an account is known
  const { clientId } = oidc.client;
  const grantId = oidc.result?.consent?.grantId || oidc.session.grantIdFor(clientId);
  let grant = grantId ? await Grant.find(grantId) : undefined;
  if (!grant || grant.accountId !== accountId || grant.clientId !== clientId) {
    grant = new Grant({ accountId, clientId });
  }
  const scopes = [...oidc.requestParamOIDCScopes];
  if (scopes.length) grant.addOIDCScope(scopes.join(' '));
  const claims = [...oidc.requestParamClaims];
  if (claims.length) grant.addOIDCClaims(claims);
  for (const [indicator, rs] of Object.entries(oidc.resourceServers)) {
    const rsScopes = [...oidc.requestParamScopes].filter((s) => rs.scopes.has(s));
    if (rsScopes.length) grant.addResourceScope(indicator, rsScopes.join(' '));
  }
  await grant.save();
  return grant;
}

// The stock policy always shows a consent page to native clients ("native_client_prompt") even
// when the grant covers everything; drop that check so auto-consent above takes effect.
const policy = interactionPolicy.base();
policy.get('consent').checks.remove('native_client_prompt');

async function makeJwks() {
  const suffix = crypto.randomBytes(4).toString('hex'); // kids differ between test beds
  const keys = [];
  for (const alg of ['RS256', 'ES256']) {
    const { privateKey } = await generateKeyPair(alg, { extractable: true });
    keys.push({ ...(await exportJWK(privateKey)), kid: `testbed-${alg.toLowerCase()}-${suffix}`, alg, use: 'sig' });
  }
  return { keys };
}

function providerConfiguration(jwks) {
  return {
    adapter: TestbedAdapter,
    clients: CLIENTS,
    jwks,
    cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name', 'preferred_username'],
      groups: ['groups'],
    },
    conformIdTokenClaims: false, // scope-requested claims go into the ID token too
    responseTypes: ['code', 'none'], // no implicit/hybrid flows
    clientDefaults: {
      id_token_signed_response_alg: cfg.idTokenSigningAlg,
    },
    features: {
      devInteractions: { enabled: true },
      deviceFlow: { enabled: true, ...deviceFlowPages },
      clientCredentials: { enabled: true },
      revocation: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // Keep the resource of the authorization/device request when the refresh (or code
        // exchange) request does not repeat it, so refreshed access tokens stay JWTs.
        useGrantedResource: async () => true,
        async getResourceServerInfo(ctx, resourceIndicator) {
          if (Array.isArray(cfg.resources) && !cfg.resources.includes(resourceIndicator)) {
            throw new errors.InvalidTarget();
          }
          // oidc-provider only puts scopes the resource server "has" into its access tokens:
          // accept the usual ones plus anything this request (or the refresh token) carries.
          const scope = new Set(BASE_RS_SCOPES);
          for (const s of (ctx.oidc.params?.scope ?? '').split(' ')) if (s) scope.add(s);
          for (const s of (ctx.oidc.entities?.RefreshToken?.scope ?? '').split(' ')) if (s) scope.add(s);
          return {
            scope: [...scope].join(' '),
            audience: resourceIndicator,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: cfg.accessTokenSigningAlg } },
          };
        },
      },
    },
    pkce: { required: (ctx, client) => client.clientAuthMethod === 'none' }, // S256 is the only method in v9
    // Default: only with offline_access. Here: whenever the client may use refresh_token.
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    // Default ties tokens without offline_access to the browser session; refresh tokens here live
    // on their own, as with most IdPs.
    expiresWithSession: async () => false,
    async findAccount(ctx, sub) {
      return { accountId: sub, claims: async () => accountClaims(sub) };
    },
    // JWT access tokens of a user also carry the identity claims the API stand-in can map.
    async extraTokenClaims(ctx, token) {
      if (!token.accountId) return undefined;
      const c = accountClaims(token.accountId);
      return { email: c.email, email_verified: c.email_verified, preferred_username: c.preferred_username, groups: c.groups };
    },
    loadExistingGrant,
    interactions: { policy },
    renderError,
    ttl: {
      AccessToken: () => cfg.accessTokenTtl,
      AuthorizationCode: 60,
      ClientCredentials: () => cfg.clientCredentialsTtl,
      DeviceCode: () => cfg.deviceCodeTtl,
      IdToken: () => cfg.idTokenTtl,
      RefreshToken: () => cfg.refreshTokenTtl,
      Interaction: 600,
      Session: 86400,
      Grant: () => Math.max(30 * 86400, cfg.refreshTokenTtl * 4),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Access tokens the bed mints itself, signed with the provider's key: a user's token exchange,
// Entra's scope-derived audiences, and the wrong-audience / opaque answers of the derived* knobs.
// ---------------------------------------------------------------------------------------------
const TOKEN_TYPE_ACCESS = 'urn:ietf:params:oauth:token-type:access_token';
const TOKEN_TYPE_JWT = 'urn:ietf:params:oauth:token-type:jwt';
// The clients a person logs in with: their token exchange takes one of that person's access tokens
// (the CI clients' takes a CI issuer's token: ci_issuer.mjs).
const USER_CLIENTS = new Set(['kubecred', 'kubecred-no-device', 'kubecred-confidential', 'kubecred-https']);
// Entra ID's "resource/.default" scope, api:// form only: the resource is the audience.
const ENTRA_SCOPE = /^(api:\/\/[^/\s]+(?:\/[^\s]*?)?)\/\.default$/;

/// A JWT access token for a user, as oidc-provider's own (typ at+jwt, the identity claims of
/// extraTokenClaims, client_id, scope), for `aud`, valid accessTokenTtl from now.
async function mintAccessToken({ sub, clientId, scope, aud }) {
  const jwk = signing.keys.find((k) => k.alg === cfg.accessTokenSigningAlg) ?? signing.jwk;
  const key = await importJWK(jwk, jwk.alg);
  const c = accountClaims(sub);
  const now = Math.floor(Date.now() / 1000);
  const claims = { email: c.email, email_verified: c.email_verified, preferred_username: c.preferred_username, groups: c.groups, client_id: clientId };
  if (scope) claims.scope = scope;
  return new SignJWT(claims)
    .setProtectedHeader({ alg: jwk.alg, typ: 'at+jwt', kid: jwk.kid })
    .setIssuer(signing.issuer).setSubject(sub).setAudience(aud)
    .setIssuedAt(now).setExpirationTime(now + cfg.accessTokenTtl).setJti(crypto.randomUUID())
    .sign(key);
}

/// What derivedOpaque answers: not a JWT (and nothing the provider would accept back).
const opaqueAccessToken = () => `testbed-opaque-${crypto.randomBytes(24).toString('base64url')}`;

/// The api://NAME/.default scopes of a space-separated scope: `{ aud, rest }` (aud null when there
/// is none, rest the other scopes), or `{ error }` when there are several (Entra: one resource per
/// request).
function entraScopeAudience(scope) {
  const all = (scope ?? '').split(' ').filter(Boolean);
  const matching = all.filter((s) => ENTRA_SCOPE.test(s));
  if (matching.length > 1) return { error: `testbed: one resource per request, not ${matching.join(', ')} (scopes of several resources)` };
  if (!matching.length) return { aud: null, rest: all };
  return { aud: ENTRA_SCOPE.exec(matching[0])[1], rest: all.filter((s) => s !== matching[0]) };
}

/// RFC 8693 for a person's clients: subject_token = an access token this provider issued to a
/// user (a JWT of its own, or an opaque one it holds), valid and not expired; the answer is a JWT
/// access token for the `audience` and/or `resource` named (one target), sub and identity claims
/// the subject token's. Returns false for other clients (the CI exchange answers them).
function makeUserTokenExchange(provider) {
  return async function userTokenExchange(ctx) {
    const { params, client } = ctx.oidc;
    if (!USER_CLIENTS.has(client.clientId)) return false;
    if (params.subject_token_type !== TOKEN_TYPE_ACCESS) {
      throw new errors.InvalidRequest(`testbed: subject_token_type must be ${TOKEN_TYPE_ACCESS}`);
    }
    if (params.requested_token_type !== TOKEN_TYPE_JWT) {
      throw new errors.InvalidRequest(`testbed: requested_token_type must be ${TOKEN_TYPE_JWT}`);
    }
    const subjectToken = params.subject_token;
    let sub;
    let scope;
    if (subjectToken.split('.').length === 3) {
      let verified;
      try {
        const keyset = createLocalJWKSet({ keys: signing.keys.map(({ kty, crv, x, y, n, e, kid, alg }) => ({ kty, crv, x, y, n, e, kid, alg })) });
        verified = await jwtVerify(subjectToken, keyset, { issuer: signing.issuer, typ: 'at+jwt', requiredClaims: ['exp', 'sub'] });
      } catch (err) {
        throw new errors.InvalidGrant(`testbed: subject token rejected (${err.code ?? err.message})`);
      }
      // A client credentials token's sub is the client: not a person's.
      if (verified.payload.sub === verified.payload.client_id) throw new errors.InvalidGrant('testbed: subject token is not a user\'s');
      ({ sub, scope } = verified.payload);
    } else {
      const at = await provider.AccessToken.find(subjectToken);
      if (!at || at.isExpired || !at.accountId) throw new errors.InvalidGrant('testbed: subject token is not a valid access token of a user');
      sub = at.accountId;
      scope = at.scope;
    }
    const list = (v) => (v === undefined ? [] : [v].flat());
    const targets = new Set([...list(params.audience), ...list(params.resource)]);
    if (targets.size !== 1) {
      throw new errors.InvalidTarget(`testbed: name one target (audience and/or resource), not ${targets.size}`);
    }
    const [target] = targets;
    if (Array.isArray(cfg.resources) && list(params.resource).length && !cfg.resources.includes(target)) {
      throw new errors.InvalidTarget();
    }
    if (cfg.derivedOpaque) {
      ctx.body = { access_token: opaqueAccessToken(), issued_token_type: TOKEN_TYPE_ACCESS, token_type: 'Bearer', expires_in: cfg.accessTokenTtl };
      return true;
    }
    const aud = cfg.derivedAudienceOverride ?? target;
    ctx.body = {
      access_token: await mintAccessToken({ sub, clientId: client.clientId, scope, aud }),
      issued_token_type: TOKEN_TYPE_JWT,
      token_type: 'Bearer',
      expires_in: cfg.accessTokenTtl,
    };
    return true;
  };
}

// ---------------------------------------------------------------------------------------------
// Koa middleware on the provider: counters, fault knobs, small response fix-ups.
// ---------------------------------------------------------------------------------------------
const authScopeAudiences = new Map(); // PKCE code_challenge -> the api://NAME its /auth scope named
const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

async function readRaw(req, limit = 64 * 1024) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > limit) throw new Error('request body too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const ERROR_STATUS = { invalid_client: 401, server_error: 500, temporarily_unavailable: 503 };

function oauthError(ctx, error, description) {
  ctx.status = ERROR_STATUS[error] ?? 400;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { error, error_description: description };
}

function testbedMiddleware() {
  return async function testbed(ctx, next) {
    // The API stand-in's own discovery/JWKS fetches carry this header and are not counted.
    const internal = ctx.get('x-testbed-internal') === '1';
    const { method, path: p } = ctx;
    if (!internal) {
      if (method === 'GET' && p === '/.well-known/openid-configuration') stats.discovery += 1;
      else if (method === 'GET' && p === '/jwks') stats.jwks += 1;
      else if (method === 'GET' && p === '/auth') stats.authorization += 1;
      else if (method === 'POST' && p === '/device/auth') stats.device_authorization += 1;
      else if (method === 'POST' && p === '/token/revocation') stats.revocation += 1;
      else if (method === 'POST' && p === '/token/introspection') stats.introspection += 1;
      else if (p === '/me') stats.userinfo += 1;
    }

    // scopeAudiences: remember an authorization request's api://NAME/.default scope by its PKCE
    // challenge, for the code exchange (whose verifier names it) that carries no scope.
    if (cfg.scopeAudiences && method === 'GET' && p === '/auth' && ctx.query.code_challenge) {
      const found = entraScopeAudience(ctx.query.scope);
      if (found.aud) {
        authScopeAudiences.set(ctx.query.code_challenge, found.aud);
        if (authScopeAudiences.size > 1000) authScopeAudiences.delete(authScopeAudiences.keys().next().value);
      }
    }

    let tokenGrant = null; // the grant_type of a token request
    let scopeAudience = null; // the audience its api://NAME/.default scope asks for (scopeAudiences)
    if (method === 'POST' && p === '/token') {
      // Read the form body here to see grant_type, then hand the text to oidc-provider, which
      // parses req.body when the stream was already consumed.
      const raw = await readRaw(ctx.req);
      ctx.req.body = raw;
      const params = new URLSearchParams(raw);
      const federated = await ci.federatedAssertion(params);
      if (federated?.error) {
        stats.token.total += 1;
        oauthError(ctx, 'invalid_client', federated.error);
        return;
      }
      if (federated?.body) ctx.req.body = federated.body;
      const grantType = params.get('grant_type') ?? '(none)';
      if (ctx.req.testbedEntry) {
        const form = {};
        for (const name of ['grant_type', 'redirect_uri', 'audience', 'resource', 'scope', 'subject_token_type', 'requested_token_type']) {
          if (params.has(name)) form[name] = params.getAll(name);
        }
        ctx.req.testbedEntry.form = form;
      }
      stats.token[grantType] = (stats.token[grantType] ?? 0) + 1;
      stats.token.total += 1;
      tokenGrant = grantType;

      if (cfg.tokenDelayMs > 0) await sleep(cfg.tokenDelayMs);

      if (cfg.tokenError) {
        oauthError(ctx, cfg.tokenError, `testbed: injected ${cfg.tokenError}`);
        return;
      }
      if (grantType === 'refresh_token' && cfg.refreshError) {
        const desc = cfg.refreshError === 'invalid_grant'
          ? 'testbed: refresh token revoked'
          : `testbed: injected ${cfg.refreshError}`;
        oauthError(ctx, cfg.refreshError, desc);
        return;
      }
      if (grantType === 'urn:ietf:params:oauth:grant-type:device_code' && cfg.deviceSlowDown > 0) {
        const code = params.get('device_code') ?? '';
        const polls = (devicePolls.get(code) ?? 0) + 1;
        devicePolls.set(code, polls);
        if (polls <= cfg.deviceSlowDown) {
          oauthError(ctx, 'slow_down', `testbed: slow down (poll ${polls} of ${cfg.deviceSlowDown})`);
          return;
        }
      }
      // Entra's scope-derived audience: oidc-provider knows no api://NAME/.default scope (a
      // refresh would refuse it as not granted), so it never sees it; the answer is fixed below.
      if (cfg.scopeAudiences && (grantType === 'authorization_code' || grantType === 'refresh_token')) {
        const found = entraScopeAudience(params.get('scope'));
        if (found.error) {
          oauthError(ctx, 'invalid_scope', found.error);
          return;
        }
        if (found.aud) {
          scopeAudience = found.aud;
          if (found.rest.length) params.set('scope', found.rest.join(' '));
          else params.delete('scope');
          ctx.req.body = params.toString();
        } else if (grantType === 'authorization_code' && params.get('code_verifier')) {
          const challenge = crypto.createHash('sha256').update(params.get('code_verifier')).digest('base64url');
          scopeAudience = authScopeAudiences.get(challenge) ?? null;
        }
      }
    }

    await next();

    // The access token of a code exchange or refresh for an api://NAME/.default scope
    // (scopeAudiences), and of any refresh under derivedAudienceOverride / derivedOpaque.
    if (tokenGrant && ctx.status === 200 && ctx.body && typeof ctx.body === 'object' && ctx.body.access_token) {
      const refresh = tokenGrant === 'refresh_token';
      const aud = (refresh && cfg.derivedAudienceOverride) || scopeAudience;
      if (refresh && cfg.derivedOpaque) {
        ctx.body = { ...ctx.body, access_token: opaqueAccessToken(), expires_in: cfg.accessTokenTtl };
      } else if (aud) {
        const sub = ctx.oidc?.entities?.Account?.accountId ?? (ctx.body.id_token ? decodeJwt(ctx.body.id_token).sub : null);
        if (!sub) throw new Error('testbed: no account for the access token');
        const accessToken = await mintAccessToken({ sub, clientId: ctx.oidc.client.clientId, scope: ctx.body.scope, aud });
        ctx.body = { ...ctx.body, access_token: accessToken, expires_in: cfg.accessTokenTtl };
      }
    }
    if (method === 'GET' && p === '/.well-known/openid-configuration' && ctx.status === 200
      && cfg.discoveryPatch && ctx.body && typeof ctx.body === 'object') {
      ctx.body = { ...ctx.body, ...cfg.discoveryPatch };
    }
    if (method === 'POST' && p === '/token' && ctx.status === 200 && cfg.tokenResponsePatch
      && ctx.body && typeof ctx.body === 'object') {
      ctx.body = { ...ctx.body, ...cfg.tokenResponsePatch };
    }
    if (method === 'POST' && p === '/token' && ctx.status === 200 && cfg.clientCredentialsIdToken
      && ctx.body && typeof ctx.body === 'object' && ctx.oidc?.client) {
      const form = new URLSearchParams(ctx.req.body ?? '');
      if (form.get('grant_type') === 'client_credentials'
        && (form.get('scope') ?? '').split(' ').includes('openid')) {
        const clientId = ctx.oidc.client.clientId;
        const now = Math.floor(Date.now() / 1000);
        const key = await importJWK(signing.jwk, signing.jwk.alg);
        const idToken = await new SignJWT({})
          .setProtectedHeader({ alg: signing.jwk.alg, kid: signing.jwk.kid })
          .setIssuer(signing.issuer).setSubject(clientId).setAudience(clientId)
          .setIssuedAt(now).setExpirationTime(now + cfg.idTokenTtl)
          .sign(key);
        ctx.body = { ...ctx.body, id_token: idToken };
      }
    }
    if (method === 'POST' && p === '/token' && ctx.status === 200 && cfg.devicePollRefusal
      && new URLSearchParams(ctx.req.body ?? '').get('grant_type') === 'urn:ietf:params:oauth:grant-type:device_code') {
      ctx.status = 400;
      ctx.set('Cache-Control', 'no-store');
      ctx.body = { ...cfg.devicePollRefusal };
    }
    // RFC 8628 clients default to 5 s between polls when `interval` is absent (oidc-provider
    // omits it); a short interval keeps device-flow tests fast.
    if (p === '/device/auth' && ctx.status === 200 && ctx.body && typeof ctx.body === 'object') {
      ctx.body = { ...ctx.body, interval: cfg.deviceInterval };
      // Other providers' shapes of this answer (Google: verification_url, no interval): a member
      // patched to null is left out.
      for (const [key, value] of Object.entries(cfg.deviceResponsePatch ?? {})) {
        if (value === null) delete ctx.body[key];
        else ctx.body[key] = value;
      }
    }
    // devInteractions' own pages @import a Google font: strip it (no traffic off loopback).
    if (typeof ctx.body === 'string' && ctx.response.is('html')) {
      ctx.body = ctx.body.replace(/@import url\(https?:\/\/[^)]*\);?/g, '');
    }
  };
}

// ---------------------------------------------------------------------------------------------
// Admin API: /__testbed/*
// ---------------------------------------------------------------------------------------------
function sendJson(res, status, body, headers = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
  res.end(text);
}

async function handleAdmin(req, res, url) {
  if (url.pathname.startsWith('/__testbed/ci/') && await ci.handleAdmin(req, res, url, { sendJson, readRaw })) return;
  const route = `${req.method} ${url.pathname.replace(/\/+$/, '')}`;
  switch (route) {
    case 'GET /__testbed/stats':
      return sendJson(res, 200, { ...stats, ci: ci.counts });
    case 'GET /__testbed/requests':
      return sendJson(res, 200, requestLog);
    case 'POST /__testbed/reset':
      await readRaw(req);
      stats = freshStats();
      devicePolls.clear();
      requestLog = [];
      return sendJson(res, 200, stats);
    case 'GET /__testbed/config':
      return sendJson(res, 200, cfg);
    case 'POST /__testbed/config': {
      let body;
      try {
        body = JSON.parse((await readRaw(req)) || '{}');
      } catch (err) {
        return sendJson(res, 400, { error: `body is not JSON: ${err.message}` });
      }
      if (!body || typeof body !== 'object' || Array.isArray(body)) {
        return sendJson(res, 400, { error: 'body must be a JSON object' });
      }
      const bad = Object.keys(body).filter((k) => !RUNTIME_KEYS.has(k));
      if (bad.length) return sendJson(res, 400, { error: `not runtime-settable: ${bad.join(', ')}` });
      Object.assign(cfg, body);
      return sendJson(res, 200, cfg);
    }
    case 'POST /__testbed/revoke-refresh-tokens':
      await readRaw(req);
      return sendJson(res, 200, { revoked: TestbedAdapter.destroyAll('RefreshToken') });
    default:
      return sendJson(res, 404, { error: `no such admin route: ${route}` });
  }
}

// ---------------------------------------------------------------------------------------------
// kube-apiserver stand-in: validates bearer JWTs the way the Kubernetes OIDC authenticator does.
// `audiences()` are the ones it accepts (apiAudiences, or an audienceApis stand-in's own) and
// `counters()` its counters in stats (looked up per request: a reset replaces them).
// ---------------------------------------------------------------------------------------------
function makeApiHandler({ issuer, caPem, audiences = () => cfg.apiAudiences, counters = () => stats.api, webhook = () => null }) {
  let keyset = null;
  let lastFetch = 0;

  function getJson(url) {
    const mod = url.startsWith('https:') ? https : http;
    return new Promise((resolve, reject) => {
      const req = mod.get(url, { ca: caPem, headers: { 'x-testbed-internal': '1' }, timeout: 5000 }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => { text += c; });
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`GET ${url}: HTTP ${res.statusCode}`));
          try { return resolve(JSON.parse(text)); } catch (err) { return reject(err); }
        });
      });
      req.on('timeout', () => req.destroy(new Error(`GET ${url}: timeout`)));
      req.on('error', reject);
    });
  }

  // Like the real authenticator: discovery document -> jwks_uri -> keys; refetch on an unknown kid.
  async function refreshKeys() {
    lastFetch = Date.now();
    const discovery = await getJson(`${issuer}/.well-known/openid-configuration`);
    if (discovery.issuer !== issuer) throw new Error(`discovery issuer mismatch: ${discovery.issuer}`);
    keyset = createLocalJWKSet(await getJson(discovery.jwks_uri));
  }

  // A managed cluster's webhook token authentication: the cloud's stand-in says whose token it is.
  function review(token) {
    const url = new URL(webhook());
    const mod = url.protocol === 'https:' ? https : http;
    const body = JSON.stringify({ token });
    return new Promise((resolve, reject) => {
      const req = mod.request(url, {
        method: 'POST', ca: caPem, timeout: 5000,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => { text += c; });
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`webhook: HTTP ${res.statusCode}: ${text}`));
          let answer;
          try { answer = JSON.parse(text); } catch (err) { return reject(err); }
          if (typeof answer.username !== 'string' || !answer.username) return reject(new Error(`webhook: no username in ${text}`));
          return resolve({ username: answer.username, groups: [...(answer.groups ?? []), 'system:authenticated'] });
        });
      });
      req.on('timeout', () => req.destroy(new Error('webhook: timeout')));
      req.on('error', reject);
      req.end(body);
    });
  }

  async function verify(token) {
    if (webhook()) return review(token);
    if (!keyset) await refreshKeys();
    const options = { issuer, algorithms: ['RS256', 'ES256'], requiredClaims: ['exp'] };
    let result;
    // A second JWT issuer, as a structured AuthenticationConfiguration allows: the test CI
    // issuer, whose tokens kubecred's federated-token grant presents as they are.
    let ciToken = false;
    try { ciToken = decodeJwt(token).iss === ci.issuer; } catch { /* not a JWT: jwtVerify says so */ }
    if (ciToken) {
      result = await jwtVerify(token, ci.keyset, { ...options, issuer: ci.issuer });
    } else try {
      result = await jwtVerify(token, keyset, options);
    } catch (err) {
      if (err.code !== 'ERR_JWKS_NO_MATCHING_KEY' || Date.now() - lastFetch < 1000) throw err;
      await refreshKeys();
      result = await jwtVerify(token, keyset, options);
    }
    const { payload } = result;
    const auds = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
    if (!auds.some((a) => audiences().includes(a))) {
      throw new Error(`aud ${JSON.stringify(payload.aud)} not in ${JSON.stringify(audiences())}`);
    }
    const username = payload[cfg.usernameClaim];
    if (typeof username !== 'string' || !username) throw new Error(`claim ${cfg.usernameClaim} missing`);
    // The authenticator refuses email usernames whose email_verified is present and not true.
    if (cfg.usernameClaim === 'email' && 'email_verified' in payload && payload.email_verified !== true) {
      throw new Error('email not verified');
    }
    let groups = payload[cfg.groupsClaim] ?? [];
    if (typeof groups === 'string') groups = [groups];
    if (!Array.isArray(groups) || groups.some((g) => typeof g !== 'string')) {
      throw new Error(`claim ${cfg.groupsClaim} is not a string or string array`);
    }
    return {
      username: `${cfg.usernamePrefix}${username}`,
      groups: [...groups.map((g) => `${cfg.groupsPrefix}${g}`), 'system:authenticated'],
    };
  }

  const status = (code, reason, message) => ({
    kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code,
  });
  const unauthorized = {
    kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401,
  };

  const VERSION = {
    major: '1', minor: '32', gitVersion: 'v1.32.4-testbed', gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean', buildDate: '2025-04-22T00:00:00Z', goVersion: 'go1.23.8', compiler: 'gc',
    platform: 'linux/amd64',
  };
  const API_VERSIONS = {
    kind: 'APIVersions', versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1:6443' }],
  };
  const API_GROUPS = {
    kind: 'APIGroupList', apiVersion: 'v1',
    groups: [{
      name: 'authentication.k8s.io',
      versions: [{ groupVersion: 'authentication.k8s.io/v1', version: 'v1' }],
      preferredVersion: { groupVersion: 'authentication.k8s.io/v1', version: 'v1' },
    }],
  };
  const AUTHN_RESOURCES = {
    kind: 'APIResourceList', apiVersion: 'v1', groupVersion: 'authentication.k8s.io/v1',
    resources: [
      { name: 'selfsubjectreviews', singularName: 'selfsubjectreview', namespaced: false, kind: 'SelfSubjectReview', verbs: ['create'] },
      { name: 'tokenreviews', singularName: 'tokenreview', namespaced: false, kind: 'TokenReview', verbs: ['create'] },
    ],
  };
  const CORE_RESOURCES = { kind: 'APIResourceList', groupVersion: 'v1', resources: [] };

  return async function apiHandler(req, res) {
    const count = counters();
    count.requests += 1;
    try {
      const url = new URL(req.url, 'https://127.0.0.1');
      await readRaw(req, 1024 * 1024); // drain the body
      const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
      let user = null;
      if (m && cfg.apiRejectedTokens.includes(m[1])) {
        quiet('api: rejected token: on the apiRejectedTokens list');
      } else if (m) {
        try {
          user = await verify(m[1]);
        } catch (err) {
          quiet(`api: rejected token: ${err.message}`);
        }
      }
      if (!user) {
        count.unauthorized += 1;
        return sendJson(res, 401, unauthorized);
      }
      count.last_user = user.username;

      const route = `${req.method} ${url.pathname.replace(/\/+$/, '') || '/'}`;
      switch (route) {
        case 'GET /version': return sendJson(res, 200, VERSION);
        case 'GET /api': return sendJson(res, 200, API_VERSIONS);
        case 'GET /api/v1': return sendJson(res, 200, CORE_RESOURCES);
        case 'GET /apis': return sendJson(res, 200, API_GROUPS);
        case 'GET /apis/authentication.k8s.io': return sendJson(res, 200, { kind: 'APIGroup', apiVersion: 'v1', ...API_GROUPS.groups[0] });
        case 'GET /apis/authentication.k8s.io/v1': return sendJson(res, 200, AUTHN_RESOURCES);
        case 'POST /apis/authentication.k8s.io/v1/selfsubjectreviews':
          // The request body carries nothing of interest (kubectl sends it as protobuf), and
          // client-go accepts a JSON answer.
          return sendJson(res, 201, {
            kind: 'SelfSubjectReview',
            apiVersion: 'authentication.k8s.io/v1',
            metadata: { creationTimestamp: null },
            status: { userInfo: { username: user.username, groups: user.groups } },
          });
        default:
          return sendJson(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
      }
    } catch (err) {
      console.error(`api: ${err.stack ?? err}`);
      if (!res.headersSent) sendJson(res, 500, status(500, 'InternalError', String(err.message ?? err)));
      return undefined;
    }
  };
}

// ---------------------------------------------------------------------------------------------
// Start-up
// ---------------------------------------------------------------------------------------------
const servers = [];
let stopping = false;

function removeStateDir() {
  try { fs.rmSync(stateDir, { recursive: true, force: true }); } catch { /* best effort */ }
}

function shutdown(reason, code = 0) {
  if (stopping) return;
  stopping = true;
  quiet(`stopping (${reason})`);
  for (const s of servers) {
    s.close();
    s.closeAllConnections?.();
  }
  removeStateDir();
  // Exit right away: lingering keep-alive sockets or timers must not keep a test waiting.
  process.exit(code);
}

process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
process.on('SIGHUP', () => shutdown('SIGHUP'));
process.on('exit', removeStateDir);
process.on('uncaughtException', (err) => { console.error(`fatal: ${err.stack ?? err}`); shutdown('error', 1); });
process.on('unhandledRejection', (err) => { console.error(`fatal: ${err?.stack ?? err}`); shutdown('error', 1); });

// Stop when a piped stdin reaches EOF (the Rust harness drops its end to stop the bed). Only
// pipes/sockets are watched: /dev/null (a backgrounded job in a script) would end at once, and
// reading a TTY from a background job would stop the process with SIGTTIN.
function watchStdin() {
  if (!cfg.exitOnStdinEof) return;
  let st;
  try { st = fs.fstatSync(0); } catch { return; }
  if (!st.isFIFO() && !st.isSocket()) return;
  process.stdin.on('data', () => {});
  process.stdin.on('end', () => shutdown('stdin EOF'));
  process.stdin.on('error', () => shutdown('stdin error'));
  process.stdin.resume();
}

function listen(server) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, () => resolve(server.address().port));
  });
}

async function main() {
  const tls = makeCertificates(stateDir);
  const jwks = await makeJwks();

  // Listen first (port 0 = OS-chosen), then build the Provider with the final issuer.
  let providerCallback = null;
  const idpHandler = (req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    const admin = url.pathname === '/__testbed' || url.pathname.startsWith('/__testbed/');
    // The GitHub Actions stand-in is recorded too: requests kubecred sends to someone else.
    if (!admin || url.pathname === '/__testbed/ci/actions') recordRequest(req, res, url);
    if (admin) {
      handleAdmin(req, res, url).catch((err) => {
        console.error(`admin: ${err.stack ?? err}`);
        if (!res.headersSent) sendJson(res, 500, { error: String(err.message ?? err) });
      });
      return;
    }
    // An outage as a client sees it: the connection goes away without an answer. The API
    // stand-in's own discovery and JWKS fetches still go through (a real API server caches them).
    if (cfg.providerDown && req.headers['x-testbed-internal'] !== '1') {
      stats.refused += 1;
      req.socket.destroy();
      return;
    }
    providerCallback(req, res);
  };
  const idpServer = cfg.idpTls
    ? https.createServer({ key: tls.key, cert: tls.cert }, idpHandler)
    : http.createServer(idpHandler);
  servers.push(idpServer);
  const idpPort = await listen(idpServer);
  if (!['127.0.0.1', 'localhost'].includes(cfg.idpHost)) {
    throw new Error(`idpHost must be "127.0.0.1" or "localhost", not ${JSON.stringify(cfg.idpHost)}`);
  }
  const issuer = `${cfg.idpTls ? 'https' : 'http'}://${cfg.idpHost}:${idpPort}`;

  ci = await makeCiIssuer(issuer);
  CLIENTS.push(...ci.clients);
  if (cfg.httpsCallbackPort !== null) {
    // A provider that takes only https redirect URIs, matched exactly (a web client: no
    // loopback port freedom): what --local-server-cert is for.
    const port = Number(cfg.httpsCallbackPort);
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new Error(`httpsCallbackPort must be a port number, not ${JSON.stringify(cfg.httpsCallbackPort)}`);
    }
    CLIENTS.push({
      client_id: 'kubecred-https',
      application_type: 'web',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token', TOKEN_EXCHANGE],
      response_types: ['code'],
      redirect_uris: [`https://localhost:${port}/callback`, `https://127.0.0.1:${port}/callback`],
    });
  }
  signing = { jwk: jwks.keys[0], keys: jwks.keys, issuer };
  const provider = new Provider(issuer, providerConfiguration(jwks));
  ci.registerTokenExchange(provider, errors, jwks.keys[0], cfg, makeUserTokenExchange(provider));
  provider.use(testbedMiddleware());
  provider.on('server_error', (ctx, err) => console.error(`provider server_error: ${err.stack ?? err}`));
  providerCallback = provider.callback();

  const apiServer = https.createServer({ key: tls.key, cert: tls.cert }, makeApiHandler({
    issuer, caPem: tls.caPem, webhook: () => cfg.apiWebhook,
  }));
  servers.push(apiServer);
  const apiPort = await listen(apiServer);
  // One more stand-in per audienceApis audience, accepting that audience alone.
  const audienceApis = {};
  for (const aud of cfg.audienceApis) {
    const server = https.createServer({ key: tls.key, cert: tls.cert }, makeApiHandler({
      issuer, caPem: tls.caPem, audiences: () => [aud], counters: () => stats.audience_apis[aud],
    }));
    servers.push(server);
    audienceApis[aud] = `https://127.0.0.1:${await listen(server)}`;
  }

  process.stdout.write(`${JSON.stringify({
    issuer,
    api_server: `https://127.0.0.1:${apiPort}`,
    audience_apis: audienceApis,
    ca_file: tls.caFile,
    ca_data: Buffer.from(tls.caPem).toString('base64'),
    admin: `${issuer}/__testbed`,
    state_dir: stateDir,
  })}\n`);
  watchStdin();
}

main().catch((err) => {
  console.error(`start-up failed: ${err.stack ?? err}`);
  shutdown('start-up failure', 1);
});
