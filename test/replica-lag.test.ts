import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.js";
import { heldAtOf, parseLsn, REPLICA_LAG_SAMPLES, replicaLagSeconds, replicaUsable, withSample } from "../src/domain/replica-lag.js";

/**
 * The replica's lag from WAL positions (src/domain/replica-lag.ts) and its settings
 * (src/config.ts); test/replica-reads-postgres.test.ts runs them against a real streaming standby.
 */

const PRIMARY = "postgres://points@db.internal:5432/points";

describe("a replica's lag from WAL positions", () => {
  it("reads a pg_lsn as one number, and refuses anything else", () => {
    expect(parseLsn("0/0")).toBe(0n);
    expect(parseLsn("16/B374D848")).toBe((0x16n << 32n) | 0xb374d848n);
    expect(parseLsn("0/3000060") < parseLsn("1/0")).toBe(true);
    for (const bad of ["", "16", "16/", "G/1", "1/2/3", "123456789/0"]) expect(() => parseLsn(bad)).toThrow();
  });

  it("holds the newest sample its replay reached: an idle primary keeps a replica's lag at the check's age", () => {
    const idle = [1000, 2000, 3000].map((askedAtMs) => ({ askedAtMs, lsn: 500n }));
    expect(heldAtOf(idle, 500n, null)).toBe(3000);
    const state = { reachable: true, heldAtMs: heldAtOf(idle, 500n, null), sinceMs: 0 };
    expect(replicaLagSeconds(state, 3005)).toBeCloseTo(0.005);
  });

  it("a replica that stopped replaying falls behind from the first write it lacks, and is used no longer past the bound", () => {
    const samples = [
      { askedAtMs: 1000, lsn: 100n },
      { askedAtMs: 2000, lsn: 100n },
      { askedAtMs: 3000, lsn: 180n },
      { askedAtMs: 4000, lsn: 260n },
    ];
    const heldAtMs = heldAtOf(samples, 100n, null);
    expect(heldAtMs).toBe(2000);
    const state = { reachable: true, heldAtMs, sinceMs: 0 };
    expect(replicaUsable(state, 6999, 5)).toBe(true);
    expect(replicaUsable(state, 7001, 5)).toBe(false);
    expect(replicaUsable({ ...state, reachable: false }, 2001, 5)).toBe(false);
  });

  it("behind every sample kept: an older placing still holds, a newer one is not trusted", () => {
    const samples = [{ askedAtMs: 10_000, lsn: 900n }];
    expect(heldAtOf(samples, 100n, 9_000)).toBe(9_000);
    expect(heldAtOf(samples, 100n, 11_000)).toBeNull();
    expect(heldAtOf(samples, 100n, null)).toBeNull();
    expect(replicaUsable({ reachable: true, heldAtMs: null, sinceMs: 0 }, 1, 5)).toBe(false);
    expect(replicaLagSeconds({ reachable: false, heldAtMs: null, sinceMs: 1000 }, 4000)).toBe(3);
  });

  it(`keeps the newest ${REPLICA_LAG_SAMPLES} samples`, () => {
    let samples = withSample([], { askedAtMs: 0, lsn: 0n });
    for (let i = 1; i <= REPLICA_LAG_SAMPLES; i++) samples = withSample(samples, { askedAtMs: i, lsn: BigInt(i) });
    expect(samples).toHaveLength(REPLICA_LAG_SAMPLES);
    expect(samples[0]!.askedAtMs).toBe(1);
  });
});

describe("DATABASE_READ_URL and REPLICA_MAX_LAG_SECONDS", () => {
  const refusal = (env: Record<string, string>) => {
    try {
      loadConfig(env);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as Error).message;
    }
    throw new Error("accepted");
  };

  it("are read with PostgreSQL: unset, no replica and 5 s", () => {
    expect(loadConfig({ DATABASE_URL: PRIMARY })).toMatchObject({ databaseReadUrl: null, replicaMaxLagSeconds: 5 });
    const replica = "postgres://points@db-replica.internal:5432/points";
    expect(loadConfig({ DATABASE_URL: PRIMARY, DATABASE_READ_URL: replica, REPLICA_MAX_LAG_SECONDS: "2.5" })).toMatchObject({
      databaseReadUrl: replica,
      replicaMaxLagSeconds: 2.5,
    });
  });

  it("stop start-up beside SQLite, on a URL that is not PostgreSQL's, and on a bound out of range, naming the variable", () => {
    expect(refusal({ DATABASE_READ_URL: "postgres://r@h/db" })).toMatch(
      /DATABASE_READ_URL needs a PostgreSQL DATABASE_URL \(SQLite has no replicas\)/,
    );
    expect(refusal({ DATABASE_URL: PRIMARY, DATABASE_READ_URL: "mysql://r@h/db" })).toContain("DATABASE_READ_URL must be a postgres://");
    expect(refusal({ DATABASE_URL: PRIMARY, DATABASE_READ_URL: "postgres://r:secret@[::1/db" })).not.toContain("secret");
    for (const bad of ["0", "1.5", "3601", "five", "-1"])
      expect(refusal({ DATABASE_URL: PRIMARY, REPLICA_MAX_LAG_SECONDS: bad })).toContain("REPLICA_MAX_LAG_SECONDS");
  });
});
