import canonicalize from "canonicalize";
import { afterEach, describe, expect, it } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import { eventJson } from "../src/domain/events.js";
import { openNote, parseCheckpoint, parseVerifierKey, verifierKey } from "../src/domain/signed-note.js";
import type { LedgerStore, StoredCheckpoint } from "../src/store/store.js";
import { temporarySqliteStore } from "./helpers/app-over-store.js";
import {
  createTestSchema,
  DATABASE_URL_TEST,
  DATABASE_URL_TEST_DEFAULTS,
  DEFAULTS_SKIP_REASON,
  POSTGRES_TEST_CLUSTERS,
  randomAddress,
  SKIP_REASON,
} from "./helpers/postgres.js";
import { refLeaf, refVerifyConsistency, refVerifyInclusion } from "./helpers/rfc9162.js";
import { logEverything, testLogSigning } from "./helpers/tlog.js";

/**
 * The transparency log over each database (src/ledger/transparency-log.ts): a random workload of
 * credits, submits, cancels and finalizations, with logging steps of random sizes between them;
 * every checkpoint signed on the way is kept. Then an independent verifier (helpers/rfc9162.ts,
 * node:crypto, and the leaf recomputed here from the Event JSON the events API returns) checks
 * that the log holds every event exactly once in the event log's order, each one's inclusion in
 * the latest checkpoint, and the consistency of every pair of checkpoints.
 */

interface Fixture {
  store: LedgerStore;
  remove: () => Promise<void>;
}

const databases: [string, () => Promise<Fixture>][] = [["SQLite", async () => temporarySqliteStore()]];
for (const [name, url] of POSTGRES_TEST_CLUSTERS) {
  databases.push([
    name,
    async () => {
      const schema = await createTestSchema(url);
      return { store: schema.openStore(), remove: () => schema.drop() };
    },
  ]);
}
if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);
else if (!DATABASE_URL_TEST_DEFAULTS) console.warn(DEFAULTS_SKIP_REASON);

const leafOf = (event: object) => {
  const { logIndex: _ignored, ...logged } = event as Record<string, unknown>;
  return refLeaf(Buffer.from(canonicalize(logged)!, "utf8"));
};

/** A small random generator with a seed, so a failure can be replayed. */
function random(seed: number) {
  let state = seed;
  return (n: number) => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state % n;
  };
}

async function allEvents(store: LedgerStore) {
  const events = [];
  let after: string | null = null;
  for (;;) {
    const page = await store.listEvents({ stream: null, after, types: null, limit: 1000 });
    if (page.kind !== "page") throw new Error("expired");
    events.push(...page.events.map((stored) => eventJson(stored.event)));
    after = page.position;
    if (!page.hasMore) return events;
  }
}

