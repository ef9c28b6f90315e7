/**
 * The pure half of etcd backups (core/backup/): object keys and retention, the store from the spec and its
 * Secrets, the errors named to the user, the job each pass starts, the state after a job, the condition, and
 * which member a snapshot is taken from. Tables.
 */
import assert from "node:assert/strict";
import { backupKey, expiredBackups, isBackupKey } from "../../core/backup/keys.ts";
import { resolveStore, storeProblem } from "../../core/backup/store.ts";
import { afterJob, type BackupPassInput, type BackupState, nextBackupJob } from "../../core/backup/state.ts";
import { backupCondition, backupsStatus } from "../../core/backup/status.ts";
import { backupMember } from "../../core/backup/member.ts";
import { encodeBase64 } from "../../lib/encoding.ts";
import { backupsTable } from "../../cli/backup.ts";

const STORE = {
  endpoint: "https://127.0.0.1:9000/",
  bucket: "etcd",
  region: "us-east-1",
  credentialsSecret: { name: "s3" },
};
const b64 = (o: Record<string, string>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, encodeBase64(v)]));

Deno.test("keys: named by cluster, time and reason; retention counts and deletes only those", () => {
  const t = new Date("2026-12-04T13:05:09.120Z");
  const key = backupKey("infra/prod/", "prod", t, "schedule");
  assert.equal(key, "infra/prod/prod-20261204T130509Z-schedule.db");
  assert.ok(isBackupKey("infra/prod/", "prod", key));
  for (const other of ["infra/prod/notes.db", "infra/prod/prod-x-schedule.db", "infra/prod/sub/" + key.slice(11)]) {
    assert.ok(!isBackupKey("infra/prod/", "prod", other), other);
  }
  assert.ok(!isBackupKey("infra/prod/", "prod-2", key), "another cluster sharing the prefix");
  const rec = (iso: string) => ({ key: backupKey("p/", "c", new Date(iso), "manual"), time: iso });
  const records = [rec("2026-01-03T00:00:00Z"), rec("2026-01-01T00:00:00Z"), rec("2026-01-02T00:00:00Z")];
  const foreign = { key: "p/someone-else.db", time: "2020-01-01T00:00:00Z" };
  assert.deepEqual(expiredBackups([...records, foreign], 2, "p/", "c"), [records[1]!.key]);
  assert.deepEqual(expiredBackups(records, 5, "p/", "c"), []);
});

Deno.test("resolveStore: the client's options, or the field and the fix", async (t) => {
  const where = { namespace: "infra", cluster: "prod" };
  const good = b64({ accessKeyId: "AK", secretAccessKey: "SK" });
  const rows: [string, Parameters<typeof resolveStore>, string][] = [
    ["no Secret", [STORE, where, { credentials: null }], "SecretNotFound"],
    ["a key missing", [STORE, where, { credentials: b64({ accessKeyId: "AK" }) }], "SecretKeysMissing"],
    [
      "an empty key",
      [STORE, where, { credentials: b64({ accessKeyId: "AK", secretAccessKey: " " }) }],
      "SecretKeysMissing",
    ],
    [
      "no CA Secret",
      [{ ...STORE, caSecret: { name: "ca" } }, where, { credentials: good, ca: null }],
      "SecretNotFound",
    ],
    ["a CA Secret without a PEM", [{ ...STORE, caSecret: { name: "ca" } }, where, {
      credentials: good,
      ca: b64({ "ca.crt": "x" }),
    }], "SecretKeysMissing"],
  ];
  for (const [name, args, reason] of rows) {
    await t.step(name, () => {
      const r = resolveStore(...args);
      assert.ok("problem" in r);
      assert.equal(r.problem.reason, reason);
      assert.match(r.problem.message, /^spec\.etcd\.backup\.store\.(credentialsSecret|caSecret): .+; .+/);
      assert.ok(!r.problem.message.includes("SK"), "no secret in a message");
    });
  }
  await t.step("good: the prefix defaults to <namespace>/<cluster>/, the endpoint loses its slash", () => {
    const r = resolveStore(STORE, where, { credentials: good });
    assert.ok("store" in r);
    assert.deepEqual(r.store, {
      client: {
        endpoint: "https://127.0.0.1:9000",
        region: "us-east-1",
        credentials: { accessKeyId: "AK", secretAccessKey: "SK" },
      },
      bucket: "etcd",
      prefix: "infra/prod/",
    });
  });
});

