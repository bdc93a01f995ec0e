import { closeSync, openSync, readSync } from "node:fs";
import { parseArgs } from "node:util";
import {
  BaseError,
  ContractFunctionRevertedError,
  createWalletClient,
  defineChain,
  getAddress,
  http,
  isAddress,
  parseEventLogs,
  type Address,
  type Hex,
  type PublicClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { Config } from "../config.js";
import { distributorCoverage, DISTRIBUTOR_ABI, rpcClient, submitRootCalldata } from "../chain/distributor.js";
import { ID_PATTERN } from "../domain/batch.js";
import { PAYOUT_KEY_FILE_MAX_BYTES, PAYOUT_RECEIPT_TIMEOUT_MS, PAYOUT_RPC_RETRIES, PAYOUT_RPC_TIMEOUT_MS } from "../domain/limits.js";
import { noSnapshotMessage } from "../domain/messages.js";
import { amountOf, type Snapshot } from "../domain/snapshot.js";
import { openStore } from "../ledger/open.js";
import { UsageError } from "./commands.js";

/**
 * `points-ledger payout publish <snapshotId> --distributor <address>`: puts a snapshot's root on
 * chain, in contracts/PointsDistributor.sol (docs/onchain.md). The snapshot is read from the
 * database (DATABASE_URL), like the snapshot commands; the chain through CHAIN_RPC_URL. Before
 * anything is sent (or printed for a multisig with --calldata), the distributor must be able to
 * pay the whole snapshot: a cumulative root promises its total, less nothing, so the distributor's
 * token balance plus what it already paid must cover it.
 */
export const PAYOUT_USAGE = `  payout publish <snapshotId> --distributor <address> (--key-file <file> | --calldata)
                                          submit the snapshot's root to a PointsDistributor (CHAIN_RPC_URL; the owner's
                                          0x-prefixed private key in --key-file) and print the transaction hash, once the
                                          distributor's balance plus totalClaimed() covers the snapshot's total;
                                          --calldata prints {"to","data"} for a multisig instead (checked first when
                                          CHAIN_RPC_URL is set)`;

/** Something that stops the command with one line on stderr and exit 1 (not a usage mistake). */
class PayoutRefusal extends Error {
  override name = "PayoutRefusal";
}

function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: { distributor: { type: "string" }, "key-file": { type: "string" }, calldata: { type: "boolean" } },
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/** CHAIN_RPC_URL: an http(s) JSON-RPC endpoint, or null when unset. */
function chainRpcUrl(env: NodeJS.ProcessEnv): string | null {
  const value = env.CHAIN_RPC_URL;
  if (value === undefined || value === "") return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError("CHAIN_RPC_URL must be an http(s) URL of an EVM JSON-RPC endpoint");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new UsageError("CHAIN_RPC_URL must be an http(s) URL of an EVM JSON-RPC endpoint");
  return value;
}

/** The owner's key: the file's one 0x-prefixed 32-byte hex key. Its content is never echoed. */
function readKeyFile(path: string): Hex {
  let text: string;
  try {
    const fd = openSync(path, "r");
    try {
      const buffer = Buffer.alloc(PAYOUT_KEY_FILE_MAX_BYTES + 1);
      const length = readSync(fd, buffer, 0, buffer.length, 0);
      if (length > PAYOUT_KEY_FILE_MAX_BYTES)
        throw new UsageError(`--key-file ${path} is not a private key file (over ${PAYOUT_KEY_FILE_MAX_BYTES} bytes)`);
      text = buffer.toString("utf8", 0, length).trim();
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`--key-file ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? "error"})`);
  }
  if (!/^0x[0-9a-fA-F]{64}$/.test(text)) throw new UsageError(`--key-file ${path} must hold one 0x-prefixed 32-byte hex private key`);
  return text as Hex;
}

async function loadSnapshot(config: Config, id: string): Promise<Snapshot> {
  const store = await openStore(config);
  try {
    await store.migrate();
    const snapshot = await store.getSnapshot(id);
    if (snapshot === null) throw new PayoutRefusal(noSnapshotMessage(id));
    return snapshot;
  } finally {
    await store.close();
  }
}

/** A chain call's failure as one line: a revert by its error's name, anything else by viem's short message. */
function chainFailure(what: string, error: unknown): PayoutRefusal {
  if (error instanceof BaseError) {
    const reverted = error.walk((cause) => cause instanceof ContractFunctionRevertedError);
    if (reverted instanceof ContractFunctionRevertedError)
      return new PayoutRefusal(`${what}: reverted with ${reverted.data?.errorName ?? reverted.reason ?? "no reason"}`);
    return new PayoutRefusal(`${what}: ${error.shortMessage}`);
  }
  return new PayoutRefusal(`${what}: ${error instanceof Error ? error.message : String(error)}`);
}

/** Refuses a snapshot the distributor cannot pay in full; the line names both figures, in the token's base units. */
async function checkCoverage(client: PublicClient, distributor: Address, snapshot: Snapshot): Promise<void> {
  const code = await client.getCode({ address: distributor }).catch((error: unknown) => {
    throw chainFailure(`reading ${distributor} over CHAIN_RPC_URL`, error);
  });
  if (code === undefined || code === "0x") throw new PayoutRefusal(`no contract at ${distributor} on this chain (CHAIN_RPC_URL)`);
  const coverage = await distributorCoverage(client, distributor).catch((error: unknown) => {
    throw chainFailure(`reading the PointsDistributor at ${distributor}`, error);
  });
  // A snapshot at other decimals than the token's would pay every account 10^k times too much or too little.
  if (coverage.decimals !== null && coverage.decimals !== snapshot.decimals) {
    throw new PayoutRefusal(
      `snapshot ${snapshot.id} has decimals ${snapshot.decimals} but token ${coverage.token} has ${coverage.decimals}: take the snapshot again with --decimals ${coverage.decimals}`,
    );
  }
  const total = amountOf(snapshot.totalUnits, snapshot.decimals);
  const covered = coverage.balance + coverage.claimed;
  if (covered < total) {
    throw new PayoutRefusal(
      `snapshot ${snapshot.id} is not covered: its total is ${total} but the distributor holds ${coverage.balance} and has paid ${coverage.claimed} (${covered}) of token ${coverage.token}`,
    );
  }
}

async function send(rpcUrl: string, client: PublicClient, ownerKey: Hex, distributor: Address, snapshot: Snapshot): Promise<void> {
  const account = privateKeyToAccount(ownerKey);
  const chainId = await client.getChainId();
  const chain = defineChain({
    id: chainId,
    name: `chain ${chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const wallet = createWalletClient({
    account,
    chain,
    transport: http(rpcUrl, { timeout: PAYOUT_RPC_TIMEOUT_MS, retryCount: PAYOUT_RPC_RETRIES }),
  });
  const root = snapshot.root as Hex;
  // Simulated first: a key that is not the owner's is refused by name, and nothing is spent.
  const { request } = await client
    .simulateContract({ account, address: distributor, abi: DISTRIBUTOR_ABI, functionName: "submitRoot", args: [root] })
    .catch((error: unknown) => {
      throw chainFailure(`submitRoot from ${account.address}`, error);
    });
  const hash = await wallet.writeContract({ ...request, chain }).catch((error: unknown) => {
    throw chainFailure("sending submitRoot", error);
  });
  console.log(hash);
  const receipt = await client.waitForTransactionReceipt({ hash, timeout: PAYOUT_RECEIPT_TIMEOUT_MS }).catch((error: unknown) => {
    throw chainFailure(`waiting for ${hash}`, error);
  });
  if (receipt.status !== "success") throw new PayoutRefusal(`submitRoot ${hash} reverted in block ${receipt.blockNumber}`);
  const [submitted] = parseEventLogs({ abi: DISTRIBUTOR_ABI, logs: receipt.logs, eventName: "RootSubmitted" });
  const acceptableAt = submitted ? new Date(Number(submitted.args.acceptableAt) * 1000).toISOString() : "unknown";
  console.error(
    `root ${root} of snapshot ${snapshot.id} submitted to ${distributor} in block ${receipt.blockNumber}; claimable from ${acceptableAt} (after acceptRoot() when the distributor has a timelock)`,
  );
}

export async function payoutCommand(argv: string[], config: () => Config): Promise<number> {
  const { positionals, values } = parse(argv);
  const [action, id] = positionals;
  if (action !== "publish" || id === undefined || positionals.length !== 2) throw new UsageError(`usage:\n${PAYOUT_USAGE}`);
  if (!new RegExp(ID_PATTERN).test(id)) throw new UsageError(`<snapshotId> must match ${ID_PATTERN}`);
  const distributor = values.distributor;
  if (distributor === undefined || !isAddress(distributor, { strict: true }))
    throw new UsageError("--distributor must be the PointsDistributor's 0x address");
  const printCalldata = values.calldata === true;
  if (printCalldata === (values["key-file"] !== undefined))
    throw new UsageError("give either --key-file (to send) or --calldata (to print)");
  const rpcUrl = chainRpcUrl(process.env);
  if (rpcUrl === null && !printCalldata)
    throw new UsageError("CHAIN_RPC_URL is needed to send submitRoot (or print the call with --calldata)");
  // Read before anything else: a key file that is not one is a usage mistake, found before any work.
  const ownerKey = printCalldata ? null : readKeyFile(values["key-file"]!);
  try {
    const snapshot = await loadSnapshot(config(), id);
    const client = rpcUrl === null ? null : rpcClient(rpcUrl);
    if (client !== null) await checkCoverage(client, distributor, snapshot);
    if (printCalldata) {
      console.log(JSON.stringify({ to: getAddress(distributor), data: submitRootCalldata(snapshot.root as Hex) }));
      return 0;
    }
    await send(rpcUrl!, client!, ownerKey!, distributor, snapshot);
    return 0;
  } catch (error) {
    if (!(error instanceof PayoutRefusal)) throw error;
    console.error(`points-ledger: ${error.message}`);
    return 1;
  }
}
