/**
 * The loop the timed jobs share (finalize, purge): run a pass, sleep as long as the pass says,
 * again, until stopped. A pass that throws is reported and the loop goes on after the fallback
 * delay, so one failure never stops a job. The timer does not keep the process alive.
 */
export class JobLoop {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private active = false;

  /**
   * @param pass one pass of the job; resolves to the delay before the next one, in ms
   * @param onError reports a pass that threw; returns the delay before the next one
   */
  constructor(
    private readonly pass: () => Promise<number>,
    private readonly onError: (error: unknown) => number,
  ) {}

  /** False once stop() was called (and before start()): passes in progress end early. */
  get isActive(): boolean {
    return this.active;
  }

  start(): void {
    if (this.active) return;
    this.active = true;
    this.schedule(0);
  }

  /** Stops scheduling and waits for the pass in progress. */
  async stop(): Promise<void> {
    this.active = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private schedule(delayMs: number): void {
    if (!this.active) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.pass()
        .catch((error: unknown) => this.onError(error))
        .then((nextDelayMs) => {
          this.running = null;
          this.schedule(nextDelayMs);
        });
    }, delayMs);
    this.timer.unref();
  }
}
