// Text from a client must be well-formed Unicode. JSON can spell a lone UTF-16 surrogate (`"\ud8b4"`), which no UTF-8
// text can hold: PostgreSQL's JSON types refuse it (a write of an event or a SCIM record would fail as a 500) and its
// text columns would get U+FFFD instead, storing what the client never sent. So a request with one is refused where
// its JSON is read (SCIM, REST, and the parsed message of every RPC: src/http/scim, src/http/rest, src/api/connect.ts),
// before anything is checked or written.

/**
 * Where the first string (or object key) that is not well-formed UTF-16 is in `value`: a path such as
 * `emails[0].value`, or undefined when every string is well-formed. Iterative: depth costs no stack.
 */
export function illFormedText(value: unknown): string | undefined {
  const stack: [unknown, string][] = [[value, ""]];
  while (stack.length) {
    const [v, path] = stack.pop() as [unknown, string];
    if (typeof v === "string") {
      if (!v.isWellFormed()) return path || "(the value)";
    } else if (Array.isArray(v)) {
      // Pushed last to first, so that the first one in the document is the one named.
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${path}[${i}]`]);
    } else if (v !== null && typeof v === "object" && !ArrayBuffer.isView(v)) {
      const entries = Object.entries(v);
      for (const [k] of entries) if (!k.isWellFormed()) return (path ? `${path}.${k}` : k).toWellFormed();
      for (let i = entries.length - 1; i >= 0; i--) {
        const [k, child] = entries[i] as [string, unknown];
        stack.push([child, path ? `${path}.${k}` : k]);
      }
    }
  }
  return undefined;
}

export const ILL_FORMED_MESSAGE = "holds text that is not well-formed Unicode (an unpaired UTF-16 surrogate)";
