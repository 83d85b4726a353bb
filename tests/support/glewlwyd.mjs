#!/usr/bin/env node
// The second, independent OpenID Provider of the test bed: Debian's `glewlwyd` (a C server,
// configured here and nowhere else), for tests/it/glewlwyd.rs. Its discovery lists only
// authorization_code, implicit and device_code though it serves client credentials and refresh
// too, it answers refreshes without an ID token, and its tokens say `bearer` in lower case: the
// provider as it is, not as oidc-provider is.
//
// Usage:
//   node glewlwyd.mjs serve [--resource URI]... [--one-time-refresh-tokens]
//       Sets up a fresh instance in a temporary directory (SQLite database from the package's own
//       schema, an RS256 key, the OpenID Connect plugin, the user alice, a public client and a
//       confidential one), serves it on 127.0.0.1 only, prints one JSON line
//       {"issuer", "callback", "log", ...} on stdout (log: glewlwyd's log file, at DEBUG), and
//       stops glewlwyd and removes the directory on EOF of stdin, SIGTERM or SIGINT. Each --resource is a resource indicator (RFC 8707) the
//       plugin allows with the scope openid (its "Resource list by scope"); without one, resource
//       indicators are off, as the plugin's default is. --one-time-refresh-tokens sets the
//       plugin's "One-time use refresh token" to Always (its default is Never): each refresh
//       disables the refresh token it was given and answers with a new one.
//   node glewlwyd.mjs browse URL
//       The "browser": does what glewlwyd's login page does for alice — signs in with her
//       password and grants the client its scopes through glewlwyd's own API — then opens URL
//       (an authorization or device verification URL) with that session and follows the redirect
//       to kubecred's loopback callback, if there is one.

