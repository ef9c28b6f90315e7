/**
 * A soft bound on the polled rounds in flight across every workload cluster (a polled round opens a connection, asks,
 * and closes it): at most `limit` at once, so that a fleet starting together, or a slow API server, never holds a
 * thousand TLS connections at the same time. A round that waited `maxWaitMs` for its turn goes anyway: clusters whose
 * API hangs until its deadline delay the others by at most that, never stall them.
 *
 * @module
 */

/** Something that runs a round when its turn comes. */
export interface Rounds {
  run<T>(fn: () => Promise<T>): Promise<T>;
}

export class RoundGate implements Rounds {
  #running = 0;
  readonly #queue: (() => void)[] = [];

  constructor(readonly limit: number, readonly maxWaitMs: number) {}

  /** Rounds running now (a round let through after waiting counts too, so this may exceed the limit). */
  get running(): number {
    return this.#running;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#running >= this.limit) await this.#turn();
    this.#running++;
    try {
      return await fn();
    } finally {
      this.#running--;
      this.#queue.shift()?.();
    }
  }

  #turn(): Promise<void> {
    return new Promise((resolve) => {
      const go = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        const i = this.#queue.indexOf(go);
        if (i >= 0) this.#queue.splice(i, 1);
        resolve();
      }, this.maxWaitMs);
      this.#queue.push(go);
    });
  }
}
