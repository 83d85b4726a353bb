// A test "CI issuer" for kubecred's CI tests, loaded by testbed.mjs: a second signer under test
// control (the stand-in for token.actions.githubusercontent.com, GitLab, a cluster's service-account
// issuer), its JWKS on loopback, a stand-in for the GitHub Actions ID-token endpoint, an RFC 8693
// token-exchange grant on the provider that trusts it, a private_key_jwt client, and a federated
// client assertion (a CI token trusted as the credential of client `ci-federated`, as Entra ID's
// federated identity credentials do), and a resource owner password grant (user alice).
//
// Admin routes (under /__testbed/ci/):
//   GET  jwks                       the CI issuer's public keys
//   POST token {sub, aud, ttl, iss} a CI token (iss defaults to the CI issuer)
//   GET  actions?audience=A         the Actions stand-in: needs `Authorization: bearer <ACTIONS_REQUEST_TOKEN>`
//   GET  client-key                 {pem} of the ci-private-key client's EC P-256 key

import * as crypto from 'node:crypto';
import { calculateJwkThumbprint, createLocalJWKSet, decodeJwt, exportJWK, exportPKCS8, generateKeyPair, importJWK, jwtVerify, SignJWT } from 'jose';

export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
export const ACTIONS_REQUEST_TOKEN = 'testbed-actions-request-token';
/// What the exchange grant wants as the subject token's audience; the federated client's too.
export const EXCHANGE_AUDIENCE = 'testbed-exchange';
export const FEDERATED_AUDIENCE = 'api://TestbedTokenExchange';
export const FEDERATED_SUBJECT = 'repo:kubecred/kubecred:ref:refs/heads/main';
export const PASSWORD = 'testbed-alice-password';
const FEDERATED_CLIENT_SECRET = crypto.randomBytes(24).toString('hex'); // never leaves the bed

