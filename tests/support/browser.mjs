#!/usr/bin/env node
// A scripted user with a real browser, for kubecred's --browser-command:
//
//   node browser.mjs [--login NAME] [--action approve|deny|ignore|copy] [--user-code CODE] [--detach] <URL>
//
// Drives Debian's /usr/bin/chromium (headless, fresh profile) through playwright-core against the
// test bed's OpenID Provider (testbed.mjs):
//   approve (default)  sign in on the devInteractions form (any password), pass consent and the
//                      device-flow pages, then wait for the loopback callback (or the device-flow
//                      success page) to load, and exit 0; on kubecred's own device-flow page (a
//                      login without a terminal: the code, its QR code and the link), read the
//                      code there, follow the link and enter it, as a person would;
//   deny               cancel the sign-in (auth code: redirect with error=access_denied; device
//                      flow: abort, so polling gets access_denied);
//   ignore             open the page and leave (a user who walks away);
//   copy               sign in like approve, but stop the browser before it goes to the loopback
//                      redirect URI (the request never leaves it) and print that callback URL (code,
//                      state, iss) as one line on stdout, then exit 0: a user who copies the address
//                      bar of a browser on another machine, to paste it into kubecred.
// Environment (flags win): TESTBED_BROWSER_LOGIN, TESTBED_BROWSER_ACTION, TESTBED_BROWSER_USER_CODE,
// TESTBED_BROWSER_DETACH=1, TESTBED_BROWSER_TIMEOUT (seconds, default 60); TESTBED_BROWSER_LOG=<file> gets one "launch <url>" line per run;
// TESTBED_BROWSER_TRUST_SPKI=<base64 SHA-256 of a public key> makes chromium trust certificates of that key
// only (an https login callback's), instead of ignoring every certificate error;
// TESTBED_BROWSER_NOISY=1 prints "BROWSER-STDOUT-NOISE" on stdout (otherwise stdout stays empty, but for
// the URL that --action copy prints).
// Only loopback requests leave the browser; everything else is aborted.

import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const CHROMIUM = process.env.TESTBED_CHROMIUM ?? '/usr/bin/chromium';
const TIMEOUT_MS = (Number(process.env.TESTBED_BROWSER_TIMEOUT) || 60) * 1000; // seconds in env
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking',
  '--disable-component-update', '--no-first-run', '--disable-sync'];

const started = Date.now();
const fail = (msg, code = 1) => {
  process.stderr.write(`browser.mjs: ${msg}\n`);
  process.exit(code);
};
const note = (msg) => {
  if (process.env.TESTBED_BROWSER_VERBOSE === '1') {
    process.stderr.write(`browser.mjs: [${((Date.now() - started) / 1000).toFixed(2)}s] ${msg}\n`);
  }
};

