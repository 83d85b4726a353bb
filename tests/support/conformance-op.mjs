#!/usr/bin/env node
// A purpose-built OpenID Provider for kubecred's relying-party conformance tests
// (tests/it/conformance.rs), after the OpenID Foundation's `oidcc-client-test-*` modules: a
// correct code-flow provider (discovery, JWKS, authorization endpoint with PKCE, token endpoint
// with refresh) except for the one defect the current module names. Plain HTTP on 127.0.0.1
// only (kubecred accepts http endpoints on loopback).
//
// Usage:
//   node conformance-op.mjs '{"module": "oidcc-client-test-missing-iat"}'
//       Serves; prints one JSON line {"issuer": ...} on stdout, then nothing. Stops on EOF of a
//       piped stdin, SIGTERM or SIGINT.
//   node conformance-op.mjs follow URL
//       The "browser": GETs the authorization URL, follows the provider's redirect to the
//       loopback callback (kubecred's listener), and exits. No page, no user: the provider
//       signs in its one user at once.
//
// Admin API (under /_admin/, for the test only):
//   POST /_admin/module {"module": "..."}   switch the module (e.g. after a good first login)
//   POST /_admin/rotate                      sign with a new RSA key from now on (old one retired)
//   GET  /_admin/stats                       {"jwks": N, "authorize": N, "token": {grant: N}}

import * as crypto from 'node:crypto';
import * as http from 'node:http';

import { SignJWT, exportJWK, generateKeyPair } from 'jose';

process.stdout.on('error', () => {});
process.stderr.on('error', () => {});

if (process.argv[2] === 'follow') {
  await follow(process.argv[3]);
  process.exit(0);
}

const CLIENT_ID = 'conformance-rp';
const CLIENT_SECRET = 'conformance-secret-0123456789abcdef';
const USER = 'conformance-user';

const options = JSON.parse(process.argv[2] || '{}');
let module = options.module || 'oidcc-client-test';

// Keys: the current RSA signing key, an EC key, and spare RSA keys for rotation and for the
// several-keys JWKS. Each has a kid unless a module removes it.
const makeKey = async (alg, kid) => {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { alg, kid, privateKey, publicKey, jwk };
};
let rsa = await makeKey('RS256', 'rsa-1');
const rsaOther = await makeKey('RS256', 'rsa-other');
const ec = await makeKey('ES256', 'ec-1');
let rotations = 0;

const stats = { jwks: 0, authorize: 0, token: {} };
const codes = new Map(); // code -> { nonce, challenge, redirect_uri }
const refreshTokens = new Set();

const server = http.createServer((req, res) => {
  handle(req, res).catch((err) => {
    process.stderr.write(`conformance-op: ${err.stack}\n`);
    send(res, 500, { error: 'server_error' });
  });
});
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  process.stdout.write(`${JSON.stringify({ issuer: base(port) })}\n`);
});
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 500).unref();
};
process.stdin.on('end', stop);
process.stdin.resume();
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

function base(port = server.address().port) {
  return `http://127.0.0.1:${port}`;
}

