/**
 * Helpers of the client's transport: combined abort signals, API errors from
 * answers, and the newline-delimited JSON of a watch.
 *
 * @module
 */
import { ApiError } from "./errors.ts";

/** A signal that aborts when either does; `undefined` when neither is given. */
export function either(a: AbortSignal | undefined, b: AbortSignal | undefined): AbortSignal | undefined {
  if (!a) return b;
  if (!b) return a;
  return AbortSignal.any([a, b]);
}

/** The {@link ApiError} for a non-2xx answer, with the `Status` reason when the body is one. */
export function toApiError(status: number, text: string, method: string, path: string): ApiError {
  try {
    const s = JSON.parse(text) as {
      reason?: string;
      message?: string;
      details?: { causes?: { reason?: string; message?: string; field?: string }[] };
    };
    return new ApiError(status, s.reason ?? "Unknown", s.message ?? text, method, path, s.details?.causes ?? []);
  } catch {
    return new ApiError(status, "Unknown", text.slice(0, 500), method, path);
  }
}

/**
 * The events of a watch answer, one JSON object a line, until the server ends
 * the stream or `signal` aborts; an `ERROR` event is thrown as an {@link ApiError}.
 */
export async function* watchEvents<E>(
  response: Response,
  signal: AbortSignal | undefined,
  path: string,
): AsyncGenerator<E> {
  if (!response.body) return;
  const reader = response.body.getReader();
  const onAbort = () => void reader.cancel().catch(() => {});
  signal?.addEventListener("abort", onAbort, { once: true });
  const decoder = new TextDecoder();
  let buffered = "";
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      buffered += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (!line) continue;
        const event = JSON.parse(line) as { type: string; object: unknown };
        if (event.type === "ERROR") {
          const s = event.object as { code?: number; reason?: string; message?: string };
          throw new ApiError(s.code ?? 500, s.reason ?? "Unknown", s.message ?? "watch error", "WATCH", path);
        }
        yield event as E;
      }
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    await reader.cancel().catch(() => {});
  }
}
