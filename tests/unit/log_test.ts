/** The text logger formats the record directly (it used to re-parse the JSON logger's output). */
import assert from "node:assert/strict";
import { jsonLogger, textLogger } from "../../lib/runtime/log.ts";

Deno.test("text logger: time LEVEL message key=value, fields cannot overwrite the level or message", () => {
  const lines: string[] = [];
  const log = textLogger({ level: "info", write: (l) => lines.push(l), now: () => 0 });
  log.debug("dropped");
  log.info("claimed machines", { machines: ["a", "b"], cluster: "prod", level: "debug", msg: "spoof" });
  log.error("failed", { error: new Error("boom") });
  assert.deepEqual(lines, [
    '1970-01-01T00:00:00.000Z INFO  claimed machines machines=["a","b"] cluster=prod level=debug msg=spoof',
    '1970-01-01T00:00:00.000Z ERROR failed error={"name":"Error","message":"boom"}',
  ]);
});

Deno.test("text and JSON loggers redact Secret payloads alike", () => {
  const secret = { kind: "Secret", metadata: { name: "s" }, data: { token: "c2VjcmV0" } };
  const text: string[] = [];
  const json: string[] = [];
  textLogger({ write: (l) => text.push(l) }).info("x", { obj: secret });
  jsonLogger({ write: (l) => json.push(l) }).info("x", { obj: secret });
  for (const line of [...text, ...json]) {
    assert.ok(!line.includes("c2VjcmV0"), line);
    assert.match(line, /\[redacted\]/);
  }
});
