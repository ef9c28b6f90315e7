/**
 * What reaches git, against real Git servers on loopback (tests/git_kit.ts):
 * a host --git-allowed-hosts does not allow is refused before git runs, git's
 * errors say what failed and never what the remote said (security finding 6),
 * and the host policy's special addresses, lists, wildcards and ranges.
 */
import assert from "node:assert/strict";
import { resolveRef } from "../../lib/git/resolve.ts";
import { hostAllowance, hostProblem, parseHostPolicy } from "../../lib/git/hosts.ts";
import { LOCAL, rejection, startHungServer } from "../git_kit.ts";

Deno.test("finding 6: resolveRef refuses a host --git-allowed-hosts does not allow, before running git", async () => {
  const hung = startHungServer();
  try {
    for (const url of [`git://127.0.0.1:${hung.port}/repo.git`, `http://127.1:${hung.port}/repo.git`]) {
      const err = await rejection(resolveRef(url, "main", undefined, { timeoutMs: 2_000 }));
      assert.equal(err.reason, "Refused");
      assert.match(
        err.message,
        /host 127\.0\.0\.1 is a loopback address, which NICO refuses unless the operator lists it/,
      );
    }
    // A commit ref needs no network, but the repository still has to be allowed: NIO would fetch it.
    const sha = "0123456789abcdef0123456789abcdef01234567";
    await rejection(resolveRef(`git://127.0.0.1:${hung.port}/repo.git`, sha, undefined));
    const elsewhere = await rejection(
      resolveRef(`git://127.0.0.1:${hung.port}/repo.git`, "main", undefined, {
        allowedHosts: parseHostPolicy("git.example.test"),
      }),
    );
    assert.match(elsewhere.message, /not in the operator's --git-allowed-hosts \(git\.example\.test\)/);
    assert.equal(hung.accepted(), 0, "git connected to a refused host");
  } finally {
    await hung.stop();
  }
});

Deno.test("finding 6: git errors say what failed, never what the remote said", async (t) => {
  await t.step("nothing listens: could not reach the repository", async () => {
    const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (probe.addr as Deno.NetAddr).port;
    probe.close();
    const err = await rejection(resolveRef(`http://127.0.0.1:${port}/repo.git`, "main", undefined, LOCAL));
    assert.equal(err.reason, "Unreachable");
    assert.equal(err.message, `git ls-remote http://127.0.0.1:${port}/repo.git failed: could not reach the repository`);
  });
  await t.step("a server that is not Git: its text stays out of the message", async () => {
    const marker = "REMOTE-CONTROLLED-TEXT internal-db.corp:5432 open";
    const ctl = new AbortController();
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, signal: ctl.signal, onListen() {} },
      () => new Response(`${marker}\n`, { status: 200, headers: { "content-type": "text/plain" } }),
    );
    try {
      const url = `http://127.0.0.1:${server.addr.port}/repo.git`;
      const err = await rejection(resolveRef(url, "main", undefined, LOCAL));
      assert.equal(err.reason, "Failed");
      assert.ok(!err.message.includes("REMOTE-CONTROLLED"), err.message);
      assert.equal(err.message, `git ls-remote ${url} failed: the server did not answer like a Git repository`);
    } finally {
      ctl.abort();
      await server.finished;
    }
  });
  await t.step("a redirect is not followed", async () => {
    const ctl = new AbortController();
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, signal: ctl.signal, onListen() {} },
      () => new Response(null, { status: 302, headers: { location: "http://169.254.169.254/latest/" } }),
    );
    try {
      const err = await rejection(resolveRef(`http://127.0.0.1:${server.addr.port}/r.git`, "main", undefined, LOCAL));
      assert.match(err.message, /redirect, which NICO does not follow/);
    } finally {
      ctl.abort();
      await server.finished;
    }
  });
});

Deno.test("--git-allowed-hosts: special addresses in every spelling, lists, wildcards and ranges", () => {
  const any = parseHostPolicy("");
  assert.deepEqual(any.entries, ["*"]);
  const special: [string, RegExp][] = [
    ["localhost", /loopback/],
    ["127.0.0.1", /loopback/],
    ["127.1", /loopback/],
    ["0x7f.0.0.1", /loopback/],
    ["2130706433", /loopback/],
    ["[::1]", /loopback/],
    ["[::ffff:127.0.0.1]", /loopback/],
    ["0.0.0.0", /unspecified/],
    ["10.1.2.3", /private/],
    ["172.31.255.1", /private/],
    ["192.168.0.10", /private/],
    ["100.64.0.1", /carrier-grade NAT/],
    ["169.254.169.254", /link-local/],
    ["[fe80::1]", /link-local/],
    ["[fd12::1]", /private/],
  ];
  for (const [host, why] of special) {
    assert.ok(!hostAllowance(host, any), host);
    assert.match(hostProblem(host, any) ?? "", why, host);
  }
  for (const host of ["github.com", "git.example.test", "8.8.8.8", "172.32.0.1", "[2001:db8::1]"]) {
    assert.equal(hostAllowance(host, any), "public", host);
  }
  const list = parseHostPolicy("git.example.com, *.corp.example,10.20.0.0/16,127.0.0.1");
  assert.equal(hostAllowance("git.example.com", list), "listed");
  assert.equal(hostAllowance("GIT.example.com.", list), "listed");
  assert.equal(hostAllowance("a.b.corp.example", list), "listed");
  assert.equal(hostAllowance("corp.example", list), undefined, "*.domain matches subdomains only");
  assert.equal(hostAllowance("10.20.3.4", list), "listed");
  assert.equal(hostAllowance("10.21.0.1", list), undefined);
  assert.equal(hostAllowance("127.1", list), "listed");
  assert.equal(hostAllowance("github.com", list), undefined, "without * only the listed hosts");
  assert.throws(() => parseHostPolicy("git.example.com,bad host"), /bad host is not a host name/);
  assert.throws(() => parseHostPolicy("10.0.0.0/40"), /not a CIDR range/);
});
