/**
 * Argo CD's cluster Secret as Argo CD documents it (operator manual, "Declarative Setup", section Clusters:
 * argoproj/argo-cd docs/operator-manual/declarative-setup.md), as a checker for the Secrets NICO writes. Argo CD's
 * own Go types are not built here (its module needs the replace directives of its own go.mod); this is the
 * documented shape, field by field, with the types the page gives.
 *
 * @module
 */

/** The label every cluster Secret must carry, and its value. */
export const SECRET_TYPE = ["argocd.argoproj.io/secret-type", "cluster"] as const;

/** The keys of the Secret's data the page lists; `name`, `server` and `config` are what NICO must give. */
const DATA_KEYS = new Set(["name", "server", "namespaces", "clusterResources", "project", "config"]);
const REQUIRED = ["name", "server", "config"];

type FieldType = "string" | "boolean" | "object" | "string[]" | "Record<string,string>";

/** The fields of `config` and their types, as the page's data structure gives them. */
const CONFIG_FIELDS: Record<string, FieldType> = {
  username: "string",
  password: "string",
  bearerToken: "string",
  awsAuthConfig: "object",
  execProviderConfig: "object",
  proxyUrl: "string",
  tlsClientConfig: "object",
  disableCompression: "boolean",
};
const AWS_FIELDS: Record<string, FieldType> = { clusterName: "string", roleARN: "string", profile: "string" };
const EXEC_FIELDS: Record<string, FieldType> = {
  command: "string",
  args: "string[]",
  env: "Record<string,string>",
  apiVersion: "string",
  installHint: "string",
};
/** `caData`, `certData` and `keyData` are "Base64 encoded PEM-encoded bytes". */
const TLS_FIELDS: Record<string, FieldType> = {
  caData: "string",
  certData: "string",
  insecure: "boolean",
  keyData: "string",
  serverName: "string",
};

function typeOk(v: unknown, t: FieldType): boolean {
  switch (t) {
    case "string":
      return typeof v === "string";
    case "boolean":
      return typeof v === "boolean";
    case "object":
      return typeof v === "object" && v !== null && !Array.isArray(v);
    case "string[]":
      return Array.isArray(v) && v.every((x) => typeof x === "string");
    case "Record<string,string>":
      return typeof v === "object" && v !== null && Object.values(v).every((x) => typeof x === "string");
  }
}

function fields(where: string, obj: Record<string, unknown>, known: Record<string, FieldType>): string[] {
  return Object.entries(obj).flatMap(([k, v]) =>
    !(k in known) ? [`${where}.${k} is no field Argo CD documents`] : typeOk(v, known[k]!) ? [] : [
      `${where}.${k} should be ${known[k]}`,
    ]
  );
}

function pem(where: string, b64: unknown, kind: RegExp): string[] {
  if (typeof b64 !== "string") return [];
  try {
    return kind.test(atob(b64)) ? [] : [`${where} is not base64 of a PEM ${kind.source}`];
  } catch {
    return [`${where} is not base64`];
  }
}

/**
 * What in `secret` does not follow Argo CD's documented cluster Secret (an empty list: nothing). `data` is read as
 * the API server stores it (base64).
 */
export function argoCdSecretProblems(
  secret: { type?: string; metadata: { labels?: Record<string, string> }; data?: Record<string, string> },
): string[] {
  const out: string[] = [];
  if (secret.metadata.labels?.[SECRET_TYPE[0]] !== SECRET_TYPE[1]) out.push(`label ${SECRET_TYPE.join(": ")} missing`);
  const data = Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, atob(v)]));
  for (const k of Object.keys(data)) if (!DATA_KEYS.has(k)) out.push(`data.${k} is no field Argo CD documents`);
  for (const k of REQUIRED) if (!data[k]) out.push(`data.${k} is missing`);
  if (data.server && !/^https:\/\/[^/\s]+(\/.*)?$/.test(data.server)) out.push("data.server is no https URL");
  if (data.clusterResources && !["true", "false"].includes(data.clusterResources)) {
    out.push('data.clusterResources is "true" or "false"');
  }
  if (!data.config) return out;
  let config: Record<string, unknown>;
  try {
    config = JSON.parse(data.config);
  } catch {
    return [...out, "data.config is not JSON"];
  }
  out.push(...fields("config", config, CONFIG_FIELDS));
  const sub = (k: string) => (typeOk(config[k], "object") ? config[k] as Record<string, unknown> : undefined);
  if (sub("awsAuthConfig")) out.push(...fields("config.awsAuthConfig", sub("awsAuthConfig")!, AWS_FIELDS));
  if (sub("execProviderConfig")) {
    out.push(...fields("config.execProviderConfig", sub("execProviderConfig")!, EXEC_FIELDS));
  }
  const tls = sub("tlsClientConfig");
  if (tls) {
    out.push(...fields("config.tlsClientConfig", tls, TLS_FIELDS));
    out.push(...pem("config.tlsClientConfig.caData", tls.caData, /-----BEGIN CERTIFICATE-----/));
    out.push(...pem("config.tlsClientConfig.certData", tls.certData, /-----BEGIN CERTIFICATE-----/));
    out.push(...pem("config.tlsClientConfig.keyData", tls.keyData, /-----BEGIN (EC |RSA )?PRIVATE KEY-----/));
  }
  return out;
}

/** A kubeconfig built from an Argo CD cluster Secret, the way Argo CD connects with it (server, CA, client cert). */
export function kubeconfigOfArgoCdSecret(data: Record<string, string>): string {
  const server = atob(data.server!);
  const tls = (JSON.parse(atob(data.config!)) as { tlsClientConfig: Record<string, string> }).tlsClientConfig;
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "argo", cluster: { server, "certificate-authority-data": tls.caData } }],
    users: [{ name: "argo", user: { "client-certificate-data": tls.certData, "client-key-data": tls.keyData } }],
    contexts: [{ name: "argo", context: { cluster: "argo", user: "argo" } }],
    "current-context": "argo",
  });
}
