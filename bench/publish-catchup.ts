import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import pino from "pino";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import type { AddressKey } from "../src/domain/address.js";
import { createSqliteStore } from "../src/ledger/sqlite.js";
import { NatsPublisher } from "../src/publishers/nats.js";
import { PublishJob } from "../src/publishers/publish-job.js";
import { BENCH_NATS_URL } from "./publish-lag.js";

/**
 * Catch-up after a broker outage (issue 40: ≥ 10× the rate events are made): `--events N`
 * credits (one event each) are written while no broker takes them, as a 60 s outage leaves them
 * at the rate the bench's mixed phase makes events; then one publish job (the service's own, over
 * SQLite, to the machine's NATS JetStream, a stream of the run's own) publishes them, and the run
 * prints the events per second it took them at. Run: node dist/bench/publish-catchup.js [--events N]
 */

const DEFAULT_EVENTS = 20_000;

async function main(): Promise<void> {
  const at = process.argv.indexOf("--events");
  const events = at > 0 ? Number(process.argv[at + 1]) : DEFAULT_EVENTS;
  const dir = mkdtempSync(join(tmpdir(), "publish-catchup-"));
  const store = createSqliteStore({ path: join(dir, "ledger.db"), synchronous: "NORMAL" });
  const tag = randomBytes(4).toString("hex");
  const broker = new NatsPublisher({
    url: BENCH_NATS_URL,
    stream: `CATCHUP_${tag}`,
    subjectPrefix: `catchup-${tag}`,
    duplicateWindowSeconds: 3600,
  });
  try {
    await store.migrate();
    const writtenFromMs = performance.now();
    for (let i = 0; i < events; i++) {
      await store.credit({
        address: `0x${randomBytes(20).toString("hex")}` as AddressKey,
        creditId: `c${i}`,
        pointType: "PHASE2_POINTS",
        amount: 1n,
        createdAtMs: Date.now(),
      });
    }
    const writtenMs = performance.now() - writtenFromMs;
    const job = new PublishJob(store, broker, { from: "start" }, null, pino({ level: "warn" }));
    const startMs = performance.now();
    let published = 0;
    for (let run = 0; run < 10_000 && published < events; run++) published += (await job.runOnce()).published;
    const tookMs = performance.now() - startMs;
    await job.stop();
    console.log(
      JSON.stringify({
        events,
        published,
        catchUpMs: Math.round(tookMs),
        catchUpEventsPerSec: Math.round(published / (tookMs / 1000)),
        writtenEventsPerSec: Math.round(events / (writtenMs / 1000)),
      }),
    );
  } finally {
    const nc = await connect({ servers: BENCH_NATS_URL });
    await (await jetstreamManager(nc)).streams.delete(`CATCHUP_${tag}`).catch(() => false);
    await nc.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
