import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from "fastify";
import type { Clock } from "../clock.js";
import type { IntakePool } from "./batch-intake.js";
import type { Config } from "../config.js";
import type { Metrics } from "../metrics.js";
import type { LedgerStore } from "../store/store.js";
import type { ChainOperators } from "../chain/operators.js";

/** What every route needs; passed in, never imported globally. */
export interface AppContext {
  config: Config;
  store: LedgerStore;
  clock: Clock;
  metrics: Metrics;
  /** Parses and validates submitted batch bodies, in worker threads beside the writer. */
  intake: IntakePool;
  /** Operators from the chain (CHAIN_RPC_URL); null: an administrator sets them. */
  chain: ChainOperators | null;
}

/** A Fastify instance whose route types come from the TypeBox schemas (params, query, body, response). */
export type ApiInstance = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;
