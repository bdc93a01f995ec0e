import type { LedgerEvent } from "../domain/events.js";

/** Called with the events of one committed transaction, in the order they were appended. */
export type CommittedEventsListener = (events: readonly LedgerEvent[]) => void;

/**
 * The events that transactions of this process committed, handed to listeners right after each
 * commit (a rolled-back transaction hands none): how this process's metrics and live streams learn
 * what changed without deciding or counting a transition themselves. Other processes' events are
 * read from the log (listEvents).
 */
export class CommittedEvents {
  private readonly listeners = new Set<CommittedEventsListener>();

  subscribe(listener: CommittedEventsListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(events: readonly LedgerEvent[]): void {
    if (events.length === 0) return;
    for (const listener of this.listeners) {
      try {
        listener(events);
      } catch {
        // A listener's failure is its own (metrics, a stream): the transaction has committed.
      }
    }
  }
}
