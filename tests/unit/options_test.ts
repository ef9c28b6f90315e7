import assert from "node:assert/strict";
import { defaultWorkers, listenOn, OptionsError, parseRunOptions, usage } from "../../cli/options.ts";
import { webhookNames } from "../../cli/webhook.ts";
import { CLUSTER_DEFAULTS, clusterSettings } from "../../controllers/cluster/settings.ts";

Deno.test("the default --workers is the CPU count, from 2 to 16", () => {
  const cases: [number, number][] = [[0, 2], [1, 2], [2, 2], [3, 3], [8, 8], [16, 16], [17, 16], [96, 16], [NaN, 2]];
  for (const [cpus, want] of cases) assert.equal(defaultWorkers(cpus), want, `${cpus} CPUs`);
  assert.equal(defaultWorkers(), Math.min(16, Math.max(2, navigator.hardwareConcurrency)));
});

Deno.test("nico run options: flags over environment, defaults, clear refusals", async (t) => {
  await t.step("defaults", () => {
    const o = parseRunOptions([], {});
    assert.equal(o.workers, defaultWorkers());
    assert.equal(o.leaderElect, true);
    assert.equal(o.nodeTimeout, 30 * 60_000);
    assert.equal(o.webhookCertMode, "self-signed");
  });
  await t.step("environment, then flags win", () => {
    const o = parseRunOptions(["--workers", "8", "--leader-elect=false"], {
      NICO_WORKERS: "3",
      NICO_DEFAULT_GIT_REPO: "https://g/x.git",
    });
    assert.equal(o.workers, 8);
    assert.equal(o.leaderElect, false);
    assert.equal(o.defaultGitRepo, "https://g/x.git");
  });
  await t.step("bare boolean flag", () => assert.equal(parseRunOptions(["--install-crds"], {}).installCrds, true));
  await t.step("durations", () => assert.equal(parseRunOptions(["--node-timeout=90s"], {}).nodeTimeout, 90_000));
  await t.step("the restore URL's lifetime", () => {
    assert.equal(parseRunOptions(["--restore-url-lifetime=2h"], {}).restoreUrlLifetime, 7_200_000);
    assert.equal(parseRunOptions([], {}).restoreUrlLifetime, 15 * 60_000);
  });
  const bad: [string[], Record<string, string>, RegExp][] = [
    [["--workers", "0"], {}, /--workers \(NICO_WORKERS\): .*got "0"/],
    [[], { NICO_WORKERS: "many" }, /--workers \(NICO_WORKERS\)/],
    [["--node-timeout", "soon"], {}, /--node-timeout .*expected a duration such as 90s/],
    [["--metrics-addr", "8080"], {}, /--metrics-addr .*expected host:port/],
    [["--webhook-cert-mode", "magic"], {}, /--webhook-cert-mode/],
    [
      ["--git-allowed-hosts=git.example.com,not a host"],
      {},
      /--git-allowed-hosts \(NICO_GIT_ALLOWED_HOSTS\): expected/,
    ],
    [["--git-allowed-hosts=10.0.0.0/33"], {}, /--git-allowed-hosts/],
    [["--restore-url-lifetime=30s"], {}, /--restore-url-lifetime .*from 1m to 168h/],
    [[], { NICO_RESTORE_URL_LIFETIME: "200h" }, /--restore-url-lifetime \(NICO_RESTORE_URL_LIFETIME\)/],
    [["--frobnicate"], {}, /unknown flag --frobnicate/],
    [["--workers"], {}, /flag --workers needs a value/],
    [["stray"], {}, /unexpected argument 'stray'/],
  ];
  for (const [args, env, re] of bad) {
    await t.step(`refuses ${JSON.stringify(args)} ${JSON.stringify(env)}`, () => {
      assert.throws(() => parseRunOptions(args, env), (e: unknown) => e instanceof OptionsError && re.test(e.message));
    });
  }
  await t.step("usage shows each flag's default, as written on the command line", () => {
    const u = usage();
    assert.match(u, /--node-timeout\s+.*\[default 30m; NICO_NODE_TIMEOUT\]/);
    assert.match(u, /--ref-poll-interval\s+.*\[default 5m; NICO_REF_POLL_INTERVAL\]/);
    assert.match(u, new RegExp(`--workers\\s+.*\\[default ${defaultWorkers()}; NICO_WORKERS\\]`));
    assert.match(u, /--log-format\s+.*One of json, text\. \[default json; NICO_LOG_FORMAT\]/);
    assert.match(u, /--webhook-addr\s+.*\[default :9443; NICO_WEBHOOK_ADDR\]/);
    assert.match(u, /--kubeconfig\s+.*\[KUBECONFIG\]/, "no default shown where there is none");
  });
  await t.step("usage lists every flag with its variable", () => {
    assert.match(usage(), /--default-git-repo\s+.*\[NICO_DEFAULT_GIT_REPO\]/);
    assert.match(usage(), /--kubeconfig\s+.*\[KUBECONFIG\]/);
    assert.match(usage(), /--git-allowed-hosts\s+.*loopback.*NICO_GIT_ALLOWED_HOSTS\]/);
    assert.match(usage(), /--webhook-client-ca\s+.*NICO_WEBHOOK_CLIENT_CA\]/);
  });
  await t.step("git hosts: default * , a list from the environment", () => {
    assert.equal(parseRunOptions([], {}).gitAllowedHosts, "*");
    assert.equal(parseRunOptions([], { NICO_GIT_ALLOWED_HOSTS: "127.0.0.1" }).gitAllowedHosts, "127.0.0.1");
  });
});

