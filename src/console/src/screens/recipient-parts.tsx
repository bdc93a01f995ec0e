import type { BalancesAsOf, TransferPage } from "../../../client/index.js";
import { shortTime, useConsole } from "../context.js";
import { When } from "../when.js";
import { displayPoints, sumPoints } from "../lib/amounts.js";

/**
 * The parts of the Recipients screen (./recipients.tsx), each drawn from what it is given: one
 * address's page of transfers from this contract, with its pager, and its balances.
 */

/** One address's balances, now or as they stood at `asOf`. */
export interface ShownBalances {
  address: string;
  asOf: string | null;
  /** The figures without byAsset: an answer with asOf has none, and the lookup shows none. */
  balances: BalancesAsOf | null;
  error: string | null;
}

/** A page of transfers to `page.address`; `onPage` loads the page at a cursor with the history of cursors that leads back. */
export function RecipientTransfers({
  page,
  cursors,
  onPage,
}: {
  page: TransferPage & { address: string };
  cursors: readonly (string | undefined)[];
  onPage: (cursor: string | undefined, history: (string | undefined)[]) => void;
}) {
  const transfers = page.transfers;
  const keepSearching = transfers.length === 0 && page.cursor !== null;
  return (
    <>
      <h2>Transfers from this contract</h2>
      <p data-testid="recipient-summary">
        <span class="mono">{page.address}</span>: {transfers.length} transfer{transfers.length === 1 ? "" : "s"} on this page,{" "}
        <span class="amount">{displayPoints(sumPoints(transfers.filter((t) => t.status === "FINALIZED").map((t) => t.points)))}</span>{" "}
        points delivered among them.
      </p>
      {keepSearching && (
        <p data-testid="recipient-keep-searching">
          Nothing to this address among the most recent transfers searched so far; older ones remain.{" "}
          <button type="button" onClick={() => onPage(page.cursor!, [...cursors, page.cursor!])}>
            Keep searching
          </button>
        </p>
      )}
      <TransfersTable transfers={transfers} />
      <div class="row pager">
        <button type="button" disabled={cursors.length <= 1} onClick={() => onPage(cursors[cursors.length - 2], cursors.slice(0, -1))}>
          Previous page
        </button>
        <button type="button" disabled={page.cursor === null} onClick={() => onPage(page.cursor!, [...cursors, page.cursor!])}>
          Next page
        </button>
      </div>
    </>
  );
}

function TransfersTable({ transfers }: { transfers: TransferPage["transfers"] }) {
  return (
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
  );
}

/** Balance cards, one per point type, as the overview shows the contract's own. */
export function RecipientBalances({ shown }: { shown: ShownBalances }) {
  const { parameters } = useConsole();
  return (
    <section aria-labelledby="recipient-balances-title" data-testid="recipient-balances" data-as-of={shown.asOf ?? "now"}>
      <h2 id="recipient-balances-title">{shown.asOf === null ? "Balances now" : `Balances as of ${shortTime(shown.asOf)}`}</h2>
      {shown.error !== null && (
        <p role="alert" class="error">
          {shown.error}
        </p>
      )}
      {shown.balances !== null && (
        <div class="cards">
          {parameters.POINT_TYPES.map((pointType) => {
            const balance = shown.balances![pointType];
            if (balance === undefined) return null;
            return (
              <article class="card" data-point-type={pointType}>
                <h3>{pointType}</h3>
                <dl>
                  <dt>Available</dt>
                  <dd class="amount" data-field="available">
                    {displayPoints(balance.available)}
                  </dd>
                  <dt>Received (from transfers)</dt>
                  <dd class="amount" data-field="received">
                    {displayPoints(balance.receivedCumulative)}
                  </dd>
                  <dt>Earned (credits)</dt>
                  <dd class="amount" data-field="earned">
                    {displayPoints(balance.earnedCumulative)}
                  </dd>
                  <dt>Sent (finalized)</dt>
                  <dd class="amount" data-field="sent">
                    {displayPoints(balance.finalizedSentCumulative)}
                  </dd>
                  <dt>Pending sent</dt>
                  <dd class="amount" data-field="pending">
                    {displayPoints(balance.pendingSent)}
                  </dd>
                </dl>
              </article>
            );
          })}
        </div>
      )}
    </section>
  );
}
