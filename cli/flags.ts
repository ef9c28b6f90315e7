/**
 * Flags shared by the `nico` user commands (`get`, `describe`, `plan`,
 * `kubeconfig`): `--kubeconfig`, `--context`, `-n/--namespace`, and each
 * command's own, parsed by one small parser.
 *
 * @module
 */
import { KubeClient, type KubeConfig, loadKubeConfig } from "../lib/kube/client.ts";
import denoJson from "../deno.json" with { type: "json" };

/** A flag a command accepts: a value flag, or a boolean one. */
export interface FlagSpec {
  name: string;
  short?: string;
  boolean?: boolean;
  /** Allowed values of a value flag. */
  choices?: string[];
  help: string;
}

export const COMMON_FLAGS: FlagSpec[] = [
  { name: "kubeconfig", help: "kubeconfig file; default $KUBECONFIG or ~/.kube/config" },
  { name: "context", help: "kubeconfig context; default the current context" },
  { name: "namespace", short: "n", help: "namespace; default the context's namespace or default" },
  { name: "kube-qps", help: "API server requests a second at most (client-side token bucket); default 50" },
  { name: "kube-burst", help: "requests sent at once before --kube-qps applies; default 100" },
  { name: "help", short: "h", boolean: true, help: "show this help" },
];

export interface ParsedArgs {
  flags: Record<string, string | boolean>;
  positional: string[];
}

/** A mistake in the command line; the message names the flag and the fix. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** Parses `--flag value`, `--flag=value`, `-n value`, `-nvalue` and boolean `--flag`/`-A`. */
export function parseArgs(command: string, args: string[], specs: FlagSpec[]): ParsedArgs {
  const all = [...COMMON_FLAGS, ...specs];
  const flags: Record<string, string | boolean> = {};
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      positional.push(...args.slice(i + 1));
      break;
    }
    let spec: FlagSpec | undefined;
    let inline: string | undefined;
    if (arg.startsWith("--")) {
      const [name, value] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
      spec = all.find((s) => s.name === name);
      if (!spec) throw new UsageError(`unknown flag --${name}; see nico ${command} --help`);
      inline = value;
    } else if (arg.startsWith("-") && arg.length > 1) {
      spec = all.find((s) => s.short === arg[1]);
      if (!spec) throw new UsageError(`unknown flag ${arg.slice(0, 2)}; see nico ${command} --help`);
      if (arg.length > 2) inline = arg.slice(2).replace(/^=/, "");
    } else {
      positional.push(arg);
      continue;
    }
    if (spec.boolean) {
      if (inline !== undefined && !["true", "false"].includes(inline)) {
        throw new UsageError(`flag --${spec.name} is true or false; got ${JSON.stringify(inline)}`);
      }
      flags[spec.name] = inline !== "false";
      continue;
    }
    const value = inline ?? args[++i];
    if (value === undefined) throw new UsageError(`flag --${spec.name} needs a value`);
    if (spec.choices && !spec.choices.includes(value)) {
      throw new UsageError(`flag --${spec.name}: expected ${spec.choices.join(" or ")}; got ${JSON.stringify(value)}`);
    }
    flags[spec.name] = value;
  }
  return { flags, positional };
}

/** The help text of one command. */
export function commandHelp(usage: string, about: string, specs: FlagSpec[]): string {
  const line = (s: FlagSpec) => {
    const names = `${s.short ? `-${s.short}, ` : "    "}--${s.name}${s.boolean ? "" : " <value>"}`;
    return `  ${names.padEnd(30)} ${s.help}`;
  };
  return [`Usage: ${usage}`, "", about, "", "Flags:", ...specs.map(line), ...COMMON_FLAGS.map(line)].join("\n");
}

/** The kubeconfig the flags name, switched to `--context` when given. */
export function kubeConfigFor(flags: ParsedArgs["flags"]): KubeConfig {
  try {
    return loadKubeConfig({
      path: typeof flags.kubeconfig === "string" ? flags.kubeconfig : undefined,
      context: typeof flags.context === "string" ? flags.context : undefined,
    });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}

/** A client and the namespace the command works in. */
export interface Target {
  client: KubeClient;
  namespace: string;
}

/** Connects as the flags say; the namespace is `-n`, else the context's, else `default`. */
export function targetFor(flags: ParsedArgs["flags"]): Target {
  const kc = kubeConfigFor(flags);
  const number = (name: string, dflt: number) => {
    const v = flags[name] === undefined ? dflt : Number(flags[name]);
    if (!(v > 0)) throw new UsageError(`--${name} must be a positive number`);
    return v;
  };
  const rateLimit = { qps: number("kube-qps", 50), burst: Math.max(1, Math.floor(number("kube-burst", 100))) };
  const client = new KubeClient(kc, { userAgent: `nico-cli/${denoJson.version}`, fieldManager: "nico-cli", rateLimit });
  const fromContext = kc.namespace;
  const namespace = typeof flags.namespace === "string" ? flags.namespace : fromContext || "default";
  return { client, namespace };
}
