/**
 * The loop every timed job shares (finalize, deliver, purge): run a pass, sleep as long as the pass
 * says, again, until stopped. A pass may also say to sleep until woken (null), and wake() runs a
 * pass now (right after the pass in progress, if any): the deliver job is woken when a send frees a
 * slot. A pass that throws is reported and the loop goes on after the delay onError gives, so one
 * failure never stops a job. The timer does not keep the process alive.
 */
export class JobLoop {
  private timer: NodeJS.Timeout | null = null;
  /** When the pending timer fires (Date.now() time): a wake-up earlier than it replaces it. */
  private timerAtMs = 0;
  private running: Promise<void> | null = null;
  /** wake() was called during a pass: the next pass starts as soon as this one ends. */
  private wakeAfterPass = false;
  private active = false;

  /**
   * @param pass one pass of the job; resolves to the delay before the next one, in ms, or null to sleep until wake()
   * @param onError reports a pass that threw; returns the delay before the next one (null: until wake())
   */
  constructor(
    private readonly pass: () => Promise<number | null>,
    private readonly onError: (error: unknown) => number | null,
  ) {}

  /** False once stop() was called (and before start()): passes in progress end early. */
  get isActive(): boolean {
    return this.active;
  }

  start(): void {
    if (this.active) return;
    this.active = true;
    this.wakeAfterPass = false;
    this.schedule(0);
  }

  /** Runs a pass now, or right after the one in progress; nothing once stopped. */
  wake(): void {
    if (!this.active) return;
    if (this.running) this.wakeAfterPass = true;
    else this.schedule(0);
  }

  /** Stops scheduling and waits for the pass in progress. */
  async stop(): Promise<void> {
    this.active = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  /** Runs a pass after `delayMs`, unless one is already timed sooner. */
  private schedule(delayMs: number | null): void {
    if (!this.active || delayMs === null) return;
    const atMs = Date.now() + delayMs;
    if (this.timer) {
      if (atMs >= this.timerAtMs) return;
      clearTimeout(this.timer);
    }
    this.timerAtMs = atMs;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.pass()
        .catch((error: unknown) => this.onError(error))
        .then((nextDelayMs) => {
          this.running = null;
          const again = this.wakeAfterPass;
          this.wakeAfterPass = false;
          this.schedule(again ? 0 : nextDelayMs);
        });
    }, delayMs);
    this.timer.unref();
  }
}
