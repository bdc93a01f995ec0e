/**
 * SQLite schema, in order. Amounts are split into whole points (`_w`) and the fractional
 * remainder in 10^-12 units (`_f`, 0 ≤ f < 10^12): SQLite's 64-bit INTEGER cannot hold 10^18
 * points in 10^-12 units, but the pair can, and the pair still adds inside SQL (see accounts.ts).
 */
/** 10^18: whole points per `_q` unit of a cumulative column (same as sqlite/db.ts WHOLE_POINTS_PER_Q). */
const WHOLE_POINTS_PER_Q = "1000000000000000000";
const UNITS_PER_POINT = "1000000000000";

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const amount = (prefix: string) =>
  `${prefix}_w INTEGER NOT NULL DEFAULT 0 CHECK (typeof(${prefix}_w) = 'integer' AND ${prefix}_w >= 0),
   ${prefix}_f INTEGER NOT NULL DEFAULT 0 CHECK (typeof(${prefix}_f) = 'integer' AND ${prefix}_f >= 0 AND ${prefix}_f < 1000000000000)`;

/**
 * domain/leaderboard.ts rankBandOf of an entry's (q, w, f) triple (`row`: new or old in a
 * trigger): its decimal digits × 100 plus its first two digits, read off the highest limb that is
 * not zero (a one-digit limb takes its second digit from the next limb, zero-padded). No printf
 * of the whole amount: this runs for every row a finalization ranks.
 */
