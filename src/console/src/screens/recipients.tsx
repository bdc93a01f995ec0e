import { useState } from "preact/hooks";
import { PointsApiError, PublicClient, type TransferPage } from "../../../client/index.js";
import { checksumAddress, parseAddress } from "../../../domain/address.js";
import { addressMessage } from "../../../domain/messages.js";
import { useConsole } from "../context.js";
import { asOfIso } from "../lib/as-of.js";
import { errorText } from "../lib/errors.js";
import { loadAdminToken } from "../lib/session-store.js";
import { adminClientOf } from "./admin.js";
import { RecipientBalances, RecipientTransfers, type ShownBalances } from "./recipient-parts.js";

const PAGE_SIZE = 50;
/**
 * Pages one lookup reads while they come back empty. The service examines a bounded number of
 * transfers per filtered page (docs/api.md), so a recipient found only in old batches gets empty
 * pages with a cursor first; past this many the screen asks before searching further.
 */
const MAX_EMPTY_PAGES_PER_LOOKUP = 5;

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
      {page && <RecipientTransfers page={page} cursors={cursors} onPage={(cursor, history) => void load(page.address, cursor, history)} />}
    </section>
  );
}
