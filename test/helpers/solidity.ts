import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import solc from "solc";
import type { Abi, Hex } from "viem";

/**
 * Compiles the project's Solidity (contracts/, and the test-only contracts of test/contracts/)
 * with solc-js, the `solc` npm package, importing OpenZeppelin's contracts from node_modules.
 * Nothing compiled is committed: every test that needs a contract compiles it here.
 */

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const require = createRequire(import.meta.url);

/** The sources by the name they are compiled under; `contracts/X.sol` or `test/contracts/X.sol`. */
export const PROJECT_SOURCES = ["contracts/PointsDistributor.sol", "contracts/PointsOperatorRegistry.sol"] as const;
export const TEST_SOURCES = [
  "test/contracts/TestToken.sol",
  "test/contracts/TestPointsContract.sol",
  "test/contracts/TestOperatorsOnlyRegistry.sol",
] as const;

/** The settings the contracts are measured and documented with (docs/onchain.md, docs/performance.md). */
export const SOLC_SETTINGS = { optimizer: { enabled: true, runs: 200 } } as const;

export interface CompiledContract {
  abi: Abi;
  bytecode: Hex;
  deployedBytecode: Hex;
}

interface SolcOutput {
  errors?: { severity: string; formattedMessage: string }[];
  contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>>;
}

/** Resolves `@openzeppelin/contracts/…` (the only imports the sources use) from node_modules. */
function findImport(path: string): { contents: string } | { error: string } {
  try {
    return { contents: readFileSync(require.resolve(path), "utf8") };
  } catch {
    return { error: `import not found: ${path}` };
  }
}

let cached: Map<string, CompiledContract> | null = null;

/** Every contract of PROJECT_SOURCES and TEST_SOURCES by its name, compiled once per process. */
export function compileContracts(): Map<string, CompiledContract> {
  if (cached) return cached;
  const sources: Record<string, { content: string }> = {};
  for (const name of [...PROJECT_SOURCES, ...TEST_SOURCES]) sources[name] = { content: readFileSync(join(REPO_ROOT, name), "utf8") };
  const input = {
    language: "Solidity",
    sources,
    settings: { ...SOLC_SETTINGS, outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } } },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport }) as string) as SolcOutput;
  const problems = (output.errors ?? []).filter((error) => error.severity === "error" || error.severity === "warning");
  if (problems.length > 0) throw new Error(`solc ${solc.version()}:\n${problems.map((error) => error.formattedMessage).join("\n")}`);
  const contracts = new Map<string, CompiledContract>();
  for (const file of Object.values(output.contracts ?? {})) {
    for (const [name, contract] of Object.entries(file)) {
      contracts.set(name, {
        abi: contract.abi,
        bytecode: `0x${contract.evm.bytecode.object}`,
        deployedBytecode: `0x${contract.evm.deployedBytecode.object}`,
      });
    }
  }
  cached = contracts;
  return contracts;
}

export function compiled(name: string): CompiledContract {
  const contract = compileContracts().get(name);
  if (!contract) throw new Error(`no contract ${name} among the compiled sources`);
  return contract;
}