Deno.test("nico run's flags become the cluster settings whole; each knob has one default", async (t) => {
  await t.step("a flag sets the setting of its name; the rest of the flags are not settings", () => {
    const o = parseRunOptions(
      ["--node-timeout=90s", "--etcd-interval=3s", "--default-git-repo=https://127.0.0.1/f.git", "--workers=5"],
      { NICO_ARGOCD_NAMESPACE: "argocd" },
    );
    const s = clusterSettings(o);
    assert.deepEqual(
      [s.nodeTimeout, s.etcdInterval, s.defaultGitRepo, s.workers, s.argocdNamespace],
      [90_000, 3_000, "https://127.0.0.1/f.git", 5, "argocd"],
    );
    assert.equal("logLevel" in s, false, "a flag that is no setting stays out");
    assert.equal(s.refPollInterval, CLUSTER_DEFAULTS.refPollInterval);
  });
  await t.step("the flags' defaults are the settings' defaults", () => {
    const flags = parseRunOptions([], {}) as Record<string, unknown>;
    const shared = Object.keys(CLUSTER_DEFAULTS).filter((k) => k in flags);
    assert.deepEqual(
      shared.sort(),
      [
        "argocdLabelKeys",
        "etcdInterval",
        "etcdTimeout",
        "nodeTimeout",
        "refPollInterval",
        "resolveRefs",
        "restoreUrlLifetime",
        "workers",
      ],
    );
    for (const k of shared) assert.equal(flags[k], (CLUSTER_DEFAULTS as Record<string, unknown>)[k], k);
  });
  await t.step("undefined is the default, for a test's options", () => {
    assert.deepEqual(clusterSettings({ nodeTimeout: undefined, statusDelay: 5 }), {
      ...CLUSTER_DEFAULTS,
      statusDelay: 5,
    });
  });
});

Deno.test("listen addresses and webhook certificate names", () => {
  assert.deepEqual(listenOn(":8080"), { hostname: "0.0.0.0", port: 8080 });
  assert.deepEqual(listenOn("127.0.0.1:9443"), { hostname: "127.0.0.1", port: 9443 });
  assert.deepEqual(listenOn("[::1]:9443"), { hostname: "::1", port: 9443 });
  const base = { webhookService: "nico-webhook", leaseNamespace: "nico-system" };
  assert.deepEqual(webhookNames({ ...base, webhookUrl: "https://127.0.0.1:9443" }), {
    dnsNames: [],
    ipAddresses: ["127.0.0.1"],
  });
  assert.deepEqual(webhookNames({ ...base, webhookUrl: "https://dev.example:9443" }), {
    dnsNames: ["dev.example"],
    ipAddresses: [],
  });
  assert.ok(webhookNames({ ...base, webhookUrl: undefined }).dnsNames.includes("nico-webhook.nico-system.svc"));
});
