/**
 * Git credentials from the Secret a KubernetesCluster names in
 * `credentialsRef`, for resolving `ref` over HTTPS.
 *
 * @module
 */

import { decodeBase64, encodeBase64 } from "../encoding.ts";

/** HTTP basic credentials for a Git server. */
export interface Creds {
  username: string;
  password: string;
}

/** Username sent with a `token` when the Secret names none (GitHub's convention; GitLab and Gitea accept any). */
export const TOKEN_USERNAME = "x-access-token";

/** Secret keys that hold an SSH key, which revision pinning cannot use yet. */
export const SSH_KEYS = ["ssh-privatekey", "identity"] as const;

/** The error for SSH credentials; shared with {@link resolveRef} so both say the same. */
export const SSH_UNSUPPORTED =
  "SSH credentials are not supported for revision pinning yet: use an https:// gitRepo with a token or username/password, or set ref to a 40-hex commit";

function decode(data: Record<string, string>, key: string): string | { error: string } | undefined {
  const value = data[key];
  if (value === undefined) return undefined;
  try {
    return decodeBase64(value);
  } catch {
    return { error: `key ${key} is not valid base64-encoded UTF-8` };
  }
}

/**
 * The credentials in a Secret's `data` (base64 values, as the API returns
 * them): `token` (with `username`, or {@link TOKEN_USERNAME}), else
 * `username` + `password`. A Secret with only `ssh-privatekey`/`identity`, or
 * none of these keys, gives an `error` that names the keys, never a value.
 */
export function credentialsFromSecret(data: Record<string, string>): Creds | { error: string } {
  const values: Record<string, string | undefined> = {};
  for (const key of ["token", "username", "password"]) {
    const value = decode(data, key);
    if (typeof value === "object") return value;
    values[key] = value;
  }
  const { token, password } = values;
  const user = values.username?.trim();
  if (user !== undefined && user.includes(":")) return { error: "key username must not contain ':'" };
  if (token !== undefined) {
    const t = token.trim();
    if (!t) return { error: "key token is empty" };
    return { username: user || TOKEN_USERNAME, password: t };
  }
  if (password !== undefined) {
    if (!user) return { error: "key password needs a non-empty username key next to it" };
    const p = password.replace(/[\r\n]+$/, "");
    if (!p) return { error: "key password is empty" };
    return { username: user, password: p };
  }
  if (SSH_KEYS.some((k) => k in data)) return { error: SSH_UNSUPPORTED };
  if (user !== undefined) return { error: "key username needs a password or token key next to it" };
  return { error: "no Git credentials found: expected key token, or keys username and password" };
}

/** The value of an `Authorization` header for `creds`. */
export function basicAuthorization(creds: Creds): string {
  return `Basic ${encodeBase64(`${creds.username}:${creds.password}`)}`;
}
