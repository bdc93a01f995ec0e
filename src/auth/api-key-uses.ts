import { API_KEY_LAST_USED_FLUSH_MS } from "../domain/limits.js";
import type { ApiKeysStore } from "../store/store.js";

/**
 * The `lastUsedAt` of API keys, kept in memory and written at most once per flush interval per
 * key (and at shutdown): a write per request would double the work of every submit made with a
 * key. API.md allows `lastUsedAt` to lag by up to a minute. A failed flush keeps its uses for the
 * next one; the map holds at most one entry per key seen since the last flush.
 */
export class ApiKeyUses {
  private pending = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly store: Pick<ApiKeysStore, "recordApiKeyUses">,
    private readonly onError: (error: unknown) => void,
    intervalMs: number = API_KEY_LAST_USED_FLUSH_MS,
  ) {
    this.timer = setInterval(() => void this.flush().catch(this.onError), intervalMs);
    // A pending write must not keep a process alive that has nothing else to do.
    this.timer.unref();
  }

  seen(id: string, atMs: number): void {
    const known = this.pending.get(id);
    if (known === undefined || known < atMs) this.pending.set(id, atMs);
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const taken = this.pending;
    this.pending = new Map();
    try {
      await this.store.recordApiKeyUses([...taken].map(([id, lastUsedAtMs]) => ({ id, lastUsedAtMs })));
    } catch (error) {
      for (const [id, atMs] of taken) this.seen(id, atMs);
      throw error;
    }
  }

  /** Stops the timer and writes what is pending (shutdown). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