// ---------------------------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------------------------
function parseArgs(argv) {
  const opts = {
    login: process.env.TESTBED_BROWSER_LOGIN || 'alice',
    action: process.env.TESTBED_BROWSER_ACTION || 'approve',
    userCode: process.env.TESTBED_BROWSER_USER_CODE || null,
    detach: process.env.TESTBED_BROWSER_DETACH === '1',
    url: null,
  };
  const rest = [...argv];
  while (rest.length) {
    const arg = rest.shift();
    const value = () => {
      if (!rest.length) fail(`${arg} needs a value`, 2);
      return rest.shift();
    };
    switch (arg) {
      case '--login': opts.login = value(); break;
      case '--action': opts.action = value(); break;
      case '--user-code': opts.userCode = value(); break;
      case '--detach': opts.detach = true; break;
      default:
        if (arg.startsWith('--')) fail(`unknown flag ${arg}`, 2);
        opts.url = arg; // the URL is the last argument; a later positional wins
    }
  }
  if (!opts.url) fail('usage: browser.mjs [--login NAME] [--action approve|deny|ignore|copy] [--user-code CODE] [--detach] <URL>', 2);
  if (!['approve', 'deny', 'ignore', 'copy'].includes(opts.action)) fail(`unknown action "${opts.action}"`, 2);
  if (opts.action === 'copy' && opts.detach) fail('--action copy prints the callback URL on stdout: it cannot --detach', 2);
  try {
    new URL(opts.url); // eslint-disable-line no-new
  } catch {
    fail(`not a URL: ${opts.url}`, 2);
  }
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const isDetachedChild = process.env.TESTBED_BROWSER_DETACHED_CHILD === '1';

if (!isDetachedChild) {
  // Tests count browser launches by counting these lines (one per run, even when detached).
  if (process.env.TESTBED_BROWSER_LOG) fs.appendFileSync(process.env.TESTBED_BROWSER_LOG, `launch ${opts.url}\n`);
  // Tests prove kubecred never lets the browser command's stdout reach its own stdout.
  if (process.env.TESTBED_BROWSER_NOISY === '1') process.stdout.write('BROWSER-STDOUT-NOISE\n');
}

// --detach behaves like xdg-open: return at once and let the browser work in the background.
// The child holds none of our stdio (a caller reading our stderr to EOF must not wait on it);
// its errors go to "$TESTBED_BROWSER_LOG.stderr" when a log is set.
if (opts.detach && !isDetachedChild) {
  const errFile = process.env.TESTBED_BROWSER_LOG ? fs.openSync(`${process.env.TESTBED_BROWSER_LOG}.stderr`, 'a') : 'ignore';
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    detached: true,
    stdio: ['ignore', 'ignore', errFile],
    env: { ...process.env, TESTBED_BROWSER_DETACHED_CHILD: '1', TESTBED_BROWSER_NOISY: '' },
  });
  child.unref();
  process.exit(0);
}

// ---------------------------------------------------------------------------------------------
// Browser
// ---------------------------------------------------------------------------------------------
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);
const isLoopback = (u) => LOOPBACK_HOSTS.has(u.hostname) || u.hostname.endsWith('.localhost');
const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

if (!fs.existsSync(CHROMIUM)) fail(`${CHROMIUM} not found (apt-get install -y chromium)`);
const { chromium } = await import('playwright-core');

const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kubecred-browser-'));
let context = null;

let finishing = false;
async function finish(code, msg, after = null) {
  if (finishing) return new Promise(() => {}); // the first outcome stands (copy ends from a CDP event)
  finishing = true;
  if (after) await after;
  if (msg) process.stderr.write(`browser.mjs: ${msg}\n`);
  if (context) await Promise.race([context.close().catch(() => {}), sleep(5000)]);
  fs.rmSync(profileDir, { recursive: true, force: true });
  note(`exit ${code}`);
  process.exit(code);
}

async function describe(page) {
  let title = '';
  let text = '';
  try {
    title = await page.title();
    text = await page.evaluate(() => document.body?.innerText ?? '');
  } catch { /* navigating */ }
  return `url=${page.url()} title=${JSON.stringify(title)} text=${JSON.stringify(text.replace(/\s+/g, ' ').slice(0, 300))}`;
}

setTimeout(async () => {
  let where = '';
  try {
    const [page] = context?.pages() ?? [];
    if (page) where = ` (${await describe(page)})`;
  } catch { /* ignore */ }
  finish(1, `timed out after ${TIMEOUT_MS / 1000}s${where}`);
}, TIMEOUT_MS);

// Runs inside the page: which screen is this? Each document answers once (window flag), so an
// action is never repeated on the same page; a new document after navigation answers again.
function classify() {
  if (document.readyState === 'loading') return null;
  if (window.__testbedSeen) return { seen: true };
  window.__testbedSeen = true;
  const q = (s) => document.querySelector(s);
  const base = { origin: window.location.origin, text: (document.body?.innerText ?? '').replace(/\s+/g, ' ').slice(0, 300) };
  const marker = document.body?.dataset?.testbedPage; // set by testbed.mjs' device/error pages
  if (marker) return { ...base, kind: marker };
  // kubecred's device-flow page (src/presence/device_page.rs), served on loopback.
  const code = document.getElementById('user-code');
  if (code && document.getElementById('verification-uri')) {
    return { ...base, kind: 'kubecred-device-page', userCode: code.textContent.trim() };
  }
  if (q('form input[name="prompt"][value="login"]')) return { ...base, kind: 'login' };
  if (q('form input[name="prompt"][value="consent"]')) return { ...base, kind: 'consent' };
  if (document.getElementById('op.deviceConfirmForm')) return { ...base, kind: 'device-confirm' };
  if (document.getElementById('op.deviceInputForm')) return { ...base, kind: 'device-input' };
  return { ...base, kind: 'other' };
}

