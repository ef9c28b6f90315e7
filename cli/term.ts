/**
 * Terminal output for the user commands: colour only on a terminal (and
 * never with NO_COLOR), ages like kubectl's, and tables that fit the width.
 *
 * @module
 */

/** How to paint text: a no-op when colour is off. */
export interface Style {
  color: boolean;
  /** Columns available; lines are cut to fit (Infinity when piped). */
  width: number;
}

/** Colour and width for stdout: colour on a terminal unless NO_COLOR is set; `--color` overrides. */
export function stdoutStyle(color?: string): Style {
  const tty = Deno.stdout.isTerminal();
  const noColor = (Deno.env.get("NO_COLOR") ?? "") !== "";
  const on = color === "always" ? true : color === "never" ? false : tty && !noColor;
  let width = Infinity;
  if (tty) {
    try {
      width = Deno.consoleSize().columns || Infinity;
    } catch {
      width = Infinity;
    }
  }
  return { color: on, width };
}

const CODES = { red: 31, green: 32, yellow: 33, blue: 34, cyan: 36, gray: 90, bold: 1 } as const;
export type Paint = keyof typeof CODES;

/** `text` in `paint` when colour is on. */
export function paint(style: Style, p: Paint | undefined, text: string): string {
  if (!style.color || !p || !text) return text;
  return `\x1b[${CODES[p]}m${text}\x1b[0m`;
}

// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;

/** Printed width of a string (ANSI codes take no room; tree glyphs take one column). */
export function visibleLength(s: string): number {
  return [...s.replace(ANSI, "")].length;
}

/** Cuts a (possibly coloured) line to `width` columns, ending in `…` when cut. */
export function fit(line: string, width: number): string {
  if (!Number.isFinite(width) || visibleLength(line) <= width) return line;
  let out = "";
  let used = 0;
  // deno-lint-ignore no-control-regex
  for (const part of line.split(/(\x1b\[[0-9;]*m)/)) {
    if (part.startsWith("\x1b[")) {
      out += part;
      continue;
    }
    for (const ch of part) {
      if (used >= width - 1) break;
      out += ch;
      used++;
    }
  }
  return out + "…" + (out.includes("\x1b[") ? "\x1b[0m" : "");
}

/** kubectl's age: `45s`, `3m`, `2h`, `5d`. */
export function age(since: string | undefined, now: Date): string {
  if (!since) return "-";
  const s = Math.max(0, Math.floor((now.getTime() - new Date(since).getTime()) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 2 * 3600) return `${Math.floor(s / 60)}m`;
  if (s < 48 * 3600) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/** A cell: text and an optional paint. */
export type Cell = string | { text: string; paint?: Paint | undefined };

/** A table row: cells in columns, or a free line (a note under the row before it) that no column is sized by. */
export type Row = Cell[] | { line: string };

const cellText = (c: Cell) => (typeof c === "string" ? c : c.text);

/**
 * Columns padded to the widest cell, three spaces apart; every line is cut
 * to the style's width.
 */
export function table(style: Style, header: string[], rows: Row[]): string {
  const cellRows = rows.filter((r): r is Cell[] => Array.isArray(r));
  const widths = header.map((h, i) =>
    Math.max(visibleLength(h), ...cellRows.map((r) => visibleLength(cellText(r[i] ?? ""))))
  );
  const render = (cells: Cell[], head: boolean) =>
    cells.map((c, i) => {
      const text = cellText(c);
      const pad = i === cells.length - 1 ? "" : " ".repeat(Math.max(0, widths[i]! - visibleLength(text)));
      return paint(style, head ? "bold" : typeof c === "string" ? undefined : c.paint, text) + pad;
    }).join("   ").trimEnd();
  const lines = [render(header, true), ...rows.map((r) => (Array.isArray(r) ? render(r, false) : r.line))];
  return lines.map((l) => fit(l, style.width)).join("\n");
}

/** The printed width of the widest line of a table. */
export function tableWidth(text: string): number {
  return Math.max(0, ...text.split("\n").map(visibleLength));
}
