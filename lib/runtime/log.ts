/**
 * The logger the runtime writes through, and a default that prints one JSON
 * object per line to stderr.
 *
 * Callers pass identifiers (keys, names, error messages) as fields, never
 * whole objects; as a safety net the JSON logger drops `data` and
 * `stringData` from anything that looks like a Secret.
 *
 * @module
 */

/** Structured fields attached to one log line. */
export type LogFields = Record<string, unknown>;

/** What the runtime needs from a logger. */
export interface Logger {
  info(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  debug(msg: string, fields?: LogFields): void;
}

/** Log levels, from the most to the least verbose. */
export type LogLevel = "debug" | "info" | "error";

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, error: 2 };

/** Options of {@link jsonLogger}. */
export interface JsonLoggerOptions {
  /** Lines below this level are dropped (default `"info"`). */
  level?: LogLevel;
  /** Fields added to every line, such as `{ controller: "machines" }`. */
  fields?: LogFields;
  /** Where lines go (default: synchronously to stderr). */
  write?: (line: string) => void;
  /** Clock for the `ts` field (default `Date.now`). */
  now?: () => number;
}

const encoder = new TextEncoder();

function writeStderr(line: string): void {
  const bytes = encoder.encode(line + "\n");
  let written = 0;
  while (written < bytes.length) written += Deno.stderr.writeSync(bytes.subarray(written));
}

/** A JSON replacer: errors become their message, Secret payloads are dropped. */
function replacer(this: unknown, key: string, value: unknown): unknown {
  if ((key === "data" || key === "stringData") && isSecretLike(this)) return "[redacted]";
  if (value instanceof Error) {
    return { name: value.name, message: value.message };
  }
  if (typeof value === "bigint") return value.toString();
  return value;
}

function isSecretLike(holder: unknown): boolean {
  return typeof holder === "object" && holder !== null && (holder as { kind?: unknown }).kind === "Secret";
}

/** One line: when, how bad, what, and the fields. */
interface LogRecord {
  ts: string;
  level: LogLevel;
  msg: string;
  fields: LogFields;
}

function lineLogger(opts: JsonLoggerOptions, format: (r: LogRecord) => string): Logger {
  const min = RANK[opts.level ?? "info"];
  const write = opts.write ?? writeStderr;
  const now = opts.now ?? Date.now;
  const base = opts.fields ?? {};
  const emit = (level: LogLevel) => (msg: string, fields: LogFields = {}) => {
    if (RANK[level] < min) return;
    const ts = new Date(now()).toISOString();
    let line: string;
    try {
      line = format({ ts, level, msg, fields: { ...base, ...fields } });
    } catch (err) {
      line = format({ ts, level, msg, fields: { logError: String(err) } });
    }
    write(line);
  };
  return { debug: emit("debug"), info: emit("info"), error: emit("error") };
}

/** A logger that writes `{"ts","level","msg",...fields}` lines. */
export function jsonLogger(opts: JsonLoggerOptions = {}): Logger {
  return lineLogger(opts, (r) => JSON.stringify({ ts: r.ts, level: r.level, msg: r.msg, ...r.fields }, replacer));
}

/**
 * A logger for people: `time LEVEL message key=value …`; strings as they
 * are, anything else as JSON (with the same redaction as {@link jsonLogger}).
 */
export function textLogger(opts: JsonLoggerOptions = {}): Logger {
  return lineLogger(opts, (r) => {
    const kv = Object.entries(r.fields).map(([k, v]) =>
      `${k}=${typeof v === "string" ? v : JSON.stringify(v, replacer)}`
    );
    return `${r.ts} ${r.level.toUpperCase().padEnd(5)} ${r.msg}${kv.length ? " " + kv.join(" ") : ""}`;
  });
}

/** A logger that adds `fields` to every line of `inner`. */
export function withFields(inner: Logger, fields: LogFields): Logger {
  return {
    debug: (msg, f) => inner.debug(msg, { ...fields, ...f }),
    info: (msg, f) => inner.info(msg, { ...fields, ...f }),
    error: (msg, f) => inner.error(msg, { ...fields, ...f }),
  };
}

/** A logger that drops everything (for tests). */
export const silentLogger: Logger = { debug() {}, info() {}, error() {} };

/** The message of anything thrown, never its payload. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