// --action copy. Playwright's routes never see the hops of a redirect, and the callback is the
// last hop of the provider's redirects; so a CDP session of our own pauses every document request
// (redirect hops included) and fails the callback instead of sending it, prints its URL and ends
// the run. The callback: a loopback origin other than the IdP's (the start URL's) with `code` or `error`.
let copied = false;
async function stopAtTheCallback(page) {
  const idp = new URL(opts.url).origin;
  const cdp = await context.newCDPSession(page);
  cdp.on('Fetch.requestPaused', async ({ requestId, request }) => {
    let u = null;
    try {
      u = new URL(request.url);
    } catch { /* not a URL */ }
    const callback = u && isLoopback(u) && u.origin !== idp
      && (u.searchParams.has('code') || u.searchParams.has('error'));
    if (!callback) {
      await cdp.send('Fetch.continueRequest', { requestId }).catch(() => {});
      return;
    }
    const failed = cdp.send('Fetch.failRequest', { requestId, errorReason: 'BlockedByClient' }).catch(() => {});
    if (copied) return;
    copied = true;
    note(`copied ${request.url}`);
    fs.writeSync(1, `${request.url}\n`);
    // finish() claims the outcome at once (the page loop must not take the failed navigation for
    // an error), and closes the browser only once the request is failed: a paused request would
    // be let go when our CDP session detaches.
    finish(0, null, failed);
  });
  await cdp.send('Fetch.enable', { patterns: [{ urlPattern: '*', resourceType: 'Document', requestStage: 'Request' }] });
}

