/**
 * NICO's controller runtime: informers (list + watch + cache), a work queue
 * with client-go's guarantees, and controllers that reconcile keys.
 *
 * @example
 * ```ts
 * const machines = new Informer<Machine>(client, MACHINES);
 * const controller = new Controller({ name: "machines", workers: 2 }, async (key, signal) => {
 *   const { namespace, name } = splitKey(key);
 *   const machine = machines.get(namespace, name);
 *   if (!machine) return;
 *   // ...
 *   return { requeueAfter: 60_000 };
 * }).watch(machines);
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
