// Escaping HTML by default: a tagged template whose values are escaped unless they are already Html (a fragment built
// by this template). Pages are built from these fragments only, so a value from a request or a user's profile can
// never become markup.

export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);

function piece(v: unknown): string {
  if (v === null || v === undefined || v === false) return "";
  if (v instanceof Html) return v.value;
  if (Array.isArray(v)) return v.map(piece).join("");
  return escapeHtml(String(v));
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] as string;
  for (let i = 0; i < values.length; i++) out += piece(values[i]) + (strings[i + 1] as string);
  return new Html(out);
}

/** Markup that is trusted as it is (generated SVG, the page shell): never a request's value. */
export const trusted = (markup: string): Html => new Html(markup);
