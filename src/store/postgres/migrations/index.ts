/**
 * PostgreSQL schema, in order. Amounts are NUMERIC(40,0) counts of 10^-12 point (the same units
 * as the domain's bigint), exact at any size the ledger allows and summed exactly by SQL;
 * timestamps are BIGINT epoch milliseconds, the precision the API prints.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const amount = (column: string) => `${column} NUMERIC(40,0) NOT NULL DEFAULT 0 CHECK (${column} >= 0)`;

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: "ledger",
    sql: `
      CREATE TABLE operators (
        contract TEXT PRIMARY KEY,
        operator TEXT NOT NULL,
        updated_at_ms BIGINT NOT NULL
      );

      -- No CHECK on available ≥ 0: PostgreSQL checks an upsert's proposed row before it finds the
      -- conflict, and finalization proposes (sender, finalized_sent = total) rows (accounts.ts).
      -- Every write that lowers available is guarded in its WHERE clause instead.
      CREATE TABLE accounts (
        address TEXT NOT NULL,
        point_type TEXT NOT NULL,
        ${amount("earned_units")},
        ${amount("received_units")},
        ${amount("finalized_sent_units")},
        ${amount("pending_units")},
        PRIMARY KEY (address, point_type)
      );

      CREATE TABLE credits (
        address TEXT NOT NULL,
        credit_id TEXT NOT NULL,
        point_type TEXT NOT NULL,
        amount_units NUMERIC(40,0) NOT NULL CHECK (amount_units >= 0),
        created_at_ms BIGINT NOT NULL,
        PRIMARY KEY (address, credit_id)
      );

      CREATE TABLE batches (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        contract TEXT NOT NULL,
        batch_id TEXT NOT NULL,
        point_type TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('PENDING', 'FINALIZING', 'FINALIZED', 'CANCELLED')),
        ${amount("total_units")},
        transfer_count INTEGER NOT NULL,
        seconds_to_finalize INTEGER NOT NULL,
        created_at_ms BIGINT NOT NULL,
        finalize_at_ms BIGINT NOT NULL,
        updated_at_ms BIGINT,
        finalized_at_ms BIGINT,
        cancelled_at_ms BIGINT,
        UNIQUE (contract, batch_id)
      );
      CREATE INDEX batches_listing ON batches (contract, created_at_ms, seq);
      CREATE INDEX batches_due ON batches (finalize_at_ms, seq) WHERE status = 'PENDING';

      -- Integer batch key, as on SQLite: the insert path is the service's bottleneck.
      CREATE TABLE transfers (
        seq BIGINT NOT NULL,
        idx INTEGER NOT NULL,
        to_address TEXT NOT NULL,
        amount_units NUMERIC(40,0) NOT NULL CHECK (amount_units >= 0),
        PRIMARY KEY (seq, idx)
      );

      CREATE TABLE challenges (
        challenge_id TEXT PRIMARY KEY,
        contract TEXT NOT NULL,
        operator TEXT NOT NULL,
        message TEXT NOT NULL,
        created_at_ms BIGINT NOT NULL,
        expires_at_ms BIGINT NOT NULL,
        used BOOLEAN NOT NULL DEFAULT false
      );

      CREATE TABLE tokens (
        token_hash BYTEA PRIMARY KEY,
        contract TEXT NOT NULL,
        operator TEXT NOT NULL,
        created_at_ms BIGINT NOT NULL,
        expires_at_ms BIGINT NOT NULL
      );
      CREATE INDEX tokens_by_contract ON tokens (contract);
    `,
  },
];
