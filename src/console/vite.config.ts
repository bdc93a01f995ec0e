import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

/**
 * The console's own build: `npm run build` runs it after tsc, into dist/console, which
 * the service serves at /console (src/http/routes/console.ts). Everything is bundled: the page
 * loads nothing from other hosts, so it works on a closed network.
 */
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/console/",
  publicDir: false,
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: fileURLToPath(new URL("../../dist/console", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    // viem's secp256k1 and keccak make most of the bundle; one file keeps the page to 3 requests.
    chunkSizeWarningLimit: 700,
    modulePreload: { polyfill: false },
  },
});
