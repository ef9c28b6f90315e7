/**
 * `NIOIncomplete`: NIO's API is served only in part (a half-installed NIO), while NICO can still judge clusters.
 * Without Machines or NixosConfigurations it cannot, and `Ready`/`Stalled` say `NIONotInstalled` instead
 * (summary.ts).
 *
 * @module
 */
import { reason, type TypeSpec } from "./types.ts";

export const NIO_INCOMPLETE = {
  role: "detail",
  polarity: "negative",
  watched: false,
  about: "NIO's API group lacks resources NICO relies on (absent when NIO is whole)",
  reasons: {
    ResourcesMissing: reason(
      "True",
      "attention",
      "later",
      "the API server serves some of NIO's resources but not all NICO relies on (NIO v1 without `nixcronjobs` or " +
        "`nixjobs`: a half-installed NIO); the message names each, what it is for, and how to install it. NICO goes " +
        "on with what is served (nodes whose runs NIO cannot make will time out)",
      "install NIO's CRDs (NIO v1: its release's `install.yaml` with `kubectl apply --server-side`), then restart NICO",
    ),
  },
} as const satisfies TypeSpec;
