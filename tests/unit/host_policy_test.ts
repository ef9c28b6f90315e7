/**
 * `--git-allowed-hosts` (lib/git/hosts.ts): special addresses in every spelling under `*`, and what a list lets
 * through, by table. Pure: it was under tests/integration/ though it needs no control plane, and an audit's
 * mutation (`*.corp.example` matching any name that ends in `corp.example`) lived there unseen.
 */
import assert from "node:assert/strict";
import { hostAllowance, hostProblem, parseHostPolicy } from "../../lib/git/hosts.ts";

const ANY = parseHostPolicy("");

Deno.test("the default policy is *: public hosts pass, special addresses are refused in every spelling", async (t) => {
  assert.deepEqual(ANY.entries, ["*"]);
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
    await t.step(`${host}: refused`, () => {
      assert.equal(hostAllowance(host, ANY), undefined);
      assert.match(hostProblem(host, ANY) ?? "", why);
    });
  }
  for (const host of ["github.com", "git.example.test", "8.8.8.8", "172.32.0.1", "[2001:db8::1]"]) {
    await t.step(`${host}: public`, () => assert.equal(hostAllowance(host, ANY), "public"));
  }
});

const LIST = parseHostPolicy("git.example.com, *.corp.example,10.20.0.0/16,127.0.0.1");

/** Host, and how LIST allows it (undefined: refused). */
const listed: [string, "listed" | undefined, string][] = [
  ["git.example.com", "listed", "a listed name"],
  ["GIT.example.com.", "listed", "in any case, with the root dot"],
  ["a.corp.example", "listed", "*.domain: a subdomain"],
  ["a.b.corp.example", "listed", "*.domain: a deeper subdomain"],
  ["corp.example", undefined, "*.domain matches subdomains only, not the domain itself"],
  ["evilcorp.example", undefined, "*.domain matches at a label boundary: not a name that merely ends the same"],
  ["a.evilcorp.example", undefined, "…nor a subdomain of such a name"],
  ["corp.example.evil.test", undefined, "…nor a name that only contains it"],
  ["xcorp.example", undefined, "…nor one letter more"],
  ["10.20.3.4", "listed", "inside a listed range"],
  ["10.21.0.1", undefined, "outside it"],
  ["127.1", "listed", "a listed address, in another spelling"],
  ["127.0.0.2", undefined, "the listed address only, not its neighbours"],
  ["github.com", undefined, "without * only the listed hosts"],
];

Deno.test("a list lets through what it names and nothing that merely looks like it", async (t) => {
  for (const [host, want, why] of listed) {
    await t.step(`${host}: ${why}`, () => assert.equal(hostAllowance(host, LIST), want));
  }
  assert.match(hostProblem("evilcorp.example", LIST) ?? "", /not in the operator's --git-allowed-hosts/);
});

Deno.test("a bad entry is refused with its name", () => {
  assert.throws(() => parseHostPolicy("git.example.com,bad host"), /bad host is not a host name/);
  assert.throws(() => parseHostPolicy("10.0.0.0/40"), /not a CIDR range/);
});
