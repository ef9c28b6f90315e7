/**
 * Talking to a `nico run` process's webhook directly, as the API server would, without registering webhook
 * configurations (which would reach every test on a shared control plane): serving certificate files as
 * cert-manager mounts them (`--webhook-cert-mode=cert-manager --webhook-cert-dir`), and one AdmissionReview.
 *
 * @module
 */
import { createCa, issueCert } from "../lib/pki.ts";
import { VALIDATE_PATH } from "../webhooks/paths.ts";

/** Serving certificate files for 127.0.0.1, as cert-manager would mount them; answers the folder and the CA. */
export async function servingCertificate(): Promise<{ dir: string; caPem: string }> {
  const dir = await Deno.makeTempDir({ prefix: "nico-webhook-certs-" });
  const ca = await createCa({ commonName: "webhook-test-ca" });
  const leaf = await issueCert(ca, { commonName: "127.0.0.1", ipAddresses: ["127.0.0.1"], usage: "server", days: 1 });
  await Deno.writeTextFile(`${dir}/tls.crt`, leaf.certPem);
  await Deno.writeTextFile(`${dir}/tls.key`, leaf.keyPem);
  return { dir, caPem: ca.certPem };
}

/**
 * One admission review of the creation of a cluster naming Machine `nowhere` in `ns`, posted to the webhook on
 * `port`; answers whether it was allowed (it is not: no such Machine).
 */
export async function review(port: number, caPem: string, ns: string): Promise<boolean> {
  const client = Deno.createHttpClient({ caCerts: [caPem] });
  try {
    const res = await fetch(`https://127.0.0.1:${port}${VALIDATE_PATH}`, {
      client,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        apiVersion: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        request: {
          uid: "u-1",
          kind: { group: "nico.homystack.com", version: "v1alpha1", kind: "KubernetesCluster" },
          operation: "CREATE",
          namespace: ns,
          userInfo: { username: "admin" },
          object: {
            apiVersion: "nico.homystack.com/v1alpha1",
            kind: "KubernetesCluster",
            metadata: { name: "probe", namespace: ns },
            spec: { controlPlane: { machines: ["nowhere"] } },
          },
        },
      }),
    });
    const body = await res.json() as { response?: { allowed: boolean } };
    if (!body.response) throw new Error(`the webhook answered ${res.status} without a review`);
    return body.response.allowed;
  } finally {
    client.close();
  }
}
