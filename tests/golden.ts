/**
 * Golden files: compare text with a committed file under tests/golden/.
 * Run with UPDATE_GOLDEN=1 to rewrite them, then review the diff.
 */
import assert from "node:assert/strict";

const DIR = new URL("./golden/", import.meta.url);

export async function assertGolden(name: string, actual: string): Promise<void> {
  const url = new URL(name, DIR);
  if (Deno.env.get("UPDATE_GOLDEN") === "1") {
    await Deno.writeTextFile(url, actual);
    return;
  }
  const expected = await Deno.readTextFile(url).catch(() => {
    throw new Error(`Golden file tests/golden/${name} is missing: run UPDATE_GOLDEN=1 deno task test and review it`);
  });
  assert.equal(actual, expected, `output differs from tests/golden/${name} (UPDATE_GOLDEN=1 rewrites it)`);
}
