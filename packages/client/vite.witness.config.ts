import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

/**
 * The client package's `points-ledger-witness` command (src/client/witness-cli.ts), built beside
 * the client's bundle (vite.config.ts) as a bundle of its own, for Node.js: Node's built-in modules
 * stay imports, everything else is inside, so the package still has no runtime dependency.
 */
const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  publicDir: false,
  logLevel: "warn",
  build: {
    ssr: here("../../src/client/witness-cli.ts"),
    outDir: here("../../dist/client-package"),
    emptyOutDir: false,
    target: "node20",
    minify: false,
    sourcemap: false,
    rollupOptions: {
      output: { entryFileNames: "witness.js", format: "es", banner: "#!/usr/bin/env node" },
    },
  },
  ssr: { noExternal: true },
});
