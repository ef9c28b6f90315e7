/** Admission webhook: gitRepo and ref rules (findings 6 and 7 of issue 12). */
import { parseHostPolicy } from "../../lib/git/hosts.ts";
import { type Case, cluster, fleet, runCase, three, withRepo } from "../webhook_kit.ts";

const repoCases: Case[] = [
  ...([
    ["not-a-url", "is not a repository URL: use https://host/path.git, ssh://git@host/path.git or git@host:path.git"],
    [
      "file:///srv/git/flake.git",
      "local paths and file:// are not allowed: NICO and NIO fetch from a Git server; use https://host/path",
    ],
    [
      "/srv/git/flake.git",
      "local paths and file:// are not allowed: NICO and NIO fetch from a Git server; use https://host/path",
    ],
    [
      "ext::sh -c touch% /tmp/pwned",
      "must be one line without spaces or control characters; write the repository URL alone",
    ],
    ["ext::sh", "git remote-helper syntax (such as ext::) runs commands and is not allowed; use https://host/path"],
    [
      "--upload-pack=touch /tmp/x",
      "must be one line without spaces or control characters; write the repository URL alone",
    ],
    ["--upload-pack=id", "must not start with '-' (git would read it as an option); use https://host/path"],
    [
      "https://git.example.test/a.git\nhttps://evil.example/b.git",
      "must be one line without spaces or control characters; write the repository URL alone",
    ],
    ["ftp://git.example.test/a.git", "scheme ftp: is not allowed: use https://, ssh:// or git://"],
    [
      "https://127.0.0.1:8443/a.git",
      "host 127.0.0.1 is a loopback address, which NICO refuses unless the operator lists it in --git-allowed-hosts; use a repository on an allowed host",
    ],
    [
      "https://0x7f.1/a.git",
      "host 127.0.0.1 is a loopback address, which NICO refuses unless the operator lists it in --git-allowed-hosts; use a repository on an allowed host",
    ],
    [
      "git@10.1.2.3:org/flake.git",
      "host 10.1.2.3 is a private address, which NICO refuses unless the operator lists it in --git-allowed-hosts; use a repository on an allowed host",
    ],
    [
      "https://169.254.169.254/latest/meta-data",
      "host 169.254.169.254 is a link-local address, which NICO refuses unless the operator lists it in --git-allowed-hosts; use a repository on an allowed host",
    ],
    [
      "https://[::ffff:192.168.1.1]/a.git",
      "host [::ffff:c0a8:101] is a private address, which NICO refuses unless the operator lists it in --git-allowed-hosts; use a repository on an allowed host",
    ],
    [
      "http://git.example.test/a.git",
      "plain http:// is allowed only for hosts listed by name in --git-allowed-hosts: use https://",
    ],
  ] as const).map(([gitRepo, why]): Case => ({
    name: `gitRepo ${JSON.stringify(gitRepo)} is refused with the reason (finding 6)`,
    objects: { machines: fleet(3) },
    object: cluster({ ...three, gitRepo }),
    errors: [`spec.gitRepo: ${why}`],
  })),
  {
    name: "credentials in gitRepo are refused, pointing to credentialsRef, and never repeated (finding 7)",
    objects: { machines: fleet(3) },
    object: cluster({ ...three, gitRepo: "https://deploy:hunter2-secret@git.example.test/a.git" }),
    errors: [
      "spec.gitRepo: must not carry credentials (user:password@ or a token before @): put them in a Secret and name it in spec.credentialsRef",
    ],
  },
  {
    name: "a token as the https user name is refused too; ssh's git@ is fine",
    objects: { machines: fleet(3) },
    object: cluster({ ...three, gitRepo: "https://ghp_token@git.example.test/a.git" }),
    errors: [/^spec\.gitRepo: must not carry credentials/],
  },
  ...[
    "git@git.example.test:org/flake.git",
    "ssh://git@git.example.test/org/flake.git",
    "git://git.example.test/flake.git",
  ]
    .map((gitRepo): Case => ({
      name: `gitRepo ${gitRepo} passes`,
      objects: { machines: fleet(3) },
      object: cluster({ ...three, gitRepo }),
      errors: [],
    })),
  {
    name: "a loopback or private host passes when --git-allowed-hosts lists it (plain http too)",
    objects: { machines: fleet(3) },
    object: cluster({ ...three, gitRepo: "http://127.0.0.1:3000/a.git" }),
    options: { gitAllowedHosts: parseHostPolicy("*,127.0.0.1") },
    errors: [],
  },
  {
    name: "a host outside a restrictive --git-allowed-hosts is refused",
    objects: { machines: fleet(3) },
    object: cluster({ ...three, gitRepo: "https://github.com/org/flake.git" }),
    options: { gitAllowedHosts: parseHostPolicy("git.example.test,*.corp.example") },
    errors: [
      "spec.gitRepo: host github.com is not in the operator's --git-allowed-hosts (git.example.test, *.corp.example); use a repository on an allowed host",
    ],
  },
  ...(["main; rm -rf /", "$(id)", "-b", "a..b", "feature/x.lock", "`id`"] as const).map((ref): Case => ({
    name: `ref ${JSON.stringify(ref)} is refused (finding 6)`,
    objects: { machines: fleet(3) },
    object: cluster(withRepo({ ...three, ref })),
    errors: [/^spec\.ref: /],
  })),
  ...(["main", "release/v1.2", "v1.0.0+build", "HEAD", "0123456789abcdef0123456789abcdef01234567"] as const).map(
    (ref): Case => ({
      name: `ref ${ref} passes`,
      objects: { machines: fleet(3) },
      object: cluster(withRepo({ ...three, ref })),
      errors: [],
    }),
  ),
];

Deno.test("validation of gitRepo and ref: scanners, helpers, options, credentials and unsafe refs are refused", async (t) => {
  for (const c of repoCases) await t.step(c.name, () => runCase(c));
});
