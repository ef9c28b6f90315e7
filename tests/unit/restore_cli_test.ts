import assert from "node:assert/strict";
import { newRequestId, previewText } from "../../cli/restore.ts";
import { REQUEST_ID } from "../../crds/restore.ts";

const backup = {
  key: "ns/c/c-20261204T120000Z-manual.db",
  time: "2026-12-04T12:00:00Z",
  revision: "120",
  reason: "manual",
};

Deno.test("nico restore's preview: the backup's time and revision, and what is rewound", () => {
  const text = previewText({ cluster: "ns/c", backup, current: 180, healthy: false });
  assert.deepEqual(text.split("\n"), [
    "restore etcd of cluster ns/c from ns/c/c-20261204T120000Z-manual.db",
    "backup:     taken 2026-12-04T12:00:00Z (manual) at revision 120",
    "etcd now:   revision 180: the 60 revisions since the backup are rewound",
  ]);
  const lost = previewText({ cluster: "ns/c", backup, why: "no member answered", healthy: false });
  assert.match(lost, /etcd now: {3}does not answer \(no member answered\): whatever it held after the backup is lost/);
  assert.match(previewText({ cluster: "ns/c", backup, current: 120, healthy: true }), /\nwarning: .*healthy quorum/);
});

Deno.test("nico restore's request ids are DNS labels, new each time", () => {
  const a = newRequestId(new Date("2026-12-04T13:05:09.120Z"));
  const b = newRequestId(new Date("2026-12-04T13:05:09.120Z"));
  assert.match(a, /^restore-20261204-130509-[0-9a-f]{8}$/);
  assert.match(a, REQUEST_ID);
  assert.ok(a.length <= 63);
  assert.notEqual(a, b);
});
