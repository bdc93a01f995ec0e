/** Where "now" comes from: the system clock in production, a controllable one in tests. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to; for randomized workloads and time-dependent tests. */
export class ManualClock implements Clock {
  constructor(private nowMs: number = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.nowMs;
  }
  advance(ms: number): void {
    this.nowMs += ms;
  }
}