export async function makeCiIssuer(issuer) {
  const ciIssuer = `${issuer}/__testbed/ci`;
  const kid = `ci-${crypto.randomBytes(4).toString('hex')}`;
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const publicJwks = { keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }] };
  const keyset = createLocalJWKSet(publicJwks);
  const client = await generateKeyPair('ES256', { extractable: true });
  const clientPem = await exportPKCS8(client.privateKey);
  const clientPublic = await exportJWK(client.publicKey);
  // kid = the RFC 7638 thumbprint: what kubecred uses when --client-key-id is not given.
  const clientJwk = { ...clientPublic, kid: await calculateJwkThumbprint(clientPublic), alg: 'ES256', use: 'sig' };
  const counts = { tokens: 0, actions: 0, exchanges: 0, federated_assertions: 0, passwords: 0 };

  async function mint({ sub = FEDERATED_SUBJECT, aud = EXCHANGE_AUDIENCE, ttl = 300, iss = ciIssuer } = {}) {
    counts.tokens += 1;
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ repository: 'kubecred/kubecred', ref: 'refs/heads/main' })
      .setProtectedHeader({ alg: 'RS256', kid })
      .setIssuer(iss).setSubject(sub).setAudience(aud)
      .setIssuedAt(now).setExpirationTime(now + ttl).setJti(crypto.randomUUID())
      .sign(privateKey);
  }

  const clients = [
    { client_id: 'kubecred-password', token_endpoint_auth_method: 'none', grant_types: ['password'], response_types: [], redirect_uris: [] },
    { client_id: 'ci-exchange', token_endpoint_auth_method: 'none', grant_types: [TOKEN_EXCHANGE], response_types: [], redirect_uris: [] },
    {
      client_id: 'ci-private-key', token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [clientJwk] },
      grant_types: ['client_credentials', TOKEN_EXCHANGE], response_types: [], redirect_uris: [],
    },
    {
      client_id: 'ci-federated', client_secret: FEDERATED_CLIENT_SECRET, token_endpoint_auth_method: 'client_secret_post',
      grant_types: ['client_credentials', TOKEN_EXCHANGE], response_types: [], redirect_uris: [],
    },
  ];

  // RFC 8693 on the provider: the subject token must be the CI issuer's, for EXCHANGE_AUDIENCE;
  // the issued access token is a JWT of the provider (signed with its own key) that the API
  // stand-in accepts, for `audience` (default the API's). One grant type has one handler: the
  // exchange of a person's access token (testbed.mjs, `userExchange`) answers first, for the
  // clients a person logs in with.
  function registerTokenExchange(provider, errors, providerJwk, cfg, userExchange) {
    provider.registerGrantType(TOKEN_EXCHANGE, async (ctx) => {
      if (userExchange && await userExchange(ctx)) return;
      const { params } = ctx.oidc;
      // Repeated audience/resource are registered for the user exchange; here, as before, not.
      for (const name of ['audience', 'resource']) {
        if (Array.isArray(params[name])) throw new errors.InvalidRequest(`'${name}' parameter must not be provided twice`);
      }
      if (params.subject_token_type !== 'urn:ietf:params:oauth:token-type:jwt') {
        throw new errors.InvalidRequest(`testbed: unsupported subject_token_type ${params.subject_token_type}`);
      }
      let payload;
      try {
        ({ payload } = await jwtVerify(params.subject_token, keyset, { issuer: ciIssuer, audience: EXCHANGE_AUDIENCE, requiredClaims: ['exp'] }));
      } catch (err) {
        throw new errors.InvalidGrant(`testbed: subject token rejected (${err.code ?? err.message})`);
      }
      counts.exchanges += 1;
      const key = await importJWK(providerJwk, providerJwk.alg);
      const now = Math.floor(Date.now() / 1000);
      const ttl = cfg.accessTokenTtl;
      const accessToken = await new SignJWT({ client_id: ctx.oidc.client.clientId, groups: ['ci'], scope: params.scope })
        .setProtectedHeader({ alg: providerJwk.alg, kid: providerJwk.kid })
        .setIssuer(provider.issuer).setSubject(`ci:${payload.sub}`).setAudience(params.audience ?? 'https://kubernetes.testbed')
        .setIssuedAt(now).setExpirationTime(now + ttl).setJti(crypto.randomUUID())
        .sign(key);
      ctx.body = {
        access_token: accessToken,
        issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        token_type: 'Bearer',
        expires_in: ttl,
        // Sent to check that kubecred re-exchanges instead of refreshing (it must drop it).
        refresh_token: `testbed-unusable-${crypto.randomBytes(8).toString('hex')}`,
      };
    }, ['subject_token', 'subject_token_type', 'requested_token_type', 'audience', 'resource', 'scope'], ['audience', 'resource']);

    // The resource owner password grant (oidc-provider has none): user `alice`, password
    // PASSWORD; an ID token for the client, signed by the provider, and an access token.
    provider.registerGrantType('password', async (ctx) => {
      const { params } = ctx.oidc;
      if (params.username !== 'alice' || params.password !== PASSWORD) {
        throw new errors.InvalidGrant('testbed: wrong user name or password');
      }
      counts.passwords += 1;
      const key = await importJWK(providerJwk, providerJwk.alg);
      const now = Math.floor(Date.now() / 1000);
      const sign = (claims, aud) => new SignJWT(claims)
        .setProtectedHeader({ alg: providerJwk.alg, kid: providerJwk.kid })
        .setIssuer(provider.issuer).setSubject(params.username).setAudience(aud)
        .setIssuedAt(now).setExpirationTime(now + cfg.idTokenTtl).setJti(crypto.randomUUID())
        .sign(key);
      ctx.body = {
        access_token: await sign({ scope: params.scope }, 'https://kubernetes.testbed'),
        id_token: await sign({ groups: ['developers'] }, ctx.oidc.client.clientId),
        token_type: 'Bearer',
        expires_in: cfg.idTokenTtl,
      };
    }, ['username', 'password', 'scope']);
  }

  // A federated client assertion: a CI token (iss = CI issuer, sub = FEDERATED_SUBJECT,
  // aud = FEDERATED_AUDIENCE) authenticates client ci-federated. oidc-provider only knows
  // assertions the client signed itself, so the bed checks the trust here and hands the provider
  // the client's own (internal) secret instead. Returns the new form body, or an error message.
  async function federatedAssertion(params) {
    if (params.get('client_assertion_type') !== JWT_BEARER || !params.get('client_assertion')) return null;
    let unverified;
    try { unverified = decodeJwt(params.get('client_assertion')); } catch { return null; }
    if (unverified.iss !== ciIssuer) return null; // a private_key_jwt assertion: the provider's
    try {
      await jwtVerify(params.get('client_assertion'), keyset, { issuer: ciIssuer, audience: FEDERATED_AUDIENCE, subject: FEDERATED_SUBJECT });
    } catch (err) {
      return { error: `testbed: federated assertion rejected (${err.code ?? err.message})` };
    }
    if (params.get('client_id') !== 'ci-federated') return { error: 'testbed: no federated credential for this client' };
    counts.federated_assertions += 1;
    params.delete('client_assertion');
    params.delete('client_assertion_type');
    params.set('client_secret', FEDERATED_CLIENT_SECRET);
    return { body: params.toString() };
  }

  // Returns true when it answered.
  async function handleAdmin(req, res, url, { sendJson, readRaw }) {
    const route = `${req.method} ${url.pathname.replace(/\/+$/, '')}`;
    switch (route) {
      case 'GET /__testbed/ci/jwks':
        sendJson(res, 200, publicJwks);
        return true;
      case 'POST /__testbed/ci/token': {
        const body = JSON.parse((await readRaw(req)) || '{}');
        sendJson(res, 200, { token: await mint(body) });
        return true;
      }
      case 'GET /__testbed/ci/actions': {
        await readRaw(req);
        counts.actions += 1;
        if ((req.headers.authorization ?? '') !== `bearer ${ACTIONS_REQUEST_TOKEN}`
          && (req.headers.authorization ?? '') !== `Bearer ${ACTIONS_REQUEST_TOKEN}`) {
          sendJson(res, 401, { message: 'testbed: bad ACTIONS_ID_TOKEN_REQUEST_TOKEN' });
          return true;
        }
        const aud = url.searchParams.get('audience') ?? 'https://github.com/kubecred';
        sendJson(res, 200, { count: 1, value: await mint({ aud }) });
        return true;
      }
      case 'GET /__testbed/ci/client-key':
        sendJson(res, 200, { pem: clientPem });
        return true;
      default:
        return false;
    }
  }

  return { issuer: ciIssuer, keyset, counts, clients, mint, registerTokenExchange, federatedAssertion, handleAdmin };
}
