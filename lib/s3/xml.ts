/**
 * The little XML S3 answers with, read by element name: S3's answers are
 * flat, namespace-free in practice and carry no attributes we need, so a
 * full parser would bring nothing. Text is unescaped (the five entities and
 * numeric references); CDATA is not used by S3.
 *
 * @module
 */

/** `text` with XML's entities and character references replaced. */
export function unescapeXml(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#\d+|amp|lt|gt|quot|apos);/g, (_, e: string) => {
    if (e[0] === "#") return String.fromCodePoint(e[1] === "x" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
    return { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" }[e]!;
  });
}

/** `text` escaped for an XML element's content. */
export function escapeXml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[c]!,
  );
}

/** The raw contents of every `<name>…</name>` element of `xml`, in order (an empty element gives ""). */
export function elements(xml: string, name: string): string[] {
  const out: string[] = [];
  const re = new RegExp(`<${name}(?:\\s[^>]*)?(?:/>|>([\\s\\S]*?)</${name}>)`, "g");
  for (const m of xml.matchAll(re)) out.push(m[1] ?? "");
  return out;
}

/** The unescaped text of the first `<name>` element of `xml`, or undefined. */
export function text(xml: string, name: string): string | undefined {
  const first = elements(xml, name)[0];
  return first === undefined ? undefined : unescapeXml(first.trim());
}