function send(res, status, body, headers = {}) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, {
    'content-type': typeof body === 'string' ? 'text/plain' : 'application/json',
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function handle(req, res) {
  const url = new URL(req.url, base());
  const route = `${req.method} ${url.pathname}`;
  switch (route) {
    case 'GET /.well-known/openid-configuration':
      return send(res, 200, discovery());
    case `GET ${jwksPath()}`:
      stats.jwks += 1;
      return send(res, 200, { keys: publishedKeys() });
    case 'GET /authorize':
      return authorize(url, res);
    case 'POST /token':
      return token(req, res);
    case 'POST /_admin/module':
      module = JSON.parse(await readBody(req)).module;
      return send(res, 200, { module });
    case 'POST /_admin/rotate':
      rsa = await makeKey('RS256', `rsa-rotated-${++rotations}`);
      return send(res, 200, { kid: rsa.kid });
    case 'GET /_admin/stats':
      return send(res, 200, stats);
    default:
      return send(res, 404, { error: 'not_found' });
  }
}

// oidcc-client-test-discovery-jwks-uri-keys: the JWKS lives at a path only discovery names.
function jwksPath() {
  return module === 'oidcc-client-test-discovery-jwks-uri-keys' ? '/keys-7f3a9c' : '/jwks';
}

function discovery() {
  const issuer = base();
  return {
    issuer: module === 'oidcc-client-test-discovery-issuer-mismatch' ? `${issuer}/someone-else` : issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    jwks_uri: `${issuer}${jwksPath()}`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['RS256', 'ES256'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['client_secret_basic'],
    authorization_response_iss_parameter_supported: module.startsWith('rfc9207-') && module !== 'rfc9207-iss-unannounced',
  };
}

function publishedKeys() {
  switch (module) {
    case 'oidcc-client-test-kid-absent-single-jwks':
      return [withoutKid(rsa.jwk)];
    case 'oidcc-client-test-kid-absent-multiple-jwks':
      return [rsa.jwk, rsaOther.jwk];
    case 'invalid-sig-hs256-rsa-public-key':
      return [rsa.jwk];
    case 'jwks-unusable-keys':
    case 'jwks-unusable-keys-kid-absent':
      return [...unusableKeys(), rsa.jwk];
    default:
      return [rsa.jwk, ec.jwk];
  }
}

// Keys real JWKS documents publish beside the signing key that kubecred cannot (and need not)
// use: Ed448, encryption keys with and without `alg`, post-quantum ML-DSA, an x5c-only key.
function unusableKeys() {
  const { n, e } = rsa.jwk;
  return [
    { kty: 'OKP', crv: 'Ed448', kid: 'ed448', x: 'X9dEm1m0Yf0s54fsYWrUah2hNCSFpw4fig6nXYDpZ3jt8SR2m0bHBhvWeD3x5Q9s0foavq_oJWGA' },
    { kty: 'RSA', use: 'enc', alg: 'RSA-OAEP-512', kid: 'oaep', n, e },
    { kty: 'RSA', use: 'enc', kid: 'enc', n, e },
    { kty: 'AKP', alg: 'ML-DSA-44', kid: 'pq', pub: 'AAAA' },
    { kty: 'RSA', kid: 'x5c-only', x5c: ['MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA'] },
  ];
}

function withoutKid(jwk) {
  const { kid, ...rest } = jwk;
  return rest;
}

function authorize(url, res) {
  stats.authorize += 1;
  const p = url.searchParams;
  const redirect = p.get('redirect_uri');
  if (p.get('client_id') !== CLIENT_ID || !redirect || !new URL(redirect).hostname.match(/^(127\.0\.0\.1|localhost|\[::1\])$/)) {
    return send(res, 400, 'bad client_id or redirect_uri');
  }
  if (p.get('response_type') !== 'code' || p.get('code_challenge_method') !== 'S256' || !p.get('code_challenge')) {
    return send(res, 400, 'code flow with PKCE S256 only');
  }
  if (!(p.get('scope') || '').split(' ').includes('openid')) return send(res, 400, 'scope must include openid');
  const code = crypto.randomBytes(16).toString('base64url');
  codes.set(code, { nonce: p.get('nonce'), challenge: p.get('code_challenge'), redirect_uri: redirect });
  const to = new URL(redirect);
  to.searchParams.set('code', code);
  if (p.has('state')) to.searchParams.set('state', p.get('state'));
  if (module === 'rfc9207-iss-wrong') to.searchParams.set('iss', 'http://127.0.0.1:1/mix-up');
  else if (module !== 'rfc9207-iss-missing') to.searchParams.set('iss', base());
  res.writeHead(303, { location: to.toString() });
  res.end();
}

async function token(req, res) {
  const form = new URLSearchParams(await readBody(req));
  const grant = form.get('grant_type');
  stats.token[grant] = (stats.token[grant] || 0) + 1;
  if (!authenticated(req, form)) return send(res, 401, { error: 'invalid_client' });
  let nonce;
  if (grant === 'authorization_code') {
    const entry = codes.get(form.get('code'));
    codes.delete(form.get('code'));
    const verifier = form.get('code_verifier') || '';
    const challenge = crypto.createHash('sha256').update(verifier).digest('base64url');
    if (!entry || entry.challenge !== challenge || entry.redirect_uri !== form.get('redirect_uri')) {
      return send(res, 400, { error: 'invalid_grant' });
    }
    nonce = entry.nonce;
  } else if (grant === 'refresh_token') {
    if (!refreshTokens.delete(form.get('refresh_token'))) return send(res, 400, { error: 'invalid_grant' });
  } else {
    return send(res, 400, { error: 'unsupported_grant_type' });
  }
  const refreshed = grant === 'refresh_token';
  const refresh = crypto.randomBytes(24).toString('base64url');
  refreshTokens.add(refresh);
  const body = {
    access_token: crypto.randomBytes(24).toString('base64url'),
    token_type: module === 'token-type-lowercase' ? 'bearer' : 'Bearer',
    expires_in: 300,
    refresh_token: refresh,
    id_token: await idToken(nonce, refreshed),
  };
  if (module === 'no-expires-in') delete body.expires_in;
  return send(res, 200, body);
}

// client_secret_basic, as discovery says (RFC 6749 §2.3.1: form-encoded, then base64).
function authenticated(req, form) {
  const header = req.headers.authorization || '';
  if (!header.startsWith('Basic ')) return false;
  const [id, secret] = Buffer.from(header.slice(6), 'base64').toString().split(':').map(decodeURIComponent);
  return id === CLIENT_ID && secret === CLIENT_SECRET && (!form.has('client_id') || form.get('client_id') === CLIENT_ID);
}

// The modules whose defect is in the ID token of the refresh response; every other module's
// defect is in the login's (the first) ID token.
const REFRESH_DEFECTS = new Set([
  'oidcc-client-test-refresh-token-invalid-issuer',
  'oidcc-client-test-refresh-token-invalid-sub',
  'refresh-token-invalid-aud',
  'unknown-kid',
]);

async function idToken(nonce, refreshed) {
  const now = Math.floor(Date.now() / 1000);
  const claims = { iss: base(), sub: USER, aud: CLIENT_ID, iat: now, exp: now + 600, email: 'rp@example.test' };
  if (nonce && !refreshed) claims.nonce = nonce;
  let header = { alg: 'RS256', kid: rsa.kid, typ: 'JWT' };
  let key = rsa.privateKey;
  const defect = REFRESH_DEFECTS.has(module) === refreshed ? module : 'oidcc-client-test';
  switch (defect) {
    case 'oidcc-client-test-invalid-iss':
    case 'oidcc-client-test-refresh-token-invalid-issuer':
      claims.iss = 'https://issuer.invalid';
      break;
    case 'oidcc-client-test-missing-sub':
      delete claims.sub;
      break;
    case 'oidcc-client-test-refresh-token-invalid-sub':
      claims.sub = `${USER}-someone-else`;
      break;
    case 'oidcc-client-test-invalid-aud':
      claims.aud = 'another-client';
      break;
    case 'oidcc-client-test-missing-aud':
      delete claims.aud;
      break;
    case 'refresh-token-invalid-aud':
      claims.aud = [CLIENT_ID, 'another-client'];
      claims.azp = CLIENT_ID;
      break;
    case 'oidcc-client-test-missing-iat':
      delete claims.iat;
      break;
    case 'oidcc-client-test-nonce-invalid':
      claims.nonce = 'not-the-nonce-that-was-sent';
      break;
    case 'nonce-missing':
      delete claims.nonce;
      break;
    case 'id-token-expired':
      claims.iat = now - 3600;
      claims.exp = now - 600;
      break;
    case 'aud-array-with-azp':
      claims.aud = [CLIENT_ID, 'kubernetes'];
      claims.azp = CLIENT_ID;
      break;
    case 'clock-ahead':
      // A provider whose clock runs 50 s ahead of ours (the skew real fleets show).
      claims.iat = now + 50;
      claims.nbf = now + 50;
      claims.exp = now + 650;
      break;
    case 'groups-12kb':
      // An enterprise account in hundreds of groups: a 12 KB claim in a header-sized token.
      claims.groups = Array.from({ length: 600 }, (_, i) => `team-${String(i).padStart(4, '0')}-members`);
      break;
    case 'aud-array-without-azp':
      claims.aud = ['kubernetes', CLIENT_ID];
      break;
    case 'azp-another-client':
      claims.aud = [CLIENT_ID, 'another-client'];
      claims.azp = 'another-client';
      break;
    case 'oidcc-client-test-kid-absent-single-jwks':
    case 'oidcc-client-test-kid-absent-multiple-jwks':
    case 'jwks-unusable-keys-kid-absent':
      delete header.kid;
      break;
    case 'idtoken-sig-es256':
    case 'oidcc-client-test-invalid-sig-es256':
      header = { alg: 'ES256', kid: ec.kid, typ: 'JWT' };
      key = ec.privateKey;
      break;
    case 'oidcc-client-test-invalid-sig-hs256':
      header = { alg: 'HS256', typ: 'JWT' };
      key = new TextEncoder().encode(CLIENT_SECRET);
      break;
    case 'invalid-sig-hs256-rsa-public-key':
      // The classic key-confusion forgery: HMAC keyed with the bytes of the published RSA key.
      header = { alg: 'HS256', kid: rsa.kid, typ: 'JWT' };
      key = new TextEncoder().encode(crypto.KeyObject.from(rsa.publicKey).export({ type: 'spki', format: 'pem' }));
      break;
    case 'unknown-kid':
      header.kid = 'rsa-never-published';
      break;
    case 'oidcc-client-test-idtoken-sig-none':
      return unsigned(claims);
    default:
      break;
  }
  const jwt = await new SignJWT(claims).setProtectedHeader(header).sign(key);
  if (defect === 'oidcc-client-test-invalid-sig-rs256' || defect === 'oidcc-client-test-invalid-sig-es256') {
    return corruptSignature(jwt);
  }
  return jwt;
}

function unsigned(claims) {
  const part = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`;
}

// Flips bits in the middle of the signature: the token is well formed, the signature wrong.
function corruptSignature(jwt) {
  const [h, p, s] = jwt.split('.');
  const sig = Buffer.from(s, 'base64url');
  sig[Math.floor(sig.length / 2)] ^= 0x5a;
  return `${h}.${p}.${sig.toString('base64url')}`;
}

async function follow(authorizationUrl) {
  const signal = AbortSignal.timeout(20000);
  const answer = await fetch(authorizationUrl, { redirect: 'manual', signal });
  const location = answer.headers.get('location');
  if (!location) {
    process.stderr.write(`conformance-op follow: no redirect (${answer.status} ${await answer.text()})\n`);
    process.exit(1);
  }
  const callback = await fetch(location, { redirect: 'manual', signal });
  await callback.text();
}
