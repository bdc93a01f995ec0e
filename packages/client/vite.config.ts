import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig, type Plugin } from "vite";

/**
 * The client's own package, built by `npm run build:client` (and packed by `npm run pack:client`)
 * into dist/client-package: src/client and the pure domain files it imports, with the parts of
 * viem (secp256k1 signing, keccak) and js-sha3 it calls, bundled into one ES module. So the
 * package has no runtime dependencies: `npm install <tarball>` needs no registry and brings no
 * native module and none of the server's dependencies. tsc writes its declarations beside it
 * (packages/client/tsconfig.build.json).
 */
const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/** The package's manifest, at the root package's version, and its README, beside the bundle. */
function manifest(): Plugin {
  return {
    name: "points-ledger-client-manifest",
    generateBundle() {
      const root = JSON.parse(readFileSync(here("../../package.json"), "utf8")) as { version: string };
      const own = JSON.parse(readFileSync(here("package.json"), "utf8")) as Record<string, unknown>;
      const source = `${JSON.stringify({ ...own, version: root.version }, null, 2)}\n`;
      this.emitFile({ type: "asset", fileName: "package.json", source });
      this.emitFile({ type: "asset", fileName: "README.md", source: readFileSync(here("README.md"), "utf8") });
    },
  };
}

export default defineConfig({
  publicDir: false,
  logLevel: "warn",
  plugins: [manifest()],
  build: {
    lib: { entry: here("../../src/client/index.ts"), formats: ["es"], fileName: () => "index.js" },
    outDir: here("../../dist/client-package"),
    emptyOutDir: true,
    target: "es2022",
    // Readable in node_modules: a backend's stack traces point at real names.
    minify: false,
    sourcemap: false,
  },
});
