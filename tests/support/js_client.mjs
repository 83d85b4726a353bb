// The official JavaScript Kubernetes client (npm @kubernetes/client-node 1.x; 2.x needs Node 22)
// as a third real exec-plugin caller.
//
//     node tests/support/js_client.mjs KUBECONFIG
//
// Loads KUBECONFIG with KubeConfig.loadFromFile; the client runs the user's exec plugin itself
// (no KUBERNETES_EXEC_INFO, stdin a pipe, the stanza's env merged into its own) and keeps the
// ExecCredential in memory until its expirationTimestamp. Calls the API server twice, GET /version
// and POST /apis/authentication.k8s.io/v1/selfsubjectreviews, and prints one JSON line
// {"gitVersion": ..., "username": ...} on stdout, exit 0. On failure: the client's error (for a
// failing plugin, the plugin's stderr) on stderr, exit 1. Bounded: 60 s in all.

import { AuthenticationV1Api, KubeConfig, VersionApi } from '@kubernetes/client-node';

const DEADLINE_MS = 60_000;

async function main(argv) {
  if (argv.length !== 1) {
    console.error('usage: js_client.mjs KUBECONFIG');
    return 2;
  }
  const kc = new KubeConfig();
  kc.loadFromFile(argv[0]);
  const version = await kc.makeApiClient(VersionApi).getCode();
  const review = await kc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  process.stdout.write(
    JSON.stringify({ gitVersion: version.gitVersion, username: review.status?.userInfo?.username }) + '\n',
  );
  return 0;
}

const timer = setTimeout(() => {
  console.error(`js_client.mjs: no answer within ${DEADLINE_MS / 1000}s`);
  process.exit(1);
}, DEADLINE_MS);
timer.unref();

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  console.error(`js_client.mjs: ${err?.stack ?? err}`);
  process.exitCode = 1;
}