describe.each(databases)("the transparency log on %s", (_name, open) => {
  let fixture: Fixture | null = null;
  afterEach(async () => {
    await fixture?.store.close();
    await fixture?.remove();
    fixture = null;
  });

  it("logs every event exactly once in the event log's order; every inclusion and every pair of checkpoints verifies independently", async () => {
    fixture = await open();
    const { store } = fixture;
    await store.migrate();
    const signing = testLogSigning(0);
    const next = random(Number(process.env.TLOG_SEED ?? 20261128));
    const contracts: AddressKey[] = [randomAddress(), randomAddress()];
    let nowMs = Date.UTC(2026, 10, 28);
    const checkpoints: StoredCheckpoint[] = [];
    const pending: { contract: AddressKey; batchId: string }[] = [];
    for (const contract of contracts) {
      await store.credit({
        address: contract,
        creditId: `seed-${contract}`,
        pointType: "PHASE2_POINTS",
        amount: 10n ** 15n,
        createdAtMs: nowMs,
      });
    }
    for (let round = 0; round < 60; round++) {
      nowMs += 1000;
      const contract = contracts[next(2)]!;
      const action = next(4);
      if (action === 0) {
        await store.credit({
          address: randomAddress(),
          creditId: `c${round}`,
          pointType: "PHASE2_GOLD",
          amount: BigInt(1 + next(1000)) * 10n ** 12n,
          createdAtMs: nowMs,
        });
      } else if (action === 1 && pending.length > 0) {
        const batch = pending.splice(next(pending.length), 1)[0]!;
        await store.cancelBatch(batch.contract, batch.batchId, nowMs);
      } else if (action === 2) {
        await store.finalizeDue(nowMs, 1 + next(3));
      } else {
        const batchId = `b${round}`;
        const transfers = Array.from({ length: 1 + next(3) }, () => ({ toAddress: randomAddress(), amount: 10n ** 12n }));
        const total = transfers.reduce((sum, t) => sum + t.amount, 0n);
        await store.submitBatch({
          contract,
          batchId,
          pointType: "PHASE2_POINTS",
          transfers,
          total,
          secondsToFinalize: 3,
          createdAtMs: nowMs,
        });
        pending.push({ contract, batchId });
      }
      if (next(3) === 0) {
        const step = await store.appendToLog(1 + next(5), nowMs, signing);
        if (step.checkpoint && checkpoints.at(-1)?.size !== step.checkpoint.size) checkpoints.push(step.checkpoint);
      }
    }
    const last = await logEverything(store, nowMs + 1000, signing);
    if (checkpoints.at(-1)?.size !== last.checkpoint!.size) checkpoints.push(last.checkpoint!);
    const latest = checkpoints.at(-1)!;
    expect(checkpoints.length).toBeGreaterThan(5);

    // Every checkpoint is a signed C2SP checkpoint of the key, and states the root it was stored with.
    const verifier = parseVerifierKey(verifierKey(signing.signer));
    for (const checkpoint of checkpoints) {
      const parsed = parseCheckpoint(openNote(checkpoint.note, verifier));
      expect(parsed.origin).toBe(signing.origin);
      expect(parsed.size).toBe(checkpoint.size);
      expect(Buffer.from(parsed.root).equals(Buffer.from(checkpoint.root))).toBe(true);
    }

    // Every event, in the events API's order, has the next log index: none twice, none skipped.
    const events = await allEvents(store);
    expect(events.length).toBe(latest.size);
    expect(events.map((event) => event.logIndex)).toEqual(events.map((_, i) => i));
    for (const event of events) {
      const answer = await store.logInclusionProof(event.id, null, null);
      if (answer.kind !== "proof") throw new Error(`no proof for ${event.id}: ${answer.kind}`);
      expect(Buffer.from(answer.leafHash).equals(Buffer.from(leafOf(event)))).toBe(true);
      expect(refVerifyInclusion(event.logIndex!, latest.size, leafOf(event), answer.proof, latest.root)).toBe(true);
    }
    // An event is proven in an older checkpoint too, and refused one it was not in yet.
    const middle = checkpoints[Math.floor(checkpoints.length / 2)]!;
    const inMiddle = events[middle.size - 1]!;
    const older = await store.logInclusionProof(inMiddle.id, null, middle.size);
    expect(older.kind === "proof" && refVerifyInclusion(middle.size - 1, middle.size, leafOf(inMiddle), older.proof, middle.root)).toBe(
      true,
    );
    expect((await store.logInclusionProof(events[middle.size]!.id, null, middle.size)).kind).toBe("not_yet_logged");
    expect((await store.logInclusionProof(inMiddle.id, null, latest.size + 1)).kind).toBe("too_large");
    // Another contract's reader does not see the event.
    const ofContract = events.find((event) => event.contractAddress !== null)!;
    expect((await store.logInclusionProof(ofContract.id, randomAddress(), null)).kind).toBe("not_found");

    for (const [i, from] of checkpoints.entries()) {
      for (const to of checkpoints.slice(i)) {
        const answer = await store.logConsistencyProof(from.size, to.size);
        if (answer.kind !== "proof") throw new Error("no consistency proof");
        expect(refVerifyConsistency(from.size, to.size, from.root, to.root, answer.proof), `${from.size} → ${to.size}`).toBe(true);
      }
    }
    expect((await store.logConsistencyProof(1, latest.size + 1)).kind).toBe("too_large");
  });
});

