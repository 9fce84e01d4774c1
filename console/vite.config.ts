// Vite builds the console into dist/console (scripts/build.mjs runs this config); `npx vite --config
// console/vite.config.ts` serves it for development. No React plugin: Vite's own transform (oxc) compiles JSX with
// the automatic runtime, and fast refresh is not worth @vitejs/plugin-react's Babel peer dependencies here.
import path from "node:path";
import { defineConfig } from "vite";

const root = import.meta.dirname;

export default defineConfig({
  root,
  base: "/ui/console/",
  publicDir: path.join(root, "public"),
  oxc: { jsx: { runtime: "automatic" } },
  build: {
    outDir: path.resolve(root, "../dist/console"),
    emptyOutDir: true,
    assetsDir: "assets",
    target: "es2022",
    sourcemap: false,
    reportCompressedSize: false,
    // Read by the console test to measure the first route's size (not served).
    manifest: true,
    chunkSizeWarningLimit: 800,
  },
  server: { proxy: { "^/(oauth|oidc|svc\\.|\\.well-known|ui/login)": "http://localhost:8080" } },
});
