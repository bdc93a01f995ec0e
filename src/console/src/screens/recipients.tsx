import { useState } from "preact/hooks";
import { PointsApiError, PublicClient, type BalancesAsOf, type TransferPage } from "../../../client/index.js";
import { checksumAddress, parseAddress } from "../../../domain/address.js";
import { addressMessage } from "../../../domain/messages.js";
import { shortTime, useConsole } from "../context.js";
import { When } from "../when.js";
import { displayPoints, sumPoints } from "../lib/amounts.js";
import { asOfIso } from "../lib/as-of.js";
import { errorText } from "../lib/errors.js";
import { loadAdminToken } from "../lib/session-store.js";
import { adminClientOf } from "./admin.js";

const PAGE_SIZE = 50;
/**
 * Pages one lookup reads while they come back empty. The service examines a bounded number of
 * transfers per filtered page (docs/api.md), so a recipient found only in old batches gets empty
 * pages with a cursor first; past this many the screen asks before searching further.
 */
const MAX_EMPTY_PAGES_PER_LOOKUP = 5;

/** One address's balances, now or as they stood at `asOf`. */
interface ShownBalances {
  address: string;
  asOf: string | null;
  /** The figures without byAsset: an answer with asOf has none, and the lookup shows none. */
  balances: BalancesAsOf | null;
  error: string | null;
}

/** What this contract sent one address: every transfer to it, newest first, with its batch's status; and its balances, now or as of a time. */
export function Recipients() {
  const { client, fail } = useConsole();
  const [address, setAddress] = useState("");
  const [asOf, setAsOf] = useState("");
  const [shown, setShown] = useState<ShownBalances | null>(null);
  // Any address's balances need the admin token held by this tab (Admin screen), or PUBLIC_READS on the service.
  const [admin] = useState(() => adminClientOf(loadAdminToken()));
  const [reader] = useState(() => admin ?? new PublicClient({ baseUrl: location.origin }));
  /**
   * Whether a lookup reads the balances now as well: with the admin token, or once a read without it
   * succeeded (the service has PUBLIC_READS). Otherwise only a lookup with As of asks, so a service
   * without public reads is not sent a request it refuses on every lookup.
   */
  const [balancesReadable, setBalancesReadable] = useState(admin !== null);
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
  const loadBalances = async (target: string, at: string | null) => {
    try {
      const balances = await reader.getAddressBalances(target, at === null ? {} : { asOf: at });
      setShown({ address: target, asOf: at, balances, error: null });
      setBalancesReadable(true);
    } catch (failure) {
      // Not the operator session's `fail`: a refusal here is about the admin token or PUBLIC_READS, not the session.
      const refused = PointsApiError.is(failure, "FORBIDDEN") || PointsApiError.is(failure, "UNAUTHORIZED");
      const hint = refused ? "Balances of an address need the admin token (Admin screen), or PUBLIC_READS=true on the service. " : "";
      setShown({ address: target, asOf: at, balances: null, error: `${hint}${errorText(failure)}` });
    }
  };
  const search = (event: Event) => {
    event.preventDefault();
    const key = parseAddress(address.trim());
    if (key === null) return setError(`Recipient address: ${addressMessage(address.trim())}`);
    const at = asOfIso(asOf, Date.now());
    if (at instanceof Error) return setError(at.message);
    const target = checksumAddress(key);
    void load(target, undefined, [undefined]);
    if (at !== null || balancesReadable) void loadBalances(target, at);
    else setShown(null);
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
        <label class="as-of">
          As of (UTC, optional)
          <input name="asOf" type="datetime-local" step="1" value={asOf} onInput={(e) => setAsOf(e.currentTarget.value)} />
        </label>
        <button type="submit">Look up</button>
      </form>
      {!balancesReadable && (
        <p class="muted" data-testid="recipient-balances-hint">
          With As of, the lookup also shows the address's balances as they stood then. Reading any address's balances needs the admin token
          (Admin screen), or PUBLIC_READS on the service.
        </p>
      )}
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {shown && <RecipientBalances shown={shown} />}
      {page && (
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

/** Balance cards, one per point type, as the overview shows the contract's own. */
function RecipientBalances({ shown }: { shown: ShownBalances }) {
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
