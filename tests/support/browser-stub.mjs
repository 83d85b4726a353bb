// A stand-in for the person's browser where a test needs no real one. kubecred runs it as its
// --browser-command, the authorization URL last:
//
//   node browser-stub.mjs answer ERROR URL   the provider refused: sends the browser back to
//                                            kubecred's callback with ?error=ERROR and the
//                                            request's state (and iss, RFC 9207)
//   node browser-stub.mjs open FILE URL      fetches the authorization URL as a browser would and
//                                            writes the page to FILE: what the person sees (an
//                                            unregistered redirect URI: the provider's own error
//                                            page, and no way back to kubecred)
//
// It exits at once either way, as a browser launcher does.

const [mode, arg, url] = process.argv.slice(2);
const request = new URL(url);

if (mode === 'answer') {
  const back = new URL(request.searchParams.get('redirect_uri'));
  back.searchParams.set('error', arg);
  back.searchParams.set('error_description', `browser-stub: ${arg}`);
  back.searchParams.set('state', request.searchParams.get('state'));
  // The issuer is the authorization endpoint's origin on the test providers.
  back.searchParams.set('iss', request.origin);
  await fetch(back);
} else if (mode === 'open') {
  const { writeFile } = await import('node:fs/promises');
  const page = await fetch(request);
  await writeFile(arg, await page.text());
} else {
  console.error(`browser-stub: unknown mode ${mode}`);
  process.exit(2);
}
