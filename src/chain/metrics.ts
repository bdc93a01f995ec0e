import { Gauge, type Registry } from "prom-client";
import type { ChainOperators } from "./operators.js";

/**
 * Operators on chain in /metrics, read from the process's view at each scrape (GET /v1/chain's):
 * whether the RPC endpoint answers, and the last block read at the tag. Registered only under
 * CHAIN_RPC_URL, so a service without a chain shows no chain that is down.
 */
export function registerChainGauges(registry: Registry, chain: ChainOperators): void {
  new Gauge({
    name: "points_chain_up",
    help: "1 while the chain's RPC endpoint answers and the operator registry is known, 0 while sign-ins answer 503 CHAIN_UNAVAILABLE",
    registers: [registry],
    collect() {
      this.set(chain.view().state === "ok" ? 1 : 0);
    },
  });
  new Gauge({
    name: "points_chain_block_number",
    help: "the last block read at CHAIN_BLOCK_TAG (by a sign-in or the follower); it stops growing while the chain is not read",
    registers: [registry],
    collect() {
      const { blockNumber } = chain.view();
      if (blockNumber !== null) this.set(blockNumber);
    },
  });
}
