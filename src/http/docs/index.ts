// The REST API's documentation: the OpenAPI 3.1 document generated from the protos (gen/openapi, `npm run generate`)
// at /openapi.json, and an API reference page at /docs (Swagger UI's static files from the swagger-ui-dist package,
// served from svc itself: no CDN). Public, like discovery: they describe the API, they grant nothing.
import { readFileSync } from "node:fs";
import type http from "node:http";
import type http2 from "node:http2";
import { createRequire } from "node:module";
import path from "node:path";
import type { NodeResponse } from "../node-types.js";

type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;

const require = createRequire(import.meta.url);
const OPENAPI = new URL("../../../gen/openapi/svc.openapi.json", import.meta.url);
const SWAGGER_UI = path.dirname(require.resolve("swagger-ui-dist/package.json"));
const INIT = new URL("./init.js", import.meta.url);

const FILES: Record<string, { file: string | URL; type: string }> = {
  "/docs/swagger-ui.css": { file: path.join(SWAGGER_UI, "swagger-ui.css"), type: "text/css; charset=utf-8" },
  "/docs/swagger-ui-bundle.js": { file: path.join(SWAGGER_UI, "swagger-ui-bundle.js"), type: "text/javascript; charset=utf-8" },
  "/docs/init.js": { file: INIT, type: "text/javascript; charset=utf-8" },
  "/openapi.json": { file: OPENAPI, type: "application/json; charset=utf-8" },
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8" />
<meta name="viewport" content="width=device-width, initial-scale=1" />
<title>svc API reference</title>
<link rel="stylesheet" href="/docs/swagger-ui.css" />
</head>
<body>
<main id="swagger-ui"></main>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

// Swagger UI sets style attributes and shows inline SVG images; scripts only from svc.
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'";

const cache = new Map<string, Buffer>();

function body(file: string | URL): Buffer {
  const key = String(file);
  let b = cache.get(key);
  if (!b) {
    b = readFileSync(file);
    cache.set(key, b);
  }
  return b;
}

/** Serves /openapi.json and /docs (false: not one of theirs). */
export function serveDocs(req: NodeRequest, res: NodeResponse): boolean {
  const p = (req.url ?? "/").split("?", 1)[0] as string;
  const target = p === "/docs" || p === "/docs/" ? "page" : FILES[p];
  if (!target) return false;
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.writeHead(405, { allow: "GET", "content-type": "text/plain; charset=utf-8" });
    res.end("use GET\n");
    return true;
  }
  const [type, content] = target === "page" ? ["text/html; charset=utf-8", Buffer.from(PAGE)] : [target.type, body(target.file)];
  res.writeHead(200, {
    "content-type": type,
    "content-length": String(content.length),
    "cache-control": target === "page" ? "no-cache" : "public, max-age=300",
    "x-content-type-options": "nosniff",
    ...(target === "page" ? { "content-security-policy": CSP, "referrer-policy": "no-referrer" } : {}),
  });
  if (req.method === "HEAD") res.end();
  else res.end(content);
  return true;
}
