/**
 * The tables of every condition and reason in docs/troubleshooting.md,
 * generated from the registry between two markers (`deno task crds` writes
 * them; a unit test fails when the committed page differs). The tables are
 * padded as `deno fmt` pads them, so the page stays formatted.
 *
 * @module
 */
import { CONDITIONS, registeredReasons, type Role } from "./mod.ts";

export const TROUBLESHOOTING_PATH = new URL("../../docs/troubleshooting.md", import.meta.url);
export const BEGIN = "<!-- conditions:begin (generated from crds/conditions/ by `deno task crds`; do not edit) -->";
export const END = "<!-- conditions:end -->";

const READ_BY: Record<Role, string> = {
  summary: "everyone: the summary",
  progress: "kstatus: InProgress while True",
  stalled: "kstatus: Failed while True",
  detail: "people and `nico describe`",
};

/**
 * A Markdown table, each column padded to its widest cell (in code points) as `deno fmt` does.
 *
 * @example
 * ```ts
 * import { markdownTable } from "./docs.ts";
 * markdownTable(["a", "bb"], [["x", "y"]]); // "| a   | bb  |\n| --- | --- |\n| x   | y   |"
 * ```
 */
export function markdownTable(header: string[], rows: string[][]): string {
  const cells = [header, ...rows].map((r) => r.map((c) => c.replaceAll("|", "\\|")));
  const width = header.map((_, i) => Math.max(3, ...cells.map((r) => [...(r[i] ?? "")].length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c + " ".repeat(width[i]! - [...c].length)).join(" | ")} |`;
  const [head, ...body] = cells;
  return [line(head!), line(width.map((w) => "-".repeat(w))), ...body.map(line)].join("\n");
}

/**
 * The generated part of the page, markers included.
 *
 * @example
 * ```ts
 * import { BEGIN, conditionsSection } from "./docs.ts";
 * conditionsSection().startsWith(BEGIN); // true
 * ```
 */
export function conditionsSection(): string {
  const types = Object.entries(CONDITIONS).map(([type, t]) => [
    type,
    t.about,
    t.polarity === "positive" ? "good news" : "work or trouble",
    READ_BY[t.role],
    t.watched ? "at once" : "held",
  ]);
  const reasons = registeredReasons().map(({ type, reason, spec }) => [
    type,
    spec.status,
    `\`${reason}\``,
    spec.meaning,
    spec.urgency === "now" ? "at once" : "held",
    spec.means,
    spec.todo,
  ]);
  return [
    BEGIN,
    "",
    "### Conditions",
    "",
    markdownTable(["condition", "what it says", "True is", "read by", "a flip is written"], types),
    "",
    "### Reasons",
    "",
    markdownTable(["condition", "status", "reason", "meaning", "written", "what it means", "what to do"], reasons),
    "",
    END,
  ].join("\n");
}

/**
 * `page` with its generated part replaced by {@link conditionsSection}.
 *
 * @example
 * ```ts
 * import { BEGIN, END, withConditions } from "./docs.ts";
 * withConditions(`intro\n${BEGIN}\nold\n${END}\nrest\n`).endsWith(`${END}\nrest\n`); // true
 * ```
 */
export function withConditions(page: string): string {
  const begin = page.indexOf(BEGIN);
  const end = page.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`docs/troubleshooting.md has no ${BEGIN} … ${END} section`);
  return page.slice(0, begin) + conditionsSection() + page.slice(end + END.length);
}

if (import.meta.main) {
  const page = await Deno.readTextFile(TROUBLESHOOTING_PATH);
  await Deno.writeTextFile(TROUBLESHOOTING_PATH, withConditions(page));
  console.error("wrote the conditions of docs/troubleshooting.md");
}
