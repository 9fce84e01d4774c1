// The loader hooks of module-log.mjs (they run on Node's loader thread).
import { appendFileSync } from "node:fs";

let file;

export function initialize(data) {
  file = data.file;
}

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (file && (resolved.url.includes("/@opentelemetry/") || resolved.url.endsWith("/src/main.ts") || /\/dist\/[a-z-]+(-[A-Z0-9]{8})?\.js$/.test(resolved.url)))
    appendFileSync(file, `${resolved.url}\n`);
  return resolved;
}