import { spawn, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

import { exportJWK, generateKeyPair } from 'jose';

process.stdout.on('error', () => {});
process.stderr.on('error', () => {});

const USER = 'alice';
const PASSWORD = 'glewlwyd-alice-password';
const PUBLIC_CLIENT = 'kubecred-glewlwyd';
const CC_CLIENT = 'kubecred-glewlwyd-cc';
const CC_SECRET = 'glewlwyd-cc-secret-0123456789';
const SCHEMA = '/usr/share/dbconfig-common/data/glewlwyd/install/sqlite3';
const MODULES = '/usr/lib/glewlwyd';

// What `serve` must undo however it ends: the glewlwyd process and the temporary directory.
let cleanup = () => {};
process.on('exit', () => cleanup());

function fail(message) {
  process.stderr.write(`glewlwyd.mjs: ${message}\n`);
  process.exit(1);
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const sql = (value) => `'${String(value).replaceAll("'", "''")}'`;

async function api(base, method, route, body, cookie) {
  const response = await fetch(`${base}/api${route}`, {
    method,
    headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
    redirect: 'manual',
  });
  if (response.status !== 200) {
    fail(`${method} /api${route} answered ${response.status}: ${await response.text()}`);
  }
  return response;
}

// The session cookie of a password sign-in, as glewlwyd's login page gets it.
async function signIn(base, username, password) {
  const response = await api(base, 'POST', '/auth/', { username, password });
  const cookie = response.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  if (!cookie) fail(`signing in as ${username} set no session cookie`);
  return cookie;
}

async function serve(options) {
  const resources = [];
  let oneTimeRefreshTokens = false;
  for (let i = 0; i < options.length; i++) {
    if (options[i] === '--resource' && i + 1 < options.length) resources.push(options[++i]);
    else if (options[i] === '--one-time-refresh-tokens') oneTimeRefreshTokens = true;
    else fail(`serve: unknown option ${options[i]}`);
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kubecred-glewlwyd-'));
  cleanup = () => fs.rmSync(dir, { recursive: true, force: true });
  const port = await freePort();
  const callbackPort = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const issuer = `${base}/api/oidc`;
  const callback = `http://127.0.0.1:${callbackPort}/callback`;

  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: 'glewlwyd-rs256', alg: 'RS256', use: 'sig' };
  const plugin = {
    iss: issuer,
    'jwt-type': 'rsa',
    'jwt-key-size': '256',
    'jwks-private': JSON.stringify({ keys: [jwk] }),
    'default-kid': jwk.kid,
    'access-token-duration': 600,
    'refresh-token-duration': 86400,
    'code-duration': 600,
    'refresh-token-rolling': true,
    'allow-non-oidc': true,
    'auth-type-code-enabled': true,
    'auth-type-id-token-enabled': true,
    'auth-type-client-enabled': true,
    'auth-type-refresh-enabled': true,
    'auth-type-device-enabled': true,
    'device-authorization-expiration': 300,
    'device-authorization-interval': 1,
    'pkce-allowed': true,
    'introspection-revocation-allowed': true,
    'jwks-show': true,
    scope: [],
    'refresh-token-one-use': oneTimeRefreshTokens ? 'always' : 'never',
    ...(resources.length > 0
      ? { 'resource-allowed': true, 'resource-scope': { openid: resources }, 'resource-scope-and-client-property': false }
      : {}),
  };
  const db = path.join(dir, 'glewlwyd.sqlite3');
  execFileSync('sqlite3', [db], {
    input: `${fs.readFileSync(SCHEMA, 'utf8')}
-- A user's own scope: signing in with the password is what makes a session valid for it.
UPDATE g_scope SET gs_password_required = 1 WHERE gs_name = 'openid';
INSERT INTO g_plugin_module_instance (gpmi_module, gpmi_name, gpmi_display_name, gpmi_parameters)
  VALUES ('oidc', 'oidc', 'OpenID Connect', ${sql(JSON.stringify(plugin))});
`,
  });
  const conf = path.join(dir, 'glewlwyd.conf');
  const log = path.join(dir, 'glewlwyd.log');
  // The package's own configuration file, pointed at this instance: loopback only, the SQLite
  // database above, a log on the console (its warnings and errors reach the test's stderr) and
  // in a file, at DEBUG: the test reads there what glewlwyd did with each request (a refresh it
  // refused, and why, is a DEBUG line).
  const packaged = fs.readFileSync('/etc/glewlwyd/glewlwyd.conf', 'utf8');
  const settings = {
    port: `${port}`,
    bind_address: '"127.0.0.1"',
    external_url: `"${base}"`,
    log_mode: '"console,file"',
    log_level: '"DEBUG"',
    log_file: `"${log}"`,
  };
  let text = packaged
    .split('\n')
    .map((line) => {
      const key = line.replace(/^#\s*/, '').split('=')[0].trim();
      return key in settings ? `${key}=${settings[key]}` : line;
    })
    .join('\n');
  text = text.replace(/^@include .*$/m, `database =\n{\n  type = "sqlite3"\n  path = "${db}"\n};`);
  fs.writeFileSync(conf, text);
  // The console's INFO and DEBUG lines go to stdout, dropped here: the log file has them.
  const server = spawn('glewlwyd', ['-c', conf], { stdio: ['ignore', 'ignore', 'inherit'] });
  let stopping = false;
  cleanup = () => {
    stopping = true;
    server.kill('SIGTERM');
    fs.rmSync(dir, { recursive: true, force: true });
  };
  let exited = false;
  server.on('exit', (code) => {
    exited = true;
    if (!stopping) fail(`glewlwyd exited (${code}) before it was stopped`);
  });
  // glewlwyd writes its log in the directory until it exits: the directory goes after it (or
  // after 2 s, within the 3 s tests/it's stop_node_server gives).
  const stop = () => {
    stopping = true;
    if (exited) process.exit(0);
    setTimeout(() => process.exit(0), 2000);
    server.once('exit', () => process.exit(0));
    server.kill('SIGTERM');
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  const started = Date.now();
  for (;;) {
    try {
      const r = await fetch(`${issuer}/.well-known/openid-configuration`);
      if (r.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() - started > 20000) fail('glewlwyd did not serve its discovery document within 20 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  // The package's administrator account (admin/password) creates the user and the clients.
  const admin = await signIn(base, 'admin', 'password');
  await api(base, 'POST', '/user/', {
    username: USER, name: 'Alice', email: 'alice@glewlwyd.example', enabled: true,
    scope: ['openid'], password: PASSWORD,
  }, admin);
  await api(base, 'POST', '/client/', {
    client_id: PUBLIC_CLIENT, name: 'kubecred', enabled: true, confidential: false,
    redirect_uri: [callback], token_endpoint_auth_method: ['none'],
    authorization_type: ['code', 'device_authorization', 'refresh_token'], scope: [],
  }, admin);
  await api(base, 'POST', '/client/', {
    client_id: CC_CLIENT, name: 'kubecred CI', enabled: true, confidential: true, password: CC_SECRET,
    redirect_uri: [], token_endpoint_auth_method: ['client_secret_basic', 'client_secret_post'],
    authorization_type: ['client_credentials'], scope: ['openid'],
  }, admin);

  process.stdout.write(`${JSON.stringify({
    issuer, base, callback, callback_port: callbackPort, log, user: USER, password: PASSWORD,
    public_client: PUBLIC_CLIENT, cc_client: CC_CLIENT, cc_secret: CC_SECRET,
  })}\n`);
  process.stdin.on('end', stop);
  process.stdin.resume();
}

async function browse(url) {
  const target = new URL(url);
  const base = target.origin;
  const clientId = target.searchParams.get('client_id') ?? PUBLIC_CLIENT;
  const cookie = await signIn(base, USER, PASSWORD);
  await api(base, 'PUT', `/auth/grant/${encodeURIComponent(clientId)}`, { scope: 'openid' }, cookie);
  // g_continue: what the login page appends once the user has signed in and consented.
  target.searchParams.set('g_continue', '');
  const answer = await fetch(target, { headers: { cookie }, redirect: 'manual' });
  const location = answer.headers.get('location');
  if (!location) fail(`${url} answered ${answer.status} without a redirect`);
  const next = new URL(location, base);
  if (next.origin === base) {
    // The device flow ends on glewlwyd's own "device complete" page.
    if (!next.searchParams.get('prompt')?.startsWith('device')) fail(`glewlwyd sent the browser to ${next}`);
    return;
  }
  const callback = await fetch(next, { redirect: 'manual' });
  if (callback.status >= 400) fail(`the callback ${next.origin}${next.pathname} answered ${callback.status}`);
}

switch (process.argv[2]) {
  case 'serve':
    await serve(process.argv.slice(3));
    break;
  case 'browse':
    await browse(process.argv[3]);
    process.exit(0);
    break;
  default:
    fail('usage: glewlwyd.mjs serve [--resource URI]... [--one-time-refresh-tokens] | browse URL');
}