Deno.test("storeProblem: each kind of store error names its field", () => {
  const rows: [string | undefined, string, RegExp][] = [
    ["credentials", "StoreCredentialsRefused", /^spec\.etcd\.backup\.store\.credentialsSecret: .*Secret s3/],
    ["denied", "StoreCredentialsRefused", /credentialsSecret/],
    ["no-bucket", "BucketNotFound", /^spec\.etcd\.backup\.store\.bucket: .*no bucket etcd.*create it/],
    ["unreachable", "StoreUnreachable", /^spec\.etcd\.backup\.store\.endpoint: /],
    ["timeout", "StoreUnreachable", /endpoint/],
    ["tls", "StoreTLSRefused", /^spec\.etcd\.backup\.store\.caSecret: TLS/],
    ["server", "BackupFailed", /^boom$/],
    [undefined, "BackupFailed", /^boom$/],
  ];
  for (const [kind, reason, message] of rows) {
    const p = storeProblem(STORE, { kind, message: "boom" });
    assert.equal(p.reason, reason, String(kind));
    assert.match(p.message, message, String(kind));
  }
});

const T0 = "2026-01-01T00:00:00.000Z";
const at = (iso: string) => new Date(iso);
const settled: BackupState = { listed: true, failures: 0, checked: "s", since: T0 };
const problem = { reason: "StoreUnreachable" as const, message: "spec.etcd.backup.store.endpoint: down" };

Deno.test("nextBackupJob: what each pass starts, and when to look again", async (t) => {
  const base: BackupPassInput = { state: settled, now: at("2026-01-01T00:30:00Z"), store: "s" };
  const rows: [string, Partial<BackupPassInput>, ReturnType<typeof nextBackupJob>][] = [
    ["nothing configured to do", {}, {}],
    ["a job runs: nothing else", {
      state: { ...settled, running: { job: "schedule", since: T0 } },
      preChange: "taking",
    }, {}],
    ["the plan waits for a snapshot", { preChange: "taking", request: "r1" }, { start: "pre-change" }],
    ["a failed pre-change snapshot is tried again after 30 s", {
      preChange: "failed",
      state: { ...settled, failure: { time: "2026-01-01T00:29:50.000Z", job: "pre-change", problem } },
    }, { at: at("2026-01-01T00:30:20.000Z") }],
    ["…and then", {
      preChange: "failed",
      state: { ...settled, failure: { time: "2026-01-01T00:29:00.000Z", job: "pre-change", problem } },
    }, { start: "pre-change" }],
    ["an on-demand request not answered yet", { request: "r1" }, { start: "manual" }],
    ["…answered already", { request: "r1", state: { ...settled, answered: { token: "r1" } } }, {}],
    ["the store's spec changed: checked", { store: "s2" }, { start: "check" }],
    ["not listed yet: checked", { state: { ...settled, listed: false } }, { start: "check" }],
    ["a failed check is tried again with backoff", {
      state: {
        ...settled,
        listed: false,
        failures: 3,
        failure: { time: "2026-01-01T00:29:00.000Z", job: "check", problem },
      },
    }, { at: at("2026-01-01T00:33:00.000Z") }],
    ["scheduled: due at the next tick after the newest backup or attempt", { schedule: "0 * * * *" }, {
      at: at("2026-01-01T01:00:00Z"),
    }],
    ["…a tick passed: taken", {
      schedule: "*/10 * * * *",
      state: { ...settled, scheduledAt: "2026-01-01T00:10:00.000Z" },
    }, { start: "schedule" }],
    ["…a newer backup of another reason counts", {
      schedule: "*/20 * * * *",
      state: { ...settled, scheduledAt: "2026-01-01T00:00:00.000Z", last: record("2026-01-01T00:25:00.000Z") },
    }, { at: at("2026-01-01T00:40:00Z") }],
  ];
  for (const [name, over, want] of rows) {
    await t.step(name, () => assert.deepEqual(nextBackupJob({ ...base, ...over }), want));
  }
});

function record(time: string, reason = "manual") {
  return { key: `p/c-${time}-${reason}.db`, size: 4096, revision: "7", member: "42", time, reason, sha256: "ab" };
}

