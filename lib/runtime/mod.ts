/**
 * NICO's controller runtime: informers (list + watch + cache), a work queue
 * with client-go's guarantees, and controllers that reconcile keys.
 *
 * @example
 * ```ts
 * import { Controller, Informer, splitKey } from "./mod.ts";
 * import type { KubeClient, KubeObject } from "../kube/client.ts";
 * import { SECRETS } from "../kube/resources.ts";
 * declare const client: KubeClient;
 * declare const signal: AbortSignal;
 * const secrets = new Informer<KubeObject>(client, SECRETS);
 * const controller = new Controller({ name: "secrets", workers: 2 }, async (key, _signal, log) => {
 *   const { namespace, name } = splitKey(key);
 *   if (!secrets.get(namespace, name)) return;
 *   log.info("seen"); // the runtime's logger carries the key and reconcile ID
 *   return { requeueAfter: 60_000 };
 * }).watch(secrets);
 * await controller.run(signal);
 * ```
 * @module
 */
export {
  Controller,
  type ControllerHooks,
  type ControllerOptions,
  type KeyMapper,
  type ReconcileOutcome,
  type Reconciler,
  type ReconcileResult,
  TerminalError,
} from "./controller.ts";
export { type EventHandler, Informer, type InformerOptions, type InformerStats } from "./informer.ts";
export { keyOf, objectKey, splitKey } from "./keys.ts";
export {
  errorMessage,
  jsonLogger,
  type JsonLoggerOptions,
  type LogFields,
  type Logger,
  type LogLevel,
  silentLogger,
  withFields,
} from "./log.ts";
export { type QueueHooks, type QueueStats, WorkQueue, type WorkQueueOptions } from "./queue.ts";
export {
  defaultRateLimiter,
  ExponentialBackoff,
  type ExponentialBackoffOptions,
  MaxOf,
  type RateLimiter,
  TokenBucket,
  type TokenBucketOptions,
} from "./ratelimit.ts";
export { sleep, untilAborted } from "./sleep.ts";
export { type CacheEvent, diffSnapshot, type EventType } from "./snapshot.ts";
