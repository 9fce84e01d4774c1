// Preloaded into a svc child process (NODE_OPTIONS=--import) by the tracing tests: records every module URL under
// @opentelemetry/ that the process resolves (and src/main.ts or dist/'s files, to show the hook ran), into the file
// SVC_TEST_MODULE_LOG names, to show what tracing loads. An in-thread resolve hook (module.registerHooks, Node 24 and
// 26; module.register, the loader-thread kind, is deprecated in Node 26 and would print a warning on stderr).
import { appendFileSync } from "node:fs";
import { registerHooks } from "node:module";

const file = process.env.SVC_TEST_MODULE_LOG;
const logged = (url) => url.includes("/@opentelemetry/") || url.endsWith("/src/main.ts") || /\/dist\/[a-z-]+(-[A-Z0-9]{8})?\.js$/.test(url);

if (file) {
  registerHooks({
    resolve(specifier, context, next) {
      const resolved = next(specifier, context);
      if (logged(resolved.url)) appendFileSync(file, `${resolved.url}\n`);
      return resolved;
    },
  });
}