async function run() {
  // The test bed's IdP (idpTls) uses a throwaway CA chromium cannot know: its errors are ignored,
  // unless the run names the one key to trust (chromium honours that with a --user-data-dir,
  // which a persistent context has).
  const trustSpki = process.env.TESTBED_BROWSER_TRUST_SPKI;
  context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: trustSpki ? [...CHROMIUM_ARGS, `--ignore-certificate-errors-spki-list=${trustSpki}`] : CHROMIUM_ARGS,
    ignoreHTTPSErrors: !trustSpki,
    // The whole run's budget (the watchdog above ends it at TIMEOUT_MS anyway): on a loaded
    // 2-core machine (CI's rebuild of the release beside the tests) chromium once took over
    // 30 s to start, and a fixed 30 s failed a login that had time left.
    timeout: TIMEOUT_MS,
  });
  note('browser up');
  // Nothing but loopback leaves this browser.
  await context.route('**/*', (route) => {
    const u = new URL(route.request().url());
    if (isLoopback(u) || u.protocol === 'data:' || u.protocol === 'blob:') return route.continue();
    note(`blocked ${u.href}`);
    return route.abort('blockedbyclient');
  });
  const page = context.pages()[0] ?? await context.newPage();
  if (opts.action === 'copy') await stopAtTheCallback(page);

  // A failed navigation leaves page.url() at chrome-error://chromewebdata/, so remember the last
  // main-frame navigation request and how it ended.
  let lastNav = null;
  const mainNav = (r) => r.isNavigationRequest() && r.frame() === page.mainFrame();
  page.on('request', (r) => { if (mainNav(r)) lastNav = { url: r.url(), failure: null }; });
  page.on('requestfailed', (r) => {
    if (mainNav(r) && lastNav?.url === r.url()) lastNav.failure = r.failure()?.errorText ?? 'failed';
  });

  try {
    await page.goto(opts.url, { waitUntil: 'domcontentloaded', timeout: 30_000 });
  } catch (err) {
    // A redirect straight to a loopback callback nobody answers still counts as "reached"; the
    // loop below decides.
    note(`goto: ${err.message.split('\n')[0]}`);
  }

  if (opts.action === 'ignore') {
    await page.waitForLoadState('load', { timeout: 10_000 }).catch(() => {});
    return finish(0);
  }

  let idpOrigin = null;
  let acted = false;
  for (;;) {
    const errorPage = page.url().startsWith('chrome-error:');
    const current = new URL(errorPage && lastNav ? lastNav.url : page.url());
    const callbackLike = current.searchParams.has('code') || current.searchParams.has('error');
    if (isLoopback(current) && current.origin !== idpOrigin && (acted || callbackLike)) {
      note(`callback ${current.href}`);
      if (opts.action === 'copy') return finish(1, `--action copy: the browser went to ${current.href} instead of stopping there`);
      if (errorPage || lastNav?.failure) {
        return finish(1, `the loopback callback ${current.href} did not answer: ${lastNav?.failure ?? 'error page'}`);
      }
      try {
        await page.waitForLoadState('load', { timeout: 15_000 });
      } catch (err) {
        return finish(1, `the loopback callback page did not load: ${err.message.split('\n')[0]}`);
      }
      return finish(0);
    }
    if (errorPage) {
      return finish(1, `navigation to ${lastNav?.url ?? '?'} failed: ${lastNav?.failure ?? 'error page'}`);
    }

    const info = await page.evaluate(classify).catch(() => null); // null while navigating
    if (info && !info.seen) {
      note(`page ${info.kind} ${page.url()}`);
      const deny = opts.action === 'deny';
      switch (info.kind) {
        case 'login':
          idpOrigin = info.origin;
          acted = true;
          if (deny) {
            await page.click('a[href*="/abort"]');
          } else {
            await page.fill('input[name="login"]', opts.login);
            await page.fill('input[name="password"]', 'testbed-password');
            await page.click('button[type="submit"]');
          }
          break;
        case 'consent':
          idpOrigin = info.origin;
          acted = true;
          await page.click(deny ? 'a[href*="/abort"]' : 'button[type="submit"]');
          break;
        case 'device-confirm':
          idpOrigin = info.origin;
          acted = true;
          await page.click(deny ? 'button[name="abort"]' : 'button[form="op.deviceConfirmForm"]:not([name="abort"])');
          break;
        case 'kubecred-device-page':
          // Not `acted`: the provider's pages are still to come (this page is on loopback too).
          if (deny) return finish(1, '--action deny on kubecred\'s device page: nothing to deny there');
          opts.userCode = opts.userCode ?? info.userCode;
          note(`kubecred's page shows the code ${info.userCode}`);
          await page.click('#verification-uri');
          break;
        case 'device-input':
          idpOrigin = info.origin;
          if (!opts.userCode) return finish(1, `the page asks for a user code; pass --user-code (${await describe(page)})`);
          if (acted) return finish(1, `user code page shown again (${await describe(page)})`);
          acted = true;
          await page.fill('input[name="user_code"]', opts.userCode);
          await page.click('button[form="op.deviceInputForm"]');
          break;
        case 'device-success':
          await page.waitForLoadState('load', { timeout: 15_000 }).catch(() => {});
          if (deny) return finish(1, 'device flow succeeded although --action deny');
          if (opts.action === 'copy') return finish(1, '--action copy: the device flow has no callback URL to copy');
          return finish(0);
        case 'device-aborted':
          if (deny) return finish(0);
          return finish(1, `device flow aborted (${await describe(page)})`);
        case 'device-input-bad-code':
        case 'device-error':
        case 'error':
          return finish(1, `the OpenID Provider shows an error: ${info.text}`);
        default:
          break; // e.g. the auto-submitting form_post page: it moves on by itself
      }
    }
    await sleep(50);
  }
}

run().catch((err) => finish(1, `failed: ${err.stack ?? err}`));
