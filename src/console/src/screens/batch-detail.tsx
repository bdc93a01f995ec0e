import { useRef, useState } from "preact/hooks";
import type { BatchWithTransfers, LedgerEvent } from "../../../client/index.js";
import { countdown, shortTime, useConsole, useLoad, useNow } from "../context.js";
import { actorText, actorTitle } from "../lib/actors.js";
import { displayPoints } from "../lib/amounts.js";

const TRANSFERS_PER_PAGE = 50;
/** Event pages read for a batch's history; a batch's events are few, the log may be long. */
const MAX_EVENT_PAGES = 10;
const BATCH_EVENT_TYPES = ["batch.accepted", "batch.cancelled", "batch.finalized"] as const;

function batchOf(event: LedgerEvent): string | null {
  return "batch" in event.data ? event.data.batch.id : null;
}

export function BatchDetail({ batchId }: { batchId: string }) {
  const { client, ledgerVersion, feed } = useConsole();
  const now = useNow();
  const batch = useLoad(() => client.getBatch(batchId), [batchId, ledgerVersion]);
  const events = useLoad(async () => {
    const found: LedgerEvent[] = [];
    let after: string | undefined;
    for (let page = 0; page < MAX_EVENT_PAGES; page++) {
      const result = await client.listEvents({ after, types: [...BATCH_EVENT_TYPES], limit: 1000 });
      found.push(...result.events.filter((e) => batchOf(e) === batchId));
      after = result.cursor;
      if (!result.hasMore) break;
    }
    return found;
  }, [batchId, feed.length > 0 ? feed[0]!.cursor : ""]);
  if (batch.error)
    return (
      <p role="alert" class="error">
        {batch.error}
      </p>
    );
  if (batch.data === null) return <p>Loading…</p>;
  const b = batch.data;
  const cancellable = b.status === "PENDING" && Date.parse(b.finalizeAt) > now;
  return (
    <section aria-labelledby="batch-title">
      <p>
        <a href="#/batches">← Batches</a>
      </p>
      <h1 id="batch-title" class="mono">
        {b.id}
      </h1>
      <dl class="facts">
        <dt>Status</dt>
        <dd>
          <span class={`status ${b.status}`} data-testid="batch-status">
            {b.status}
          </span>
        </dd>
        <dt>Point type</dt>
        <dd>{b.pointType}</dd>
        <dt>Total</dt>
        <dd class="amount">{displayPoints(b.points)}</dd>
        <dt>Transfers</dt>
        <dd>{b.transferCount}</dd>
        <dt>Created</dt>
        <dd>{shortTime(b.createdAt)}</dd>
        <dt>Submitted by</dt>
        <dd title={actorTitle(b.submittedBy)} data-testid="submitted-by">
          {actorText(b.submittedBy)}
        </dd>
        <dt>Finalizes</dt>
        <dd>
          {shortTime(b.finalizeAt)}
          {b.status === "PENDING" && <span data-testid="countdown"> ({countdown(b.finalizeAt, now)})</span>}
        </dd>
        {b.finalizedAt && (
          <>
            <dt>Finalized</dt>
            <dd>{shortTime(b.finalizedAt)}</dd>
          </>
        )}
        {b.cancelledAt && (
          <>
            <dt>Cancelled</dt>
            <dd>{shortTime(b.cancelledAt)}</dd>
          </>
        )}
        {b.cancelledBy && (
          <>
            <dt>Cancelled by</dt>
            <dd title={actorTitle(b.cancelledBy)} data-testid="cancelled-by">
              {actorText(b.cancelledBy)}
            </dd>
          </>
        )}
      </dl>
      {cancellable && <CancelButton batch={b} onCancelled={batch.reload} />}
      <Transfers batch={b} />
      <h2>Events</h2>
      {events.error && (
        <p role="alert" class="error">
          {events.error}
        </p>
      )}
      <ul class="events">
        {(events.data ?? []).map((e) => (
          <li>
            <span class="mono">{shortTime(e.occurredAt)}</span> {e.type}{" "}
            <span class="by" title={actorTitle(e.actor)}>
              by {actorText(e.actor)}
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}

function CancelButton({ batch, onCancelled }: { batch: BatchWithTransfers; onCancelled(): void }) {
  const { client, fail } = useConsole();
  const dialog = useRef<HTMLDialogElement>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const confirm = async () => {
    setBusy(true);
    try {
      await client.cancelBatch(batch.id);
      dialog.current?.close();
      onCancelled();
    } catch (failure) {
      setError(fail(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" class="danger" onClick={() => dialog.current?.showModal()}>
        Cancel batch…
      </button>
      <dialog ref={dialog} aria-labelledby="cancel-title">
        <h2 id="cancel-title">Cancel batch {batch.id}?</h2>
        <p data-testid="cancel-releases">
          This releases <span class="amount">{displayPoints(batch.points)}</span> {batch.pointType} back to the contract's available
          balance. None of its {batch.transferCount} transfers will be made. This cannot be undone.
        </p>
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
        <div class="row">
          <button type="button" class="danger" disabled={busy} onClick={confirm}>
            Yes, cancel the batch
          </button>
          <button type="button" onClick={() => dialog.current?.close()} autofocus>
            Keep it
          </button>
        </div>
      </dialog>
    </>
  );
}

function Transfers({ batch }: { batch: BatchWithTransfers }) {
  const [search, setSearch] = useState("");
  const [page, setPage] = useState(0);
  const needle = search.trim().toLowerCase();
  const matching = needle === "" ? batch.transfers : batch.transfers.filter((t) => t.toAddress.toLowerCase().includes(needle));
  const pages = Math.max(1, Math.ceil(matching.length / TRANSFERS_PER_PAGE));
  const current = Math.min(page, pages - 1);
  const shown = matching.slice(current * TRANSFERS_PER_PAGE, (current + 1) * TRANSFERS_PER_PAGE);
  return (
    <>
      <h2>Transfers</h2>
      <label>
        Search by address
        <input
          name="search"
          class="mono"
          value={search}
          onInput={(e) => {
            setSearch(e.currentTarget.value);
            setPage(0);
          }}
          placeholder="0x…"
        />
      </label>
      <p class="muted">
        {matching.length} of {batch.transfers.length} transfers; page {current + 1} of {pages}
      </p>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">Recipient</th>
              <th scope="col" class="num">
                Points
              </th>
            </tr>
          </thead>
          <tbody>
            {shown.map((t, i) => (
              <tr>
                <td data-label="#">{current * TRANSFERS_PER_PAGE + i + 1}</td>
                <td data-label="Recipient" class="mono">
                  {t.toAddress}
                </td>
                <td data-label="Points" class="num amount">
                  {displayPoints(t.points)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <div class="row pager">
        <button type="button" disabled={current === 0} onClick={() => setPage(current - 1)}>
          Previous
        </button>
        <button type="button" disabled={current >= pages - 1} onClick={() => setPage(current + 1)}>
          Next
        </button>
      </div>
    </>
  );
}
