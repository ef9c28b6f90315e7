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

/**
 * The {@link ApiError} for a non-2xx answer, with the `Status` reason when the body is one. With `quote: false`
 * (an untrusted server) a body that is not a `Status` is not quoted, and a `Status` message is cut to 300 characters.
 */
export function toApiError(status: number, text: string, method: string, path: string, quote = true): ApiError {
  let s: {
    kind?: unknown;
    reason?: unknown;
    message?: unknown;
    details?: { causes?: { reason?: string; message?: string; field?: string }[] };
  } | undefined;
  try {
    s = JSON.parse(text);
  } catch {
    s = undefined;
  }
  if (s && typeof s === "object" && (quote || s.kind === "Status")) {
    const reason = typeof s.reason === "string" && (quote || /^[A-Za-z]{1,40}$/.test(s.reason)) ? s.reason : "Unknown";
    const message = typeof s.message === "string" ? (quote ? s.message : s.message.slice(0, 300)) : quote ? text : "";
    return new ApiError(
      status,
      reason,
      message,
      method,
      path,
      Array.isArray(s.details?.causes) ? s.details.causes : [],
    );
  }
  return new ApiError(
    status,
    "Unknown",
    quote ? text.slice(0, 500) : "an answer that is not a Status (not shown)",
    method,
    path,
  );
}

/**
 * The error of an answer that is no success, or `undefined`: a 3xx is one (no client follows a redirect, which
 * could lead anywhere the server names), and so is a 4xx or 5xx ({@link toApiError}).
 */
export async function failedAnswer(
  response: Response,
  method: string,
  path: string,
  quote: boolean,
): Promise<ApiError | undefined> {
  if (response.status >= 300 && response.status < 400) {
    await response.body?.cancel();
    return new ApiError(response.status, "Redirect", "a redirect, which NICO never follows", method, path);
  }
  if (response.status >= 400) return toApiError(response.status, await response.text(), method, path, quote);
  return undefined;
}

/** The JSON of an answer; one that is not JSON is an error that quotes it only when `quote`. */
export function parseAnswer<T>(text: string, method: string, path: string, quote: boolean): T {
  if (!text) return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    if (quote) throw err;
    throw new ApiError(200, "NotJSON", "the answer is not JSON (not shown)", method, path);
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
        let event: { type: string; object: unknown };
        try {
          event = JSON.parse(line);
        } catch {
          throw new ApiError(200, "NotJSON", "a watch event that is not JSON (not shown)", "WATCH", path);
        }
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
