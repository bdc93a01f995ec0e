import { describe, expect, it, vi } from "vitest";
import { JobLoop } from "../src/job-loop.js";

/**
 * JobLoop, the scheduling every background job shares (finalize, deliver, purge): a pass may ask
 * to sleep until woken, wake() runs a pass now or right after the one in progress, a failing pass
 * never stops the loop, and stop() waits for the pass in progress and ends the loop.
 */

/** A loop whose passes wait for release() before they end; counts them. */
function gatedLoop(nextDelayMs: number | null, fail = false) {
  let passes = 0;
  let release: () => void = () => undefined;
  const loop = new JobLoop(
    async () => {
      passes++;
      await new Promise<void>((resolve) => (release = resolve));
      if (fail) throw new Error("pass failed");
      return nextDelayMs;
    },
    () => nextDelayMs,
  );
  return { loop, passes: () => passes, release: () => release() };
}

describe("JobLoop", () => {
  it("sleeps until woken when a pass says so, and a wake during a pass runs one more pass right after it", async () => {
    const { loop, passes, release } = gatedLoop(null);
    loop.start();
    await vi.waitFor(() => expect(passes()).toBe(1));
    loop.wake();
    loop.wake(); // two wakes during one pass: one more pass, not two
    release();
    await vi.waitFor(() => expect(passes()).toBe(2));
    release();
    // Asleep now: nothing runs until the next wake.
    await new Promise((resolve) => setImmediate(resolve));
    expect(passes()).toBe(2);
    loop.wake();
    await vi.waitFor(() => expect(passes()).toBe(3));
    const stopped = loop.stop();
    release();
    await stopped;
    loop.wake();
    await new Promise((resolve) => setImmediate(resolve));
    expect(passes()).toBe(3);
  });

  it("a wake replaces a later timer, and a pass that throws does not stop the loop", async () => {
    const { loop, passes, release } = gatedLoop(3_600_000, true);
    loop.start();
    await vi.waitFor(() => expect(passes()).toBe(1));
    release(); // throws; onError asks for an hour
    await new Promise((resolve) => setImmediate(resolve));
    loop.wake();
    await vi.waitFor(() => expect(passes()).toBe(2));
    const stopped = loop.stop();
    release();
    await stopped;
  });
});
