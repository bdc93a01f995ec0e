import { randomUUID } from "node:crypto";
import type { FastifyBaseLogger } from "fastify";
import type { Clock } from "../clock.js";
import type { ChainOperators } from "../chain/operators.js";
import { STATUSES_PER_READ } from "../chain/viem-registry.js";
import type { AddressKey } from "../domain/address.js";
import type { ChainBlock, RegistryStatus } from "../domain/chain.js";
import { JobLoop } from "../job-loop.js";
import type { LedgerStore } from "../store/store.js";

/** Followed contracts read per page (one eth_call each). */
export const FOLLOW_PAGE_CONTRACTS = STATUSES_PER_READ;
/** Pages one pass reads at most (1,000,000 contracts); a larger set is followed over several passes. */
export const MAX_FOLLOW_PAGES_PER_PASS = 1000;

export interface FollowPass {
  /** False while another instance holds the follower's lease. */
  held: boolean;
  block: ChainBlock | null;
  followed: number;
  changed: number;
  reorganised: boolean;
}

/**
 * The chain followed (API.md, Operators on chain): every CHAIN_POLL_SECONDS, the instance that
 * holds the follower's lease (chain_follow) reads the block at the tag, reads what the registry
 * says of every followed contract (each signed in once) at that block, STATUSES_PER_READ at a time
 * (one Multicall3 eth_call where it is deployed, else ten deployless ones), and applies where it differs from what was stored: the operator changed,
 * banned or unbanned (src/ledger/chain-operators.ts). Reads, not logs: a reorganisation at
 * `latest` is followed as any change is (the next read says what the chain now holds), and the
 * stored block (number and hash) tells when one happened, so a read of a block lower than a
 * contract's stored one is applied rather than refused as stale. docs/onchain.md says the choice
 * and docs/performance.md what it costs.
 */
export class ChainFollowJob {
  private readonly token = randomUUID();
  private failing = false;
  private readonly loop = new JobLoop(
    async () => {
      await this.runOnce();
      if (this.failing) this.log.info("the chain answers again");
      this.failing = false;
      return this.pollMs;
    },
    (error) => {
      if (!this.failing) this.log.warn({ err: error }, "following the chain failed; retried every CHAIN_POLL_SECONDS");
      this.failing = true;
      return this.pollMs;
    },
  );

  constructor(
    private readonly store: LedgerStore,
    private readonly chain: ChainOperators,
    private readonly clock: Clock,
    private readonly log: FastifyBaseLogger,
  ) {}

  private get pollMs(): number {
    return Math.round(this.chain.config.pollSeconds * 1000);
  }

  /** Held this long without a pass, the lease passes to another instance. */
  private get leaseMs(): number {
    return 3 * this.pollMs + this.chain.config.timeoutMs;
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  async runOnce(): Promise<FollowPass> {
    const { chainId, registry } = await this.chain.identify();
    const claim = await this.store.claimChainFollow(this.token, this.clock.now(), this.leaseMs);
    if (claim === null) return { held: false, block: null, followed: 0, changed: 0, reorganised: false };
    const block = await this.chain.head();
    const reorganised = await this.reorganised(claim.last, block);
    let followed = 0;
    let changed = 0;
    let after: AddressKey | null = null;
    for (let pages = 0; pages < MAX_FOLLOW_PAGES_PER_PASS; pages++) {
      const page = await this.store.chainFollowedPage(after, FOLLOW_PAGE_CONTRACTS);
      if (page.length === 0) break;
      const statuses = await this.chain.statuses(
        registry,
        page.map((row) => row.contract),
        block,
      );
      for (const [index, row] of page.entries()) {
        const status = statuses[index]!;
        if (sameStatus(row, status)) continue;
        const applied = await this.store.applyChainObservation(row.contract, { ...status, block }, chainId, this.clock.now(), reorganised);
        if (applied === "changed") changed++;
      }
      followed += page.length;
      after = page[page.length - 1]!.contract;
      if (page.length < FOLLOW_PAGE_CONTRACTS) break;
    }
    await this.store.advanceChainFollow(this.token, block, this.clock.now());
    return { held: true, block, followed, changed, reorganised };
  }

  /** Whether the block last followed is no longer on the chain (never at `finalized`). */
  private async reorganised(last: ChainBlock | null, block: ChainBlock): Promise<boolean> {
    if (last === null || this.chain.config.blockTag === "finalized") return false;
    if (block.number < last.number) return true;
    if (block.number === last.number) return block.hash !== last.hash;
    return (await this.chain.reader.blockHash(last.number)) !== last.hash;
  }
}

function sameStatus(stored: RegistryStatus, read: RegistryStatus): boolean {
  return stored.operator === read.operator && stored.banned === read.banned;
}
