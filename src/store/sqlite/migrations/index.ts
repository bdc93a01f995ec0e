/**
 * SQLite schema, in order. Amounts are split into whole points (`_w`) and the fractional
 * remainder in 10^-12 units (`_f`, 0 ≤ f < 10^12): SQLite's 64-bit INTEGER cannot hold 10^18
 * points in 10^-12 units, but the pair can, and the pair still adds inside SQL (see accounts.ts).
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const amount = (prefix: string) =>
  `${prefix}_w INTEGER NOT NULL DEFAULT 0 CHECK (typeof(${prefix}_w) = 'integer' AND ${prefix}_w >= 0),
   ${prefix}_f INTEGER NOT NULL DEFAULT 0 CHECK (typeof(${prefix}_f) = 'integer' AND ${prefix}_f >= 0 AND ${prefix}_f < 1000000000000)`;

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: "ledger",
    sql: `
      CREATE TABLE operators (
        contract TEXT PRIMARY KEY,
        operator TEXT NOT NULL,
        updated_at_ms INTEGER NOT NULL
      ) WITHOUT ROWID;

      CREATE TABLE accounts (
        address TEXT NOT NULL,
        point_type TEXT NOT NULL,
        ${amount("earned")},
        ${amount("received")},
        ${amount("finalized_sent")},
        ${amount("pending")},
        PRIMARY KEY (address, point_type)
      ) WITHOUT ROWID;

      CREATE TABLE credits (
        address TEXT NOT NULL,
        credit_id TEXT NOT NULL,
        point_type TEXT NOT NULL,
        amount_units TEXT NOT NULL,
        created_at_ms INTEGER NOT NULL,
        PRIMARY KEY (address, credit_id)
      ) WITHOUT ROWID;

      CREATE TABLE batches (
        seq INTEGER PRIMARY KEY,
        contract TEXT NOT NULL,
        batch_id TEXT NOT NULL,
        point_type TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('PENDING', 'FINALIZING', 'FINALIZED', 'CANCELLED')),
        ${amount("total")},
        transfer_count INTEGER NOT NULL,
        seconds_to_finalize INTEGER NOT NULL,
        created_at_ms INTEGER NOT NULL,
        finalize_at_ms INTEGER NOT NULL,
        updated_at_ms INTEGER,
        finalized_at_ms INTEGER,
        cancelled_at_ms INTEGER,
        UNIQUE (contract, batch_id)
      );
      CREATE INDEX batches_listing ON batches (contract, created_at_ms, seq);
      CREATE INDEX batches_due ON batches (finalize_at_ms, seq) WHERE status = 'PENDING';

      -- Integer batch key and WITHOUT ROWID: the insert path is the service's bottleneck.
      CREATE TABLE transfers (
        seq INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        to_address TEXT NOT NULL,
        amount_w INTEGER NOT NULL,
        amount_f INTEGER NOT NULL,
        PRIMARY KEY (seq, idx)
      ) WITHOUT ROWID;

      CREATE TABLE challenges (
        challenge_id TEXT PRIMARY KEY,
        contract TEXT NOT NULL,
        operator TEXT NOT NULL,
        message TEXT NOT NULL,
        created_at_ms INTEGER NOT NULL,
        expires_at_ms INTEGER NOT NULL,
        used INTEGER NOT NULL DEFAULT 0
      ) WITHOUT ROWID;

      CREATE TABLE tokens (
        token_hash BLOB PRIMARY KEY,
        contract TEXT NOT NULL,
        operator TEXT NOT NULL,
        created_at_ms INTEGER NOT NULL,
        expires_at_ms INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX tokens_by_contract ON tokens (contract);
    `,
  },
];