export const rankBand = (row: string) => {
  const [q, w, f] = [`${row}.points_q`, `${row}.points_w`, `${row}.points_f`];
  return `(CASE
    WHEN ${q} > 0 THEN (length(${q}) + 30) * 100 + (CASE WHEN ${q} >= 10 THEN CAST(substr(${q}, 1, 2) AS INTEGER) ELSE ${q} * 10 + ${w} / 100000000000000000 END)
    WHEN ${w} > 0 THEN (length(${w}) + 12) * 100 + (CASE WHEN ${w} >= 10 THEN CAST(substr(${w}, 1, 2) AS INTEGER) ELSE ${w} * 10 + ${f} / 100000000000 END)
    ELSE length(${f}) * 100 + CAST(substr(${f}, 1, 2) AS INTEGER) END)`;
};

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
  {
    // One row that /readyz rewrites (sqlite/db.ts probeWrites): readiness means "accepts writes".
    version: 2,
    name: "readiness_probe",
    sql: `
      CREATE TABLE readiness_probe (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        probed_at_ms INTEGER NOT NULL
      );
    `,
  },
  {
    // Points issued per point type, so a credit past MAX_SUPPLY_UNITS is refused and every
    // balance and batch stays within 10^18 points. Cumulative received/sent counters still grow
    // without bound (points passed back and forth), so they get a third limb `_q` counting 10^18
    // whole points; `_w` stays at most 10^18 (the carry is computed in accounts.ts).
    version: 3,
    name: "point_supply_and_cumulative_limbs",
    sql: `
      ALTER TABLE accounts ADD COLUMN received_q INTEGER NOT NULL DEFAULT 0 CHECK (typeof(received_q) = 'integer' AND received_q >= 0);
      ALTER TABLE accounts ADD COLUMN finalized_sent_q INTEGER NOT NULL DEFAULT 0 CHECK (typeof(finalized_sent_q) = 'integer' AND finalized_sent_q >= 0);
      UPDATE accounts SET
        received_q = received_w / ${WHOLE_POINTS_PER_Q}, received_w = received_w % ${WHOLE_POINTS_PER_Q},
        finalized_sent_q = finalized_sent_w / ${WHOLE_POINTS_PER_Q}, finalized_sent_w = finalized_sent_w % ${WHOLE_POINTS_PER_Q}
      WHERE received_w >= ${WHOLE_POINTS_PER_Q} OR finalized_sent_w >= ${WHOLE_POINTS_PER_Q};

      CREATE TABLE point_supply (
        point_type TEXT PRIMARY KEY,
        ${amount("issued")}
      ) WITHOUT ROWID;
      INSERT INTO point_supply (point_type, issued_w, issued_f)
        SELECT point_type, sum(earned_w) + sum(earned_f) / ${UNITS_PER_POINT}, sum(earned_f) % ${UNITS_PER_POINT}
        FROM accounts GROUP BY point_type;
    `,
  },
  {
    // A batch whose finalization fails keeps its failure (finalize.ts) and is not claimed again
    // before finalize_retry_at_ms, so it cannot block the batches behind it. The fair claim
    // (batches.ts fairDueBatches) walks the contracts with PENDING batches through
    // batches_pending_by_contract; batches_failing keeps counting failing batches cheap.
    version: 4,
    name: "finalize_failures_and_fair_claim",
    sql: `
      ALTER TABLE batches ADD COLUMN finalize_failures INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE batches ADD COLUMN finalize_retry_at_ms INTEGER;
      ALTER TABLE batches ADD COLUMN finalize_error TEXT;
      CREATE INDEX batches_pending_by_contract ON batches (contract, finalize_at_ms, seq, finalize_retry_at_ms) WHERE status = 'PENDING';
      CREATE INDEX batches_failing ON batches (finalize_retry_at_ms) WHERE status = 'PENDING' AND finalize_retry_at_ms IS NOT NULL;
    `,
  },
  {
    // Credits may name an asset and a block (docs/api.md Administration). asset_earnings holds their
    // sum and highest block per (address, point type, asset), kept in the credit's transaction,
    // so a balance read stays one indexed range however many credits there are. The point_type
    // indexes let pointTypesInUse (point-types.ts) skip from one type to the next, not scan.
    version: 5,
    name: "credit_assets_and_point_type_indexes",
    sql: `
      ALTER TABLE credits ADD COLUMN asset TEXT;
      ALTER TABLE credits ADD COLUMN block INTEGER CHECK (block IS NULL OR (typeof(block) = 'integer' AND block >= 0));
      CREATE TABLE asset_earnings (
        address TEXT NOT NULL,
        point_type TEXT NOT NULL,
        asset TEXT NOT NULL,
        ${amount("earned")},
        max_block INTEGER NOT NULL DEFAULT 0 CHECK (typeof(max_block) = 'integer' AND max_block >= 0),
        PRIMARY KEY (address, point_type, asset)
      ) WITHOUT ROWID;
      CREATE INDEX batches_point_type ON batches (point_type);
      CREATE INDEX credits_point_type ON credits (point_type);
    `,
  },
  {
    // The event log (docs/api.md Events), written in the same transaction as each change. One writer:
    // seq order is commit order, so seq alone is the cursor. events_by_stream serves a contract's
    // stream; the admin listing walks seq. event_retention remembers how far purging went, so an
    // older cursor is told 410 CURSOR_EXPIRED instead of silently skipping events.
    version: 6,
    name: "event_log_and_challenge_index",
    sql: `
      CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        event_id TEXT NOT NULL UNIQUE,
        type TEXT NOT NULL,
        stream TEXT,
        occurred_at_ms INTEGER NOT NULL,
        data TEXT NOT NULL
      );
      CREATE INDEX events_by_stream ON events (stream, seq);
      CREATE TABLE event_retention (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        purged_through_seq INTEGER NOT NULL
      );
      CREATE INDEX challenges_by_operator ON challenges (contract, operator, created_at_ms);
    `,
  },
  {
    // Webhooks (docs/api.md Webhooks; sqlite/webhooks.ts). Secrets are kept as they are: they sign.
    // A delivery holds its own payload (the Event JSON), so sending needs no join to events.
    // webhook_deliveries_pending serves the claim's walk of endpoints and its due scan; the lease
    // (claimed_until_ms, claim_token) keeps one attempt to one sender and expires if it dies.
    version: 7,
    name: "webhooks",
    sql: `
      CREATE TABLE webhook_endpoints (
        id TEXT PRIMARY KEY,
        contract TEXT NOT NULL,
        url TEXT NOT NULL,
        types TEXT,
        description TEXT,
        disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
        disabled_reason TEXT,
        secret TEXT NOT NULL,
        previous_secret TEXT,
        previous_secret_expires_at_ms INTEGER,
        created_at_ms INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX webhook_endpoints_by_contract ON webhook_endpoints (contract, created_at_ms);
      CREATE TABLE webhook_deliveries (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
        event_id TEXT NOT NULL,
        event_type TEXT NOT NULL,
        payload TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('PENDING', 'SUCCEEDED', 'FAILED')),
        tries INTEGER NOT NULL DEFAULT 0,
        attempts TEXT NOT NULL DEFAULT '[]',
        next_attempt_at_ms INTEGER,
        claimed_until_ms INTEGER,
        claim_token TEXT,
        created_at_ms INTEGER NOT NULL,
        finished_at_ms INTEGER,
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
    version: 8,
    name: "snapshots",
    sql: `
      CREATE TABLE snapshots (
        id TEXT PRIMARY KEY,
        build_id TEXT NOT NULL UNIQUE,
        point_type TEXT NOT NULL,
        measure TEXT NOT NULL CHECK (measure IN ('available', 'receivedCumulative')),
        decimals INTEGER NOT NULL,
        taken_at_ms INTEGER NOT NULL,
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
        data BLOB NOT NULL,
        PRIMARY KEY (build_id, chunk_no)
      );
    `,
  },
  {
    // Unpublished snapshot builds (snapshots.ts; docs/payouts.md). A build registers here before
    // its first chunk, touches last_write_at_ms with every chunk write and is removed in the
    // transaction that publishes it. One that stops writing (its process died) or gives up is
    // abandoned, and the purge job deletes its chunks in bounded steps; a build marked abandoned
    // can neither write nor publish again. Chunks a version without this table left behind
    // unpublished are registered here as of this migration (snapshot_id unknown: NULL), so they
    // are purged in their turn, an hour later.
    version: 9,
    name: "snapshot_builds",
    sql: `
      CREATE TABLE snapshot_builds (
        build_id TEXT PRIMARY KEY,
        snapshot_id TEXT,
        last_write_at_ms INTEGER NOT NULL,
        abandoned INTEGER NOT NULL DEFAULT 0 CHECK (abandoned IN (0, 1))
      ) WITHOUT ROWID;
      INSERT INTO snapshot_builds (build_id, snapshot_id, last_write_at_ms)
        SELECT build_id, NULL, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
        FROM (SELECT build_id FROM snapshot_leaf_chunks UNION SELECT build_id FROM snapshot_node_chunks)
        WHERE build_id NOT IN (SELECT build_id FROM snapshots);
    `,
  },
  {
    // Sign-in challenges carry themselves (src/auth/challenge-data.ts): issuing one stores nothing,
    // so strangers asking for them use up nothing of an operator's. What is stored instead: the key
    // that seals them (one row of server_keys, written by the first process that needs it; auth.ts;
    // the events cursor's root key is another row, src/http/cursor-key.ts), and the
    // nonce of each challenge someone tried to solve, until it expires (single use). Pending
    // challenges of the old table are dropped: their holders ask for a new one.
    version: 10,
    name: "sealed_challenges",
    sql: `
      DROP TABLE challenges;
      CREATE TABLE server_keys (
        name TEXT PRIMARY KEY,
        secret BLOB NOT NULL
      ) WITHOUT ROWID;
      CREATE TABLE used_challenge_nonces (
        nonce TEXT PRIMARY KEY,
        expires_at_ms INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX used_challenge_nonces_by_expiry ON used_challenge_nonces (expires_at_ms);
    `,
  },
  {
    // Fair webhook delivery (issue 19): an endpoint's attempts without an answer in a row, and
    // until when it is held back (src/domain/webhooks.ts endpointBackoffMs). webhook_deliveries_leased
    // lets the claim count the sends in flight per endpoint and contract without a scan: only
    // deliveries claimed and not yet recorded carry a claim token.
    version: 11,
    name: "webhook_fairness",
    sql: `
      ALTER TABLE webhook_endpoints ADD COLUMN timeouts_in_row INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE webhook_endpoints ADD COLUMN backoff_until_ms INTEGER;
      CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (endpoint_id, claimed_until_ms) WHERE claim_token IS NOT NULL;
    `,
  },
  {
    // Who did what (API.md Events, actor): the actor of each event, who submitted and who
    // cancelled each batch, as JSON text of the domain's Actor (addresses lowercase, as stored
    // everywhere). Rows written before this were not recorded: they get the system actor, the
    // one answer that claims nothing about a person (an operator then could have been the
    // console, a script or the CLI). A cancelled batch's cancelled_by stays NULL here and is read
    // as the system actor (rows.ts), so no row is rewritten. ADD COLUMN with a constant default
    // only changes the schema on SQLite: instant on a large database.
    version: 12,
    name: "actors",
    sql: `
      ALTER TABLE events ADD COLUMN actor TEXT NOT NULL DEFAULT '{"type":"system"}';
      ALTER TABLE batches ADD COLUMN submitted_by TEXT NOT NULL DEFAULT '{"type":"system"}';
      ALTER TABLE batches ADD COLUMN cancelled_by TEXT;
    `,
  },
  {
    // API keys for backends (issue 21; API.md "API keys (backends)"). Only the secret's HMAC is
    // stored (src/auth/api-keys.ts), unique so a presented secret is found by one index read.
    // created_by_operator names the operator that created a key (NULL: the admin), so an operator
    // change revokes exactly its keys; api_keys_unrevoked counts a contract's live keys for the
    // MAX_API_KEYS limit. Scopes are comma-separated names, created_by an actor as JSON.
    version: 13,
    name: "api_keys",
    sql: `
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        contract TEXT NOT NULL,
        name TEXT NOT NULL,
        scopes TEXT NOT NULL,
        prefix TEXT NOT NULL,
        secret_hash BLOB NOT NULL UNIQUE,
        created_at_ms INTEGER NOT NULL,
        created_by TEXT NOT NULL,
        created_by_operator TEXT,
        expires_at_ms INTEGER,
        last_used_at_ms INTEGER,
        revoked_at_ms INTEGER,
        revoked_reason TEXT CHECK (revoked_reason IN ('revoked', 'operator_changed')),
        CHECK ((revoked_at_ms IS NULL) = (revoked_reason IS NULL))
      ) WITHOUT ROWID;
      CREATE INDEX api_keys_by_contract ON api_keys (contract, created_at_ms);
      CREATE INDEX api_keys_unrevoked ON api_keys (contract, created_by_operator) WHERE revoked_at_ms IS NULL;
    `,
  },
  {
    // Leaderboards and history (issue 22; API.md "Leaderboards and history", src/store/ports/
    // leaderboards.ts). Kept in each finalization's transaction: leaderboard_entries (the points a
    // contract's finalized transfers sent each address, indexed in board order), leaderboard_bands
    // (entries per rank band: a rank is a few hundred band rows plus one band's range, not a count
    // of the board; kept by triggers on leaderboard_entries, per row, only when a band changes) and received_history (an address's receipts by time: its balance as of a
    // time is one range). Windows read the window's FINALIZED batches through batches_finalized and
    // their transfers. history_backfill lists the batches finalized before this migration: the
    // history job adds them in bounded steps (copying their seqs here is one pass over batches,
    // not transfers). snapshots.as_of_ms: the time a snapshot measured, NULL when taken as it stood.
    version: 14,
    name: "leaderboards_and_history",
    sql: `
      CREATE TABLE leaderboard_entries (
        contract TEXT NOT NULL,
        point_type TEXT NOT NULL,
        address TEXT NOT NULL,
        points_q INTEGER NOT NULL DEFAULT 0 CHECK (typeof(points_q) = 'integer' AND points_q >= 0),
        ${amount("points")},
        PRIMARY KEY (contract, point_type, address)
      ) WITHOUT ROWID;
      CREATE INDEX leaderboard_ranking ON leaderboard_entries (contract, point_type, points_q DESC, points_w DESC, points_f DESC, address);
      CREATE TABLE leaderboard_bands (
        contract TEXT NOT NULL,
        point_type TEXT NOT NULL,
        band INTEGER NOT NULL,
        entries INTEGER NOT NULL CHECK (entries >= 0),
        PRIMARY KEY (contract, point_type, band)
      ) WITHOUT ROWID;
      CREATE TABLE received_history (
        address TEXT NOT NULL,
        point_type TEXT NOT NULL,
        finalized_at_ms INTEGER NOT NULL,
        contract TEXT NOT NULL,
        amount_q INTEGER NOT NULL DEFAULT 0 CHECK (typeof(amount_q) = 'integer' AND amount_q >= 0),
        ${amount("amount")},
        PRIMARY KEY (address, point_type, finalized_at_ms, contract)
      ) WITHOUT ROWID;
      CREATE TRIGGER leaderboard_bands_on_insert AFTER INSERT ON leaderboard_entries BEGIN
        INSERT INTO leaderboard_bands (contract, point_type, band, entries) VALUES (new.contract, new.point_type, ${rankBand("new")}, 1)
          ON CONFLICT (contract, point_type, band) DO UPDATE SET entries = entries + 1;
      END;
      CREATE TRIGGER leaderboard_bands_on_update AFTER UPDATE ON leaderboard_entries WHEN ${rankBand("old")} <> ${rankBand("new")} BEGIN
        UPDATE leaderboard_bands SET entries = entries - 1
          WHERE contract = old.contract AND point_type = old.point_type AND band = ${rankBand("old")};
        INSERT INTO leaderboard_bands (contract, point_type, band, entries) VALUES (new.contract, new.point_type, ${rankBand("new")}, 1)
          ON CONFLICT (contract, point_type, band) DO UPDATE SET entries = entries + 1;
      END;
      CREATE TABLE history_backfill (seq INTEGER PRIMARY KEY);
      INSERT INTO history_backfill (seq) SELECT seq FROM batches WHERE status = 'FINALIZED';
      CREATE INDEX batches_finalized ON batches (contract, point_type, finalized_at_ms) WHERE status = 'FINALIZED';
      ALTER TABLE snapshots ADD COLUMN as_of_ms INTEGER;
    `,
  },
  {
    // What a finalization writes per transfer, made smaller (docs/performance.md "Leaderboards and
    // history"): version 14's board keyed every entry and every ranking-index row by the contract
    // and the address as text (about 110 bytes a row), and received_history grew a row per transfer
    // at a random place. Each finalization then dirtied pages all over three large B-trees, and
    // its commit wrote them: a finalize drain ran at a sixteenth of its rate without the boards.
    // Now a board is an integer (boards), an entry's address its 20 bytes (board_entries, its
    // ranking index and bands as before), and receipts are kept per address (its 20 bytes), board
    // and UTC day in place (received_daily), with the day's first and last receipt times: a time
    // between them is answered from that day's batches (history.ts). The old tables are dropped
    // and every FINALIZED batch is listed for the history job again, which rebuilds the new ones
    // in bounded steps through the same flow (reads answer 503 until it is done).
    version: 15,
    name: "compact_boards_and_daily_receipts",
    sql: `
      DROP TRIGGER leaderboard_bands_on_insert;
      DROP TRIGGER leaderboard_bands_on_update;
      DROP TABLE leaderboard_entries;
      DROP TABLE leaderboard_bands;
      DROP TABLE received_history;
      CREATE TABLE boards (
        board INTEGER PRIMARY KEY,
        contract TEXT NOT NULL,
        point_type TEXT NOT NULL,
        UNIQUE (contract, point_type)
      );
      CREATE TABLE board_entries (
        board INTEGER NOT NULL,
        address BLOB NOT NULL CHECK (length(address) = 20),
        points_q INTEGER NOT NULL DEFAULT 0 CHECK (typeof(points_q) = 'integer' AND points_q >= 0),
        ${amount("points")},
        PRIMARY KEY (board, address)
      ) WITHOUT ROWID;
      CREATE INDEX board_ranking ON board_entries (board, points_q DESC, points_w DESC, points_f DESC, address);
      CREATE TABLE board_bands (
        board INTEGER NOT NULL,
        band INTEGER NOT NULL,
        entries INTEGER NOT NULL CHECK (entries >= 0),
        PRIMARY KEY (board, band)
      ) WITHOUT ROWID;
      CREATE TRIGGER board_bands_on_insert AFTER INSERT ON board_entries BEGIN
        INSERT INTO board_bands (board, band, entries) VALUES (new.board, ${rankBand("new")}, 1)
          ON CONFLICT (board, band) DO UPDATE SET entries = entries + 1;
      END;
      CREATE TRIGGER board_bands_on_update AFTER UPDATE ON board_entries WHEN ${rankBand("old")} <> ${rankBand("new")} BEGIN
        UPDATE board_bands SET entries = entries - 1 WHERE board = old.board AND band = ${rankBand("old")};
        INSERT INTO board_bands (board, band, entries) VALUES (new.board, ${rankBand("new")}, 1)
          ON CONFLICT (board, band) DO UPDATE SET entries = entries + 1;
      END;
      CREATE TABLE received_daily (
        address BLOB NOT NULL CHECK (length(address) = 20),
        board INTEGER NOT NULL,
        day_ms INTEGER NOT NULL,
        first_at_ms INTEGER NOT NULL,
        last_at_ms INTEGER NOT NULL,
        amount_q INTEGER NOT NULL DEFAULT 0 CHECK (typeof(amount_q) = 'integer' AND amount_q >= 0),
        ${amount("amount")},
        PRIMARY KEY (address, board, day_ms)
      ) WITHOUT ROWID;
      DELETE FROM history_backfill;
      INSERT INTO history_backfill (seq) SELECT seq FROM batches WHERE status = 'FINALIZED';
    `,
  },
  {
    // Window boards (src/store/ports/leaderboards.ts): the board of a leaderboard window, built by
    // the window job from the window's FINALIZED batches after a read asked for it and kept
    // current by it, read as the all-time board is (its entries, ranking index and bands have the
    // board tables' shape, keyed by window_id instead of board). window_batches says which batches
    // a window board holds (a row per batch), `batches` how many: a read compares that with the
    // window's FINALIZED batches. boards.finalized_batches counts the batches a finalization
    // added to the board, and seen_finalized is that count when the window job last found the
    // window board complete: while the two are equal, nothing needs counting (an idle board costs
    // its readers and the job nothing). window_id is never reused (AUTOINCREMENT): a dropped
    // window board's entries are deleted by it in steps. At most one kept (not dropping) window
    // board per board and window.
    version: 16,
    name: "window_boards",
    sql: `
      CREATE TABLE window_boards (
        window_id INTEGER PRIMARY KEY AUTOINCREMENT,
        board INTEGER NOT NULL,
        from_ms INTEGER NOT NULL,
        to_ms INTEGER NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('building', 'ready', 'dropping')),
        batches INTEGER NOT NULL DEFAULT 0,
        seen_finalized INTEGER NOT NULL DEFAULT -1,
        created_at_ms INTEGER NOT NULL
      );
      ALTER TABLE boards ADD COLUMN finalized_batches INTEGER NOT NULL DEFAULT 0;
      CREATE UNIQUE INDEX window_boards_kept ON window_boards (board, from_ms, to_ms) WHERE state <> 'dropping';
      CREATE TABLE window_batches (
        window_id INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (window_id, seq)
      ) WITHOUT ROWID;
      CREATE TABLE window_entries (
        window_id INTEGER NOT NULL,
        address BLOB NOT NULL CHECK (length(address) = 20),
        points_q INTEGER NOT NULL DEFAULT 0 CHECK (typeof(points_q) = 'integer' AND points_q >= 0),
        ${amount("points")},
        PRIMARY KEY (window_id, address)
      ) WITHOUT ROWID;
      CREATE INDEX window_ranking ON window_entries (window_id, points_q DESC, points_w DESC, points_f DESC, address);
      CREATE TABLE window_bands (
        window_id INTEGER NOT NULL,
        band INTEGER NOT NULL,
        entries INTEGER NOT NULL CHECK (entries >= 0),
        PRIMARY KEY (window_id, band)
      ) WITHOUT ROWID;
      CREATE TRIGGER window_bands_on_insert AFTER INSERT ON window_entries BEGIN
        INSERT INTO window_bands (window_id, band, entries) VALUES (new.window_id, ${rankBand("new")}, 1)
          ON CONFLICT (window_id, band) DO UPDATE SET entries = entries + 1;
      END;
      CREATE TRIGGER window_bands_on_update AFTER UPDATE ON window_entries WHEN ${rankBand("old")} <> ${rankBand("new")} BEGIN
        UPDATE window_bands SET entries = entries - 1 WHERE window_id = old.window_id AND band = ${rankBand("old")};
        INSERT INTO window_bands (window_id, band, entries) VALUES (new.window_id, ${rankBand("new")}, 1)
          ON CONFLICT (window_id, band) DO UPDATE SET entries = entries + 1;
      END;
    `,
  },
  {
    // The read models become a projection applied after the finalization (src/ledger/projection.ts,
    // src/store/ports/leaderboards.ts): the finalization writes one projection_queue row per batch
    // instead of its transfers into the boards and received_daily. projection_state holds how far
    // the projection has applied (through_ms) and the fence finalizations stamp after (fence_ms).
    // The boards, receipts and window boards are rebuilt from the ledger by the projection: every
    // FINALIZED batch is queued once here (a database finalized before is applied again in order,
    // each answer saying how far it has got), which also replaces history_backfill. A window board
    // remembers where the projection stood when it was asked for (built_through_ms): the window job
    // adds the window's batches up to there, the passes the later ones.
    version: 17,
    name: "read_models_as_a_projection",
    sql: `
      CREATE TABLE projection_queue (
        finalized_at_ms INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (finalized_at_ms, seq)
      ) WITHOUT ROWID;
      CREATE TABLE projection_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        through_ms INTEGER NOT NULL,
        fence_ms INTEGER NOT NULL
      );
      INSERT INTO projection_state (id, through_ms, fence_ms) VALUES (1, 0, 0);
      DELETE FROM board_entries;
      DELETE FROM board_bands;
      DELETE FROM received_daily;
      DELETE FROM window_entries;
      DELETE FROM window_bands;
      DELETE FROM window_batches;
      DELETE FROM window_boards;
      UPDATE boards SET finalized_batches = 0;
      ALTER TABLE window_boards ADD COLUMN built_through_ms INTEGER NOT NULL DEFAULT 0;
      INSERT INTO projection_queue (finalized_at_ms, seq) SELECT finalized_at_ms, seq FROM batches WHERE status = 'FINALIZED';
      DROP TABLE history_backfill;
    `,
  },
  {
    // The transparency log (API.md, Transparency log; src/ledger/transparency-log.ts), a projection
    // of the events: log_tiles holds the Merkle tree as tiles of up to 256 hashes (domain/tlog.ts,
    // about 33 bytes an event, kept when events are purged); log_state how far the log has read the
    // events (position_seq), its size, and the latest signed checkpoint; events.log_index each
    // event's place once logged. The events retained at the upgrade are logged from the oldest.
    version: 18,
    name: "transparency_log",
    sql: `
      ALTER TABLE events ADD COLUMN log_index INTEGER;
      CREATE TABLE log_tiles (
        tile_level INTEGER NOT NULL,
        tile_index INTEGER NOT NULL,
        hashes BLOB NOT NULL CHECK (length(hashes) BETWEEN 32 AND 8192 AND length(hashes) % 32 = 0),
        PRIMARY KEY (tile_level, tile_index)
      );
      CREATE TABLE log_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        size INTEGER NOT NULL,
        position_seq INTEGER NOT NULL,
        checkpoint_size INTEGER,
        checkpoint_root BLOB,
        checkpoint_note TEXT,
        checkpoint_at_ms INTEGER
      );
      INSERT INTO log_state (id, size, position_seq) VALUES (1, 0, 0);
    `,
  },
  {
    // The read models move to a file of their own (../projection-file.ts), written by the
    // projection's worker thread on the second core: the ledger's writer no longer waits for a
    // pass (docs/performance.md "The projection's own file"). Their tables leave this file; the
    // queue now keeps every FINALIZED batch (the passes no longer delete it: a projection file
    // that is missing or stale is rebuilt from it), projection_state.through_ms becomes this
    // file's view of the projection file's through, and ledger_id names this copy of the ledger
    // (a backup's copy gets a new one, so a projection file built for another copy is rebuilt).
    version: 19,
    name: "projection_in_its_own_file",
    sql: `
      DROP TRIGGER board_bands_on_insert;
      DROP TRIGGER board_bands_on_update;
      DROP TRIGGER window_bands_on_insert;
      DROP TRIGGER window_bands_on_update;
      DROP TABLE board_entries;
      DROP TABLE board_bands;
      DROP TABLE received_daily;
      DROP TABLE window_entries;
      DROP TABLE window_bands;
      DROP TABLE window_batches;
      DROP TABLE window_boards;
      DROP TABLE boards;
      ALTER TABLE projection_state ADD COLUMN ledger_id TEXT NOT NULL DEFAULT '';
      UPDATE projection_state SET through_ms = 0, ledger_id = lower(hex(randomblob(16)));
      INSERT OR IGNORE INTO projection_queue (finalized_at_ms, seq) SELECT finalized_at_ms, seq FROM batches WHERE status = 'FINALIZED';
    `,
  },
  {
    // The transparency log's tiles keep their complete inner nodes of heights 4–7 (domain/tlog.ts
    // innerNodes, ≤ 30 hashes), so a proof reads them instead of hashing up to 255 hashes a tile:
    // p50 1.43 → 0.12 ms at 10,000,000 events (docs/performance.md), for about 2 bytes an event. Tiles
    // written before keep NULL and are hashed from their bottom row as before.
    version: 20,
    name: "log_tile_inner_nodes",
    sql: `
      ALTER TABLE log_tiles ADD COLUMN inner_nodes BLOB
        CHECK (inner_nodes IS NULL OR (length(inner_nodes) <= 960 AND length(inner_nodes) % 32 = 0));
    `,
  },
  {
    // The transparency log's identity and epochs (docs/transparency.md, issue 37): the origin and
    // verifier key that sign it (start-up refuses others unless \`log rotate-key\` records the change),
    // its epoch (a copy made by \`backup\` starts a new one at its first start, announced by a note
    // the previous key signs), and whether the next start must begin one.
    version: 21,
    name: "log_identity_and_epochs",
    sql: `
      ALTER TABLE log_state ADD COLUMN origin TEXT;
      ALTER TABLE log_state ADD COLUMN verifier_key TEXT;
      ALTER TABLE log_state ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE log_state ADD COLUMN new_epoch_due INTEGER NOT NULL DEFAULT 0;
      CREATE TABLE log_epochs (epoch INTEGER PRIMARY KEY, origin TEXT NOT NULL, note TEXT NOT NULL, started_at_ms INTEGER NOT NULL);
    `,
  },
  {
    // Publishers (API.md, Events to a message broker; store/sqlite/publishers.ts): one row per
    // broker kind, its position the last event the broker acknowledged, and the lease that lets one
    // process publish at a time.
    version: 22,
    name: "publishers",
    sql: `
      CREATE TABLE publishers (
        kind TEXT PRIMARY KEY CHECK (kind IN ('nats', 'amqp')),
        position_seq INTEGER NOT NULL,
        last_event_id TEXT,
        state TEXT NOT NULL CHECK (state IN ('ok', 'retrying', 'stopped')),
        last_error TEXT,
        published_at_ms INTEGER,
        lease_token TEXT,
        lease_until_ms INTEGER
      );
    `,
  },
  {
    // When the last backup completed (store/sqlite/backups.ts): backup writes it after its copy,
    // backup --record after another tool's; /metrics exports it for PointsLedgerBackupTooOld.
    version: 23,
    name: "backup_state",
    sql: `CREATE TABLE backup_state (id INTEGER PRIMARY KEY CHECK (id = 1), last_success_at_ms INTEGER NOT NULL);`,
  },
  {
    // Operators on chain (API.md; store/sqlite/chain.ts): what the operator registry said of each
    // followed contract and at which block, and the follower's row (last block read, its lease).
    version: 24,
    name: "chain_operators",
    sql: `
      CREATE TABLE chain_operators (
        contract TEXT PRIMARY KEY,
        operator TEXT,
        banned INTEGER NOT NULL,
        block_number INTEGER NOT NULL,
        block_hash TEXT NOT NULL,
        read_at_ms INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE TABLE chain_follow (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        block_number INTEGER,
        block_hash TEXT,
        read_at_ms INTEGER,
        lease_token TEXT,
        lease_until_ms INTEGER
      );
      INSERT INTO chain_follow (id) VALUES (1);
    `,
  },
];
