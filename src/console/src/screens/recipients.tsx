import { useState } from "preact/hooks";
import type { TransferPage } from "../../../client/index.js";
import { checksumAddress, parseAddress } from "../../../domain/address.js";
import { addressMessage } from "../../../domain/messages.js";
import { useConsole } from "../context.js";
import { When } from "../when.js";
import { displayPoints, sumPoints } from "../lib/amounts.js";

const PAGE_SIZE = 50;
/**
 * Pages one lookup reads while they come back empty. The service examines a bounded number of
 * transfers per filtered page (docs/api.md), so a recipient found only in old batches gets empty
 * pages with a cursor first; past this many the screen asks before searching further.
 */
const MAX_EMPTY_PAGES_PER_LOOKUP = 5;

/** What this contract sent one address: every transfer to it, newest first, with its batch's status. */
export function Recipients() {
  const { client, fail } = useConsole();
  const [address, setAddress] = useState("");
  const [page, setPage] = useState<(TransferPage & { address: string }) | null>(null);
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [error, setError] = useState<string | null>(null);
  const load = async (target: string, cursor: string | undefined, history: (string | undefined)[]) => {
    try {
      let result = await client.listTransfers({ toAddress: target, limit: PAGE_SIZE, cursor });
      for (let pages = 1; result.transfers.length === 0 && result.cursor !== null && pages < MAX_EMPTY_PAGES_PER_LOOKUP; pages++) {
        result = await client.listTransfers({ toAddress: target, limit: PAGE_SIZE, cursor: result.cursor });
      }
      setPage({ ...result, address: target });
      setCursors(history);
      setError(null);
    } catch (failure) {
      setError(fail(failure));
    }
  };
  const search = (event: Event) => {
    event.preventDefault();
    const key = parseAddress(address.trim());
    if (key === null) return setError(`Recipient address: ${addressMessage(address.trim())}`);
    void load(checksumAddress(key), undefined, [undefined]);
  };
  const transfers = page?.transfers ?? [];
  const keepSearching = page !== null && transfers.length === 0 && page.cursor !== null;
  return (
    <section aria-labelledby="recipients-title">
      <h1 id="recipients-title">Recipients</h1>
      <form class="wide-field" onSubmit={search}>
        <label>
          Recipient address
          <input name="recipient" class="mono" value={address} onInput={(e) => setAddress(e.currentTarget.value)} placeholder="0x…" />
        </label>
        <button type="submit">Look up</button>
      </form>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {page && (
        <>
          <p data-testid="recipient-summary">
            <span class="mono">{page.address}</span>: {transfers.length} transfer{transfers.length === 1 ? "" : "s"} on this page,{" "}
            <span class="amount">{displayPoints(sumPoints(transfers.filter((t) => t.status === "FINALIZED").map((t) => t.points)))}</span>{" "}
            points delivered among them.
          </p>
          {keepSearching && (
            <p data-testid="recipient-keep-searching">
              Nothing to this address among the most recent transfers searched so far; older ones remain.{" "}
              <button type="button" onClick={() => void load(page.address, page.cursor!, [...cursors, page.cursor!])}>
                Keep searching
              </button>
            </p>
          )}
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Batch</th>
                  <th scope="col">Point type</th>
                  <th scope="col" class="num">
                    Points
                  </th>
                  <th scope="col">Status</th>
                  <th scope="col">Created</th>
                  <th scope="col">Finalized</th>
                </tr>
              </thead>
              <tbody>
                {transfers.map((t) => (
                  <tr data-batch-id={t.batchId}>
                    <td data-label="Batch" class="mono">
                      <a href={`#/batches/${encodeURIComponent(t.batchId)}`}>{t.batchId}</a>
                    </td>
                    <td data-label="Point type">{t.pointType}</td>
                    <td data-label="Points" class="num amount">
                      {displayPoints(t.points)}
                    </td>
                    <td data-label="Status">
                      <span class={`status ${t.status}`}>{t.status}</span>
                    </td>
                    <td data-label="Created">
                      <When iso={t.createdAt} />
                    </td>
                    <td data-label="Finalized">
                      <When iso={t.finalizedAt} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div class="row pager">
            <button
              type="button"
              disabled={cursors.length <= 1}
              onClick={() => void load(page.address, cursors[cursors.length - 2], cursors.slice(0, -1))}
            >
              Previous page
            </button>
            <button
              type="button"
              disabled={page.cursor === null}
              onClick={() => void load(page.address, page.cursor!, [...cursors, page.cursor!])}
            >
              Next page
            </button>
          </div>
        </>
      )}
    </section>
  );
}
