/** Facts the schema modules of `crds/` share. @module */

/** RFC 1123 subdomain: the shape of every object name. */
export const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
