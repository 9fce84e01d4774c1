// Validates gen/openapi/svc.openapi.json against the OpenAPI 3.1 schema (@apidevtools/swagger-parser); exit 1 with
// the problems otherwise. The tests run it (swagger-parser's ESM dependencies do not load under jest).
import path from "node:path";
import SwaggerParser from "@apidevtools/swagger-parser";

const file = path.resolve(import.meta.dirname, "../gen/openapi/svc.openapi.json");
try {
  const api = (await SwaggerParser.validate(file)) as { openapi: string };
  console.log(`valid OpenAPI ${api.openapi}: ${file}`);
} catch (err) {
  console.error(err instanceof Error ? err.message : String(err));
  process.exit(1);
}
