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
  {
    // A batch whose finalization fails keeps its failure (finalize.ts) and is not claimed again
    // before finalize_retry_at_ms, so it cannot block the batches behind it. The fair claim
    // (batches.ts fairDueBatches) walks the contracts with PENDING batches through
    // batches_pending_by_contract; batches_failing keeps counting failing batches cheap.
    version: 2,
    name: "finalize_failures_and_fair_claim",
    sql: `
      ALTER TABLE batches ADD COLUMN finalize_failures INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE batches ADD COLUMN finalize_retry_at_ms BIGINT;
      ALTER TABLE batches ADD COLUMN finalize_error TEXT;
      CREATE INDEX batches_pending_by_contract ON batches (contract, finalize_at_ms, seq) INCLUDE (finalize_retry_at_ms)
        WHERE status = 'PENDING';
      CREATE INDEX batches_failing ON batches (finalize_retry_at_ms) WHERE status = 'PENDING' AND finalize_retry_at_ms IS NOT NULL;
    `,
  },
  {
    // Credits may name an asset and a block (docs/api.md Administration). asset_earnings holds their
    // sum and highest block per (address, point type, asset), kept in the credit's transaction,
    // so a balance read stays one indexed range however many credits there are. The point_type
    // indexes let pointTypesInUse (point-types.ts) skip from one type to the next, not scan.
    version: 3,
    name: "credit_assets_and_point_type_indexes",
    sql: `
      ALTER TABLE credits ADD COLUMN asset TEXT, ADD COLUMN block BIGINT CHECK (block >= 0);
      CREATE TABLE asset_earnings (
        address TEXT NOT NULL,
        point_type TEXT NOT NULL,
        asset TEXT NOT NULL,
        ${amount("earned_units")},
        max_block BIGINT NOT NULL DEFAULT 0 CHECK (max_block >= 0),
        PRIMARY KEY (address, point_type, asset)
      );
      CREATE INDEX batches_point_type ON batches (point_type);
      CREATE INDEX credits_point_type ON credits (point_type);
    `,
  },
  {
    // The event log (docs/api.md Events), written in the same transaction as each change. Sequence
    // numbers are taken before commit, so a reader ordering by seq alone could pass a number a
    // slower transaction commits later. Each event records its transaction id (xid8); readers
    // return only events of transactions older than every transaction still running
    // (pg_snapshot_xmin) and page by (tx, seq): that order only ever grows at its end, so paging
    // never skips a late commit (events.ts). event_retention: see the SQLite migration.
    version: 4,
    name: "event_log_and_challenge_index",
    sql: `
      CREATE TABLE events (
        seq BIGSERIAL PRIMARY KEY,
        tx xid8 NOT NULL DEFAULT pg_current_xact_id(),
        event_id TEXT NOT NULL UNIQUE,
        type TEXT NOT NULL,
        stream TEXT,
        occurred_at_ms BIGINT NOT NULL,
        data JSONB NOT NULL
      );
      CREATE INDEX events_by_position ON events (tx, seq);
      CREATE INDEX events_by_stream ON events (stream, tx, seq);
      CREATE TABLE event_retention (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        purged_through_tx xid8 NOT NULL,
        purged_through_seq BIGINT NOT NULL
      );
      CREATE INDEX challenges_by_operator ON challenges (contract, operator, created_at_ms);
    `,
  },
  {
    // Webhooks (docs/api.md Webhooks; postgres/webhooks.ts). Secrets are kept as they are: they sign.
    // A delivery holds its own payload (the Event JSON), so sending needs no join to events.
    // webhook_deliveries_pending serves the claim's walk of endpoints and its due scan; the lease
    // (claimed_until_ms, claim_token) keeps one attempt to one sender and expires if it dies.
    version: 5,
    name: "webhooks",
    sql: `
      CREATE TABLE webhook_endpoints (
        id TEXT PRIMARY KEY,
        contract TEXT NOT NULL,
        url TEXT NOT NULL,
        types TEXT[],
        description TEXT,
        disabled BOOLEAN NOT NULL DEFAULT false,
        disabled_reason TEXT,
        secret TEXT NOT NULL,
        previous_secret TEXT,
        previous_secret_expires_at_ms BIGINT,
        created_at_ms BIGINT NOT NULL
      );
      CREATE INDEX webhook_endpoints_by_contract ON webhook_endpoints (contract, created_at_ms);
      CREATE TABLE webhook_deliveries (
        seq BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
        event_id TEXT NOT NULL,
        event_type TEXT NOT NULL,
        payload TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('PENDING', 'SUCCEEDED', 'FAILED')),
        tries INTEGER NOT NULL DEFAULT 0,
        attempts JSONB NOT NULL DEFAULT '[]',
        next_attempt_at_ms BIGINT,
        claimed_until_ms BIGINT,
        claim_token TEXT,
        created_at_ms BIGINT NOT NULL,
        finished_at_ms BIGINT,
        UNIQUE (endpoint_id, event_id)
      );
      CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, seq);
      CREATE INDEX webhook_deliveries_listing ON webhook_deliveries (endpoint_id, status, seq);
      CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (endpoint_id, next_attempt_at_ms) WHERE status = 'PENDING';
      CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at_ms) WHERE status <> 'PENDING';
    `,
  },
  {
    // Snapshots (docs/api.md Snapshots; snapshots.ts). A snapshot row is written last, in one
    // transaction with its snapshot.created event; its leaves and tree nodes are written before
    // it in chunks (a proof reads one leaf chunk and about a dozen node chunks), keyed by the
    // build, so two instances taking the same snapshotId at once never mix their chunks.
    version: 6,
    name: "snapshots",
    sql: `
      CREATE TABLE snapshots (
        id TEXT PRIMARY KEY,
        build_id TEXT NOT NULL UNIQUE,
        point_type TEXT NOT NULL,
        measure TEXT NOT NULL CHECK (measure IN ('available', 'receivedCumulative')),
        decimals INTEGER NOT NULL,
        taken_at_ms BIGINT NOT NULL,
        root TEXT NOT NULL,
        leaf_count INTEGER NOT NULL,
        total_units TEXT NOT NULL
      );
      CREATE TABLE snapshot_leaf_chunks (
        build_id TEXT NOT NULL,
        chunk_no INTEGER NOT NULL,
        first_address TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (build_id, chunk_no)
      );
      CREATE INDEX snapshot_leaf_chunks_by_address ON snapshot_leaf_chunks (build_id, first_address);
      CREATE TABLE snapshot_node_chunks (
        build_id TEXT NOT NULL,
        chunk_no INTEGER NOT NULL,
        data BYTEA NOT NULL,
        PRIMARY KEY (build_id, chunk_no)
      );
    `,
  },
  {
    // Unpublished snapshot builds (snapshots.ts; docs/payouts.md): see the SQLite migration. A
    // chunk write and the purge's marking both lock the build's row, so a build is either given
    // up before its next write (which then fails) or alive again after it (and not given up).
    version: 7,
    name: "snapshot_builds",
    sql: `
      CREATE TABLE snapshot_builds (
        build_id TEXT PRIMARY KEY,
        snapshot_id TEXT,
        last_write_at_ms BIGINT NOT NULL,
        abandoned BOOLEAN NOT NULL DEFAULT false
      );
      INSERT INTO snapshot_builds (build_id, snapshot_id, last_write_at_ms)
        SELECT build_id, NULL, (extract(epoch FROM clock_timestamp()) * 1000)::bigint
        FROM (SELECT build_id FROM snapshot_leaf_chunks UNION SELECT build_id FROM snapshot_node_chunks) AS chunks
        WHERE build_id NOT IN (SELECT build_id FROM snapshots);
    `,
  },
  {
    // Sign-in challenges carry themselves (src/auth/challenge-data.ts): see the SQLite migration.
    // Every instance reads the one challenge key here, so a challenge issued by one is solved at
    // another, and the used nonce's primary key makes it single-use across all of them.
    version: 8,
    name: "sealed_challenges",
    sql: `
      DROP TABLE challenges;
      CREATE TABLE server_keys (
        name TEXT PRIMARY KEY,
        secret BYTEA NOT NULL
      );
      CREATE TABLE used_challenge_nonces (
        nonce TEXT PRIMARY KEY,
        expires_at_ms BIGINT NOT NULL
      );
      CREATE INDEX used_challenge_nonces_by_expiry ON used_challenge_nonces (expires_at_ms);
    `,
  },
  {
    // Fair webhook delivery (issue 19): an endpoint's attempts without an answer in a row, and
    // until when it is held back (src/domain/webhooks.ts endpointBackoffMs). webhook_deliveries_leased
    // lets the claim count the sends in flight per endpoint and contract without a scan: only
    // deliveries claimed and not yet recorded carry a claim token.
    version: 9,
    name: "webhook_fairness",
    sql: `
      ALTER TABLE webhook_endpoints ADD COLUMN timeouts_in_row INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE webhook_endpoints ADD COLUMN backoff_until_ms BIGINT;
      CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (endpoint_id, claimed_until_ms) WHERE claim_token IS NOT NULL;
    `,
  },
  {
    // Who did what (API.md Events, actor): the actor of each event, who submitted and who
    // cancelled each batch, as the domain's Actor (addresses lowercase, as stored everywhere).
    // Rows written before this were not recorded: they get the system actor, the one answer that
    // claims nothing about a person (an operator then could have been the console, a script or
    // the CLI). ADD COLUMN with a constant default is a catalog change since PostgreSQL 11: no
    // table rewrite, so the lock is brief on a large database. A cancelled batch's cancelled_by
    // stays NULL here and is read as the system actor (rows.ts), so no row is rewritten either.
    version: 10,
    name: "actors",
    sql: `
      ALTER TABLE events ADD COLUMN actor JSONB NOT NULL DEFAULT '{"type":"system"}'::jsonb;
      ALTER TABLE batches ADD COLUMN submitted_by JSONB NOT NULL DEFAULT '{"type":"system"}'::jsonb;
      ALTER TABLE batches ADD COLUMN cancelled_by JSONB;
    `,
  },
  {
    // API keys for backends (issue 21): see the SQLite migration.
    version: 11,
    name: "api_keys",
    sql: `
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        contract TEXT NOT NULL,
        name TEXT NOT NULL,
        scopes TEXT NOT NULL,
        prefix TEXT NOT NULL,
        secret_hash BYTEA NOT NULL UNIQUE,
        created_at_ms BIGINT NOT NULL,
        created_by TEXT NOT NULL,
        created_by_operator TEXT,
        expires_at_ms BIGINT,
        last_used_at_ms BIGINT,
        revoked_at_ms BIGINT,
        revoked_reason TEXT CHECK (revoked_reason IN ('revoked', 'operator_changed')),
        CHECK ((revoked_at_ms IS NULL) = (revoked_reason IS NULL))
      );
      CREATE INDEX api_keys_by_contract ON api_keys (contract, created_at_ms);
      CREATE INDEX api_keys_unrevoked ON api_keys (contract, created_by_operator) WHERE revoked_at_ms IS NULL;
    `,
  },
  {
    // Leaderboards and history (issue 22): see the SQLite migration. Amounts are NUMERIC(40,0) as
    // in accounts (cumulative columns).
    version: 12,
    name: "leaderboards_and_history",
    sql: `
      CREATE TABLE leaderboard_entries (
        contract TEXT NOT NULL,
        point_type TEXT NOT NULL,
        address TEXT NOT NULL,
        ${amount("points_units")},
        PRIMARY KEY (contract, point_type, address)
      );
      CREATE INDEX leaderboard_ranking ON leaderboard_entries (contract, point_type, points_units DESC, address);
      CREATE TABLE leaderboard_bands (
        contract TEXT NOT NULL,
        point_type TEXT NOT NULL,
        band INTEGER NOT NULL,
        entries BIGINT NOT NULL CHECK (entries >= 0),
        PRIMARY KEY (contract, point_type, band)
      );
      CREATE TABLE received_history (
        address TEXT NOT NULL,
        point_type TEXT NOT NULL,
        finalized_at_ms BIGINT NOT NULL,
        contract TEXT NOT NULL,
        ${amount("amount_units")},
        PRIMARY KEY (address, point_type, finalized_at_ms, contract)
      );
      CREATE TABLE history_backfill (seq BIGINT PRIMARY KEY);
      INSERT INTO history_backfill (seq) SELECT seq FROM batches WHERE status = 'FINALIZED';
      CREATE INDEX batches_finalized ON batches (contract, point_type, finalized_at_ms) WHERE status = 'FINALIZED';
      ALTER TABLE snapshots ADD COLUMN as_of_ms BIGINT;
    `,
  },
  {
    // What a finalization writes per transfer, made smaller (docs/performance.md "Leaderboards and
    // history"; the SQLite migration 15 does the same): version 12's board keyed every entry and
    // every ranking-index row by the contract and the address as text, and received_history grew
    // a row per transfer at a random place. Each finalization then dirtied pages all over three
    // large B-trees, and its commit wrote them. Now a board is an integer (boards), an entry's
    // address its 20 bytes (board_entries, its ranking index and bands as before), and receipts
    // are kept per address, point type, contract and UTC day in place (received_daily), with the
    // day's first and last receipt times: a time between them is answered from that day's batches
    // (history.ts). boards.board is drawn only when a board is missing (leaderboards.ts boardId),
    // not on every upsert, so INTEGER lasts. The old tables (and version 12's ranking index with
    // them) are dropped and every FINALIZED batch is listed for the history job again, which
    // rebuilds the new ones in bounded steps through the same flow (reads answer 503 until it is done).
    // received_daily leaves 30 % of each page free: its updates change no indexed column, so they
    // can stay on their page (HOT) instead of adding a primary-key entry per receipt (store-level
    // finalize 42 → 35 µs a transfer in a quick try).
    version: 13,
    name: "compact_boards_and_daily_receipts",
    sql: `
      DROP TABLE leaderboard_entries, leaderboard_bands, received_history;
      CREATE TABLE boards (
        board INTEGER GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        contract TEXT NOT NULL,
        point_type TEXT NOT NULL,
        UNIQUE (contract, point_type)
      );
      CREATE TABLE board_entries (
        board INTEGER NOT NULL,
        address BYTEA NOT NULL CHECK (octet_length(address) = 20),
        ${amount("points_units")},
        PRIMARY KEY (board, address)
      );
      CREATE INDEX board_ranking ON board_entries (board, points_units DESC, address);
      CREATE TABLE board_bands (
        board INTEGER NOT NULL,
        band INTEGER NOT NULL,
        entries BIGINT NOT NULL CHECK (entries >= 0),
        PRIMARY KEY (board, band)
      );
      CREATE TABLE received_daily (
        address TEXT NOT NULL,
        point_type TEXT NOT NULL,
        day_ms BIGINT NOT NULL,
        contract TEXT NOT NULL,
        first_at_ms BIGINT NOT NULL,
        last_at_ms BIGINT NOT NULL,
        ${amount("amount_units")},
        PRIMARY KEY (address, point_type, day_ms, contract)
      ) WITH (fillfactor = 70);
      DELETE FROM history_backfill;
      INSERT INTO history_backfill (seq) SELECT seq FROM batches WHERE status = 'FINALIZED';
    `,
  },
  {
    // Window boards (src/store/ports/leaderboards.ts; the SQLite migration 16 does the same): a
    // window (ended or open) read like the all-time board, from tables of the board tables' shape
    // keyed by window_id (\`window\` is reserved in PostgreSQL). window_id is never reused, so the
    // entries of a dropped window board can be deleted by it in steps while a new board of the
    // same window is built: only one row per (board, window) is kept (not 'dropping') at a time.
    // from_ms is Number.MIN_SAFE_INTEGER for a window without \`from\`, to_ms MAX_SAFE_INTEGER
    // for one without \`to\`. window_batches lists the batches a window board holds (so a batch
    // finalized late into its window is found and added) and \`batches\` counts them (so a read
    // compares it with one count of the window's FINALIZED batches). boards.finalized_batches
    // counts the batches finalizations added to the board, and seen_finalized is that count when
    // the window job last found the window board complete: while they are equal nothing needs
    // counting.
    version: 14,
    name: "window_boards",
    sql: `
      CREATE TABLE window_boards (
        window_id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        board INTEGER NOT NULL,
        from_ms BIGINT NOT NULL,
        to_ms BIGINT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('building', 'ready', 'dropping')),
        batches BIGINT NOT NULL DEFAULT 0,
        seen_finalized BIGINT NOT NULL DEFAULT -1,
        created_at_ms BIGINT NOT NULL
      );
      ALTER TABLE boards ADD COLUMN finalized_batches BIGINT NOT NULL DEFAULT 0;
      CREATE UNIQUE INDEX window_boards_kept ON window_boards (board, from_ms, to_ms) WHERE state <> 'dropping';
      CREATE TABLE window_batches (window_id BIGINT NOT NULL, seq BIGINT NOT NULL, PRIMARY KEY (window_id, seq));
      CREATE TABLE window_entries (
        window_id BIGINT NOT NULL,
        address BYTEA NOT NULL CHECK (octet_length(address) = 20),
        ${amount("points_units")},
        PRIMARY KEY (window_id, address)
      );
      CREATE INDEX window_ranking ON window_entries (window_id, points_units DESC, address);
      CREATE TABLE window_bands (
        window_id BIGINT NOT NULL,
        band INTEGER NOT NULL,
        entries BIGINT NOT NULL CHECK (entries >= 0),
        PRIMARY KEY (window_id, band)
      );
    `,
  },
  {
    // The read models become a projection applied after the finalization (src/ledger/projection.ts;
    // the SQLite migration 17 does the same): the finalization writes one projection_queue row per
    // batch instead of its transfers into the boards and received_daily. projection_state holds how
    // far the projection has applied (through_ms) and the fence finalizations stamp after
    // (fence_ms; a finalization reads it FOR SHARE, a pass raises it FOR UPDATE, so no batch
    // commits at or before a through already answered). The boards, receipts and window boards are
    // rebuilt by the projection: every FINALIZED batch is queued once here, which also replaces
    // history_backfill. A window board remembers where the projection stood when it was asked for
    // (built_through_ms): the window job adds the window's batches up to there, the passes the later
    // ones; seen_finalized (the lag detector of version 14) has nothing left to detect.
    version: 15,
    name: "read_models_as_a_projection",
    sql: `
      CREATE TABLE projection_queue (
        finalized_at_ms BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        PRIMARY KEY (finalized_at_ms, seq)
      );
      CREATE TABLE projection_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        through_ms BIGINT NOT NULL,
        fence_ms BIGINT NOT NULL
      );
      INSERT INTO projection_state (id, through_ms, fence_ms) VALUES (1, 0, 0);
      TRUNCATE board_entries, board_bands, received_daily, window_entries, window_bands, window_batches, window_boards;
      UPDATE boards SET finalized_batches = 0;
      ALTER TABLE window_boards ADD COLUMN built_through_ms BIGINT NOT NULL DEFAULT 0, DROP COLUMN seen_finalized;
      INSERT INTO projection_queue (finalized_at_ms, seq) SELECT finalized_at_ms, seq FROM batches WHERE status = 'FINALIZED';
      DROP TABLE history_backfill;
    `,
  },
  {
    // The transparency log (src/ledger/transparency-log.ts; the SQLite migration 18 does the same):
    // tiles of the Merkle tree, the log's position in the event log's (tx, seq) order, its size and
    // latest signed checkpoint, and each event's log_index once logged (no index on it: the column
    // is written once per event and stays a HOT update).
    version: 16,
    name: "transparency_log",
    sql: `
      ALTER TABLE events ADD COLUMN log_index BIGINT;
      CREATE TABLE log_tiles (
        tile_level INTEGER NOT NULL,
        tile_index BIGINT NOT NULL,
        hashes BYTEA NOT NULL CHECK (octet_length(hashes) BETWEEN 32 AND 8192 AND octet_length(hashes) % 32 = 0),
        PRIMARY KEY (tile_level, tile_index)
      );
      CREATE TABLE log_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        size BIGINT NOT NULL,
        position_tx xid8 NOT NULL,
        position_seq BIGINT NOT NULL,
        checkpoint_size BIGINT,
        checkpoint_root BYTEA,
        checkpoint_note TEXT,
        checkpoint_at_ms BIGINT
      );
      INSERT INTO log_state (id, size, position_tx, position_seq) VALUES (1, 0, '0', 0);
    `,
  },
  {
    // The transparency log's tiles keep their complete inner nodes of heights 4–7 (domain/tlog.ts
    // innerNodes, ≤ 30 hashes), as SQLite's version 20: a proof reads them instead of hashing up to
    // 255 hashes a tile. Tiles written before keep NULL and are hashed from their bottom row.
    version: 17,
    name: "log_tile_inner_nodes",
    sql: `
      ALTER TABLE log_tiles ADD COLUMN inner_nodes BYTEA
        CHECK (inner_nodes IS NULL OR (octet_length(inner_nodes) <= 960 AND octet_length(inner_nodes) % 32 = 0));
    `,
  },
  {
    // The transparency log's identity and epochs (docs/transparency.md, issue 37): the origin and
    // verifier key that sign it (start-up refuses others unless \`log rotate-key\` records the change),
    // its epoch (a restored copy starts a new one, announced by a note the previous key signs), and
    // whether the next start must begin one (\`log new-epoch\` after a pg_restore sets it).
    version: 18,
    name: "log_identity_and_epochs",
    sql: `
      ALTER TABLE log_state ADD COLUMN origin TEXT, ADD COLUMN verifier_key TEXT,
        ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0, ADD COLUMN new_epoch_due BOOLEAN NOT NULL DEFAULT false;
      CREATE TABLE log_epochs (epoch INTEGER PRIMARY KEY, origin TEXT NOT NULL, note TEXT NOT NULL, started_at_ms BIGINT NOT NULL);
    `,
  },
  {
    // Publishers (API.md, Events to a message broker; store/postgres/publishers.ts): one row per
    // broker kind, its position the last event the broker acknowledged, and the lease that lets one
    // instance publish at a time.
    version: 19,
    name: "publishers",
    sql: `
      CREATE TABLE publishers (
        kind TEXT PRIMARY KEY CHECK (kind IN ('nats', 'amqp')),
        position_tx xid8 NOT NULL,
        position_seq BIGINT NOT NULL,
        last_event_id TEXT,
        state TEXT NOT NULL CHECK (state IN ('ok', 'retrying', 'stopped')),
        last_error TEXT,
        published_at_ms BIGINT,
        lease_token TEXT,
        lease_until_ms BIGINT
      );
    `,
  },
  {
    // When the last backup completed (store/postgres/backups.ts): backup --record writes it after
    // an operator's pg_dump or pgBackRest run; /metrics exports it for PointsLedgerBackupTooOld.
    version: 20,
    name: "backup_state",
    sql: `CREATE TABLE backup_state (id INTEGER PRIMARY KEY CHECK (id = 1), last_success_at_ms BIGINT NOT NULL);`,
  },
  {
    // Operators on chain (API.md; store/postgres/chain.ts): what the operator registry said of each
    // followed contract and at which block (a read older than the stored one changes nothing), and
    // the follower's row: the last block it read at, and the lease that lets one instance follow.
    version: 21,
    name: "chain_operators",
    sql: `
      CREATE TABLE chain_operators (
        contract TEXT PRIMARY KEY,
        operator TEXT,
        banned BOOLEAN NOT NULL,
        block_number BIGINT NOT NULL,
        block_hash TEXT NOT NULL,
        read_at_ms BIGINT NOT NULL
      );
      CREATE TABLE chain_follow (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        block_number BIGINT,
        block_hash TEXT,
        read_at_ms BIGINT,
        lease_token TEXT,
        lease_until_ms BIGINT
      );
      INSERT INTO chain_follow (id) VALUES (1);
    `,
  },
];
