/** Names of the objects NICO creates for a cluster. */

/** FNV-1a, hex: a short stable suffix for names that would be too long. */
function shortHash(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, "0");
}

/** `<cluster>-<machine>`, shortened with a hash when over the 253-character limit. */
export function configName(cluster: string, machine: string): string {
  const name = `${cluster}-${machine}`;
  if (name.length <= 253) return name;
  return `${name.slice(0, 253 - 9).replace(/[-.]+$/, "")}-${shortHash(name)}`;
}

export const joinTokenSecret = (cluster: string) => `${cluster}-join-token`;
export const caSecret = (cluster: string) => `${cluster}-ca`;
/** The CA key alone: older NIO hands over a Secret's first key, so this Secret has only `tls.key`. */
export const caKeySecret = (cluster: string) => `${cluster}-ca-key`;
export const kubeconfigSecret = (cluster: string) => `${cluster}-kubeconfig`;

/** Every Secret a cluster owns. */
export function ownedSecretNames(cluster: string): string[] {
  return [joinTokenSecret(cluster), caSecret(cluster), caKeySecret(cluster), kubeconfigSecret(cluster)];
}
