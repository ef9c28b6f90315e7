/**
 * Child processes that cannot outlive the process that started them.
 *
 * Each program runs under a small shell guard that holds our end of a pipe
 * on its stdin: when this process exits for any reason (a failed test, a
 * crash, SIGKILL) the pipe closes and the guard stops the program.
 *
 * @module
 */

const GUARD = `
exec 3<&0
# If the guard itself is killed (say, with its whole process group), the kernel kills the program too.
launch=()
command -v setpriv >/dev/null && launch=(setpriv --pdeathsig KILL --)
"\${launch[@]}" "$@" </dev/null 3<&- &
child=$!
[ -n "\${GUARD_PIDFILE:-}" ] && echo "$child" >"$GUARD_PIDFILE"
(
  read -r _ <&3 || true
  kill -TERM $child 2>/dev/null || exit 0
  for _ in $(seq 1 100); do kill -0 $child 2>/dev/null || exit 0; sleep 0.1; done
  kill -KILL $child 2>/dev/null
) &
watcher=$!
exec 3<&-
wait $child
code=$?
kill $watcher 2>/dev/null
exit $code
`;

export interface Guarded {
  name: string;
  pid: number;
  /** Resolves when the program (and its guard) have exited. */
  exited: Promise<Deno.CommandStatus>;
  /** Asks the program to stop (SIGTERM, then SIGKILL after 10 s) and waits. */
  stop(): Promise<void>;
  /** The last lines the program printed, for error messages. */
  tail(lines?: number): Promise<string>;
  /** The program's own PID (not the guard's), once it has started. */
  programPid(): Promise<number>;
  /** Sends a signal to the program itself, as a kubelet or an OOM killer would. */
  kill(signal: Deno.Signal): Promise<void>;
  /** Kills the program (SIGKILL) at once and synchronously, for an `unload` handler. */
  killNow(): void;
}

/** Starts `cmd args…` with stdout and stderr appended to `logPath`. */
export function startGuarded(
  name: string,
  cmd: string,
  args: string[],
  logPath: string,
  env?: Record<string, string>,
): Guarded {
  const script = `exec >>"${logPath.replaceAll('"', '\\"')}" 2>&1\n${GUARD}`;
  const pidFile = `${logPath}.pid`;
  const child = new Deno.Command("bash", {
    args: ["-c", script, name, cmd, ...args],
    stdin: "piped",
    stdout: "null",
    stderr: "null",
    env: { ...(env ?? {}), GUARD_PIDFILE: pidFile },
  }).spawn();
  const programPid = async () => {
    for (let i = 0; i < 100; i++) {
      const text = await Deno.readTextFile(pidFile).catch(() => "");
      if (text.trim()) return Number(text.trim());
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${name}: no PID file at ${pidFile}`);
  };
  const writer = child.stdin.getWriter();
  let stopping: Promise<void> | undefined;
  return {
    name,
    pid: child.pid,
    exited: child.status,
    stop() {
      stopping ??= (async () => {
        await writer.close().catch(() => {});
        await child.status;
      })();
      return stopping;
    },
    programPid,
    async kill(signal) {
      Deno.kill(await programPid(), signal);
    },
    killNow() {
      let pid = child.pid; // the guard: killing it takes the program with it where setpriv is there
      try {
        pid = Number(Deno.readTextFileSync(pidFile).trim()) || pid;
      } catch { /* not started yet */ }
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* already gone */ }
    },
    async tail(lines = 30) {
      const text = await Deno.readTextFile(logPath).catch(() => "");
      return text.split("\n").slice(-lines).join("\n");
    },
  };
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** Waits until something accepts TCP connections on 127.0.0.1:`port`. */
export async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}
