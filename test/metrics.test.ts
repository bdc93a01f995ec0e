import { describe, expect, it } from "vitest";
import { ManualClock } from "../src/clock.js";
import { OVERDUE_BATCH_SECONDS } from "../src/domain/limits.js";
import { batchBody, putBatch, recipientAddresses, setupContract } from "./helpers/http.js";

/** The ledger counters of /metrics follow committed events only (src/metrics.ts recordCommittedEvents). */
describe("ledger metrics", () => {
  function counter(text: string, name: string): number {
    const line = text.split("\n").find((row) => row.startsWith(`${name} `));
    return line === undefined ? 0 : Number(line.split(" ")[1]);
  }

  it("count each committed transition once and nothing for refused requests", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const ledger = await setupContract({ clock });
    try {
      const [a, b, c] = recipientAddresses(3);
      await putBatch(
        ledger.send,
        ledger,
        "kept",
        batchBody(
          [
            { toAddress: a!, points: "1" },
            { toAddress: b!, points: "2" },
          ],
          "PHASE2_POINTS",
          1,
        ),
      );
      await putBatch(ledger.send, ledger, "dropped", batchBody([{ toAddress: c!, points: "1" }], "PHASE2_POINTS", 1));
      const url = (id: string) => `/v1/contracts/${ledger.contract}/batches/${id}`;
      expect(
        (
          await ledger.send({
            method: "PUT",
            url: url("big"),
            token: ledger.token,
            body: batchBody([{ toAddress: a!, points: "999999" }], "PHASE2_POINTS", 1),
          })
        ).status,
      ).toBe(422);
      expect(
        (
          await ledger.send({
            method: "PUT",
            url: url("kept"),
            token: ledger.token,
            body: batchBody([{ toAddress: a!, points: "1" }], "PHASE2_POINTS", 1),
          })
        ).status,
      ).toBe(409);
      expect((await ledger.send({ method: "DELETE", url: url("dropped"), token: ledger.token })).status).toBe(200);
      expect((await ledger.send({ method: "DELETE", url: url("dropped"), token: ledger.token })).status).toBe(200);
      clock.advance(1500);
      expect(await ledger.finalizeDue()).toBe(1);
      const text = await ledger.metrics.registry.metrics();
      expect(counter(text, "points_batches_accepted_total")).toBe(2);
      expect(counter(text, "points_transfers_accepted_total")).toBe(3);
      expect(counter(text, "points_batches_cancelled_total")).toBe(1);
      expect(counter(text, "points_batches_finalized_total")).toBe(1);
      expect(counter(text, "points_transfers_finalized_total")).toBe(2);
      expect(counter(text, "points_finalizer_lag_seconds_count")).toBe(1);
      expect(counter(text, "points_finalizer_lag_seconds_sum")).toBeCloseTo(0.5, 3);
    } finally {
      await ledger.close();
    }
  });

  it("export points_batches_overdue (PENDING past finalizeAt by over a minute) and points_database_up", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const ledger = await setupContract({ clock });
    try {
      const scrape = async () => (await ledger.send({ method: "GET", url: "/metrics" })).text;
      const [a, b] = recipientAddresses(2);
      await putBatch(ledger.send, ledger, "one", batchBody([{ toAddress: a!, points: "1" }], "PHASE2_POINTS", 1));
      await putBatch(ledger.send, ledger, "two", batchBody([{ toAddress: b!, points: "1" }], "PHASE2_POINTS", 1));
      expect(counter(await scrape(), "points_database_up")).toBe(1);
      expect(counter(await scrape(), "points_batches_overdue")).toBe(0);
      // Due, but not yet a minute past finalizeAt.
      clock.advance(1000 + OVERDUE_BATCH_SECONDS * 1000);
      expect(counter(await scrape(), "points_batches_overdue")).toBe(0);
      clock.advance(1);
      expect(counter(await scrape(), "points_batches_overdue")).toBe(2);
      expect(await ledger.finalizeDue()).toBe(2);
      expect(counter(await scrape(), "points_batches_overdue")).toBe(0);
      // A database that stops answering: the gauge says so, the scrape still answers.
      ledger.store.ping = () => Promise.reject(new Error("the database went away"));
      const response = await ledger.send({ method: "GET", url: "/metrics" });
      expect(response.status).toBe(200);
      expect(counter(response.text, "points_database_up")).toBe(0);
    } finally {
      await ledger.close();
    }
  });
});