describe.each(POSTGRES_TEST_CLUSTERS)("two instances logging at once on %s", (_name, url) => {
  it("produce one log: every event once, none skipped, in the event log's order, every pair of checkpoints consistent", async () => {
    const schema = await createTestSchema(url);
    const stores = [schema.openStore(), schema.openStore()];
    try {
      await stores[0]!.migrate();
      const signing = testLogSigning(0);
      const contract = randomAddress();
      await stores[0]!.credit({
        address: contract,
        creditId: "seed",
        pointType: "PHASE2_POINTS",
        amount: 10n ** 15n,
        createdAtMs: Date.now(),
      });
      let writing = true;
      const checkpoints: StoredCheckpoint[] = [];
      // Writers on both instances, while both run logging steps as fast as they can.
      const writers = stores.map(async (store, instance) => {
        for (let i = 0; i < 40; i++) {
          await store.credit({
            address: randomAddress(),
            creditId: `w${instance}-${i}`,
            pointType: "PHASE2_GOLD",
            amount: 10n ** 12n,
            createdAtMs: Date.now(),
          });
        }
      });
      const loggers = stores.map(async (store) => {
        while (writing) {
          const step = await store.appendToLog(3, Date.now(), signing);
          if (step.checkpoint) checkpoints.push(step.checkpoint);
        }
      });
      await Promise.all(writers);
      writing = false;
      await Promise.all(loggers);
      const last = await logEverything(stores[1]!, Date.now() + 1000, signing);
      checkpoints.push(last.checkpoint!);
      const events = await allEvents(stores[0]!);
      expect(events.length).toBe(81);
      expect(last.checkpoint!.size).toBe(81);
      expect(events.map((event) => event.logIndex)).toEqual(events.map((_, i) => i));
      for (const event of events) {
        const answer = await stores[1]!.logInclusionProof(event.id, null, null);
        expect(answer.kind === "proof" && refVerifyInclusion(event.logIndex!, 81, leafOf(event), answer.proof, last.checkpoint!.root)).toBe(
          true,
        );
      }
      const distinct = [...new Map(checkpoints.map((checkpoint) => [checkpoint.size, checkpoint])).values()].sort(
        (a, b) => a.size - b.size,
      );
      expect(distinct.length).toBeGreaterThan(3);
      for (const [i, from] of distinct.entries()) {
        for (const to of distinct.slice(i + 1)) {
          const answer = await stores[0]!.logConsistencyProof(from.size, to.size);
          expect(answer.kind === "proof" && refVerifyConsistency(from.size, to.size, from.root, to.root, answer.proof)).toBe(true);
        }
      }
    } finally {
      await Promise.all(stores.map((store) => store.close()));
      await schema.drop();
    }
  });
});

describe.each(POSTGRES_TEST_CLUSTERS)("the log's reading order on %s", (_name, url) => {
  // Issue 37: the log read `tx::text AS tx … ORDER BY tx`, which sorts by the text alias, so once
  // transaction ids crossed a power of ten ("1000" < "988") a step jumped past the events between
  // and lost them, or went back over logged ones and stopped for good. On a new cluster xids cross
  // 1,000 and 10,000 in the first minutes. Here the events' transaction ids are set to straddle 100
  // (older than any running transaction, so every reader may read them) and the purge keeps up.
  it("logs events whose transaction ids cross a power of ten in their numeric order, each once, and the purge follows it", async () => {
    const schema = await createTestSchema(url);
    const store = schema.openStore();
    try {
      await store.migrate();
      const contract = randomAddress();
      const createdAtMs = Date.UTC(2026, 0, 1);
      for (let i = 0; i < 12; i++) {
        await store.credit({ address: contract, creditId: `c${i}`, pointType: "PHASE2_POINTS", amount: 10n ** 12n, createdAtMs });
      }
      // Twelve credits, one event each, given transaction ids 94…105 in reverse of their seq order.
      await schema.query(
        "UPDATE events SET tx = (106 - rn)::text::xid8 FROM (SELECT seq AS s, row_number() OVER (ORDER BY seq) AS rn FROM events) AS r WHERE seq = r.s",
      );
      const expected = (await schema.query<{ event_id: string }>("SELECT event_id FROM events ORDER BY tx, seq")).map(
        (row) => row.event_id,
      );
      expect(expected).toHaveLength(12);
      // Small steps, as the job's first steps are: each must continue in numeric order.
      for (const limit of [1, 2, 3, 1, 5]) await store.appendToLog(limit, Date.now(), testLogSigning());
      await logEverything(store);
      const listed = await allEvents(store);
      expect(listed.map((event) => event.id)).toEqual(expected);
      expect(listed.map((event) => event.logIndex)).toEqual(expected.map((_, i) => i));
      // The purge reads the same order: everything is older than the retention cut, all is logged.
      expect(await store.purgeEvents(Date.now(), 5)).toBe(5);
      const left = await schema.query<{ event_id: string }>("SELECT event_id FROM events ORDER BY tx, seq");
      expect(left.map((row) => row.event_id)).toEqual(expected.slice(5));
    } finally {
      await store.close();
      await schema.drop();
    }
  });
});