Deno.test("afterJob: a success clears the failure; a failure counts; requests and schedules are remembered", () => {
  const failed = afterJob(settled, { job: "schedule", store: "s", at: at("2026-01-01T01:00:00Z"), problem });
  assert.equal(failed.failures, 1);
  assert.equal(failed.scheduledAt, "2026-01-01T01:00:00.000Z");
  assert.deepEqual(failed.failure?.problem, problem);
  const r = record("2026-01-01T01:01:00.000Z");
  const ok = afterJob(failed, { job: "manual", store: "s", at: at(r.time), record: r, request: "t1" });
  assert.deepEqual([ok.failure, ok.failures, ok.last, ok.answered], [undefined, 0, r, { token: "t1", record: r }]);
  const older = afterJob(ok, { job: "check", store: "s", at: at(r.time), record: record(T0) });
  assert.equal(older.last, r, "a listing's older backup does not replace a newer one");
});

Deno.test("a request's answer stays its own when a scheduled backup or failure follows it", () => {
  const mine = record("2026-01-01T01:00:00.000Z");
  const ok = afterJob(settled, { job: "manual", store: "s", at: at(mine.time), record: mine, request: "t1" });
  const later = record("2026-01-01T01:00:02.000Z", "schedule");
  const next = afterJob(ok, { job: "schedule", store: "s", at: at(later.time), record: later });
  assert.equal(next.last, later);
  assert.deepEqual(backupsStatus(next), { last: later, request: "t1", requestBackup: mine });
  const failed = afterJob(next, { job: "schedule", store: "s", at: at("2026-01-01T01:01:00Z"), problem });
  assert.deepEqual([backupsStatus(failed).requestBackup, backupsStatus(failed).requestFailure], [mine, undefined]);
  const refused = afterJob(failed, {
    job: "manual",
    store: "s",
    at: at("2026-01-01T01:02:00Z"),
    problem,
    request: "t2",
  });
  const status = backupsStatus(refused);
  assert.deepEqual([status.request, status.requestBackup, status.requestFailure], ["t2", undefined, problem.message]);
  assert.equal(status.last, later, "the last success is still shown beside the request's failure");
});

Deno.test("backupCondition and backupsStatus", () => {
  const last = record("2026-01-01T01:00:00.000Z");
  const c = (s: BackupState) => {
    const x = backupCondition(s);
    return `${x.status} ${x.reason}`;
  };
  assert.equal(c({ ...settled, listed: false }), "Unknown BackupInProgress");
  assert.equal(c(settled), "Unknown NoBackupYet");
  assert.equal(c({ ...settled, last }), "True BackedUp");
  assert.equal(c({ ...settled, last, failure: { time: T0, job: "schedule", problem } }), "False StoreUnreachable");
  assert.match(backupCondition({ ...settled, last }).message, /revision 7, member 42/);
  assert.deepEqual(
    backupsStatus({ ...settled, last, running: { job: "pre-change", since: T0 } }, {
      machines: [],
      state: "skipped",
      message: "skipped it",
    }),
    { last, taking: "pre-change", skipped: "skipped it" },
  );
});

Deno.test("backupMember: a healthy follower, else the leader; never a learner or an unhealthy one", () => {
  const m = (id: string, o: Record<string, unknown> = {}) => ({
    id,
    name: `cp-${id}`,
    peerURLs: [],
    isLearner: false,
    healthy: true,
    leader: false,
    alarms: [],
    ...o,
  });
  assert.equal(backupMember([m("1", { leader: true }), m("2", { healthy: false }), m("3")]).member?.id, "3");
  assert.equal(backupMember([m("1", { leader: true }), m("2", { isLearner: true })]).member?.id, "1");
  assert.match(backupMember([m("1", { healthy: false })]).why ?? "", /no healthy etcd member/);
});

Deno.test("nico backups: one line per backup under a header, the key last", () => {
  const r = {
    key: "infra/prod/prod-20260101T000000Z-manual.db",
    size: 3 * 1024 * 1024,
    revision: "42",
    member: "7",
    endpoint: "https://127.0.0.1:2379",
    time: "2026-01-01T00:00:00.000Z",
    reason: "manual",
    sha256: "0123456789abcdef0123",
  };
  assert.equal(backupsTable([]), "no backups");
  assert.deepEqual(backupsTable([r]).split("\n").map((l) => l.split(/\s+/)), [
    ["TIME", "REASON", "SIZE", "REVISION", "SHA256", "MEMBER", "KEY"],
    [r.time, "manual", "3.0Mi", "42", "0123456789ab", "7", r.key],
  ]);
});
