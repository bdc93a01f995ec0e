import { useState } from "preact/hooks";
import { PointsAdminClient, type LedgerEvent, type Parameters } from "../../../client/index.js";
import { checksumAddress, parseAddress } from "../../../domain/address.js";
import { addressMessage, pointsMessage } from "../../../domain/messages.js";
import { parsePoints } from "../../../domain/points.js";
import { shortTime, useConsole, useFail, useLoad } from "../context.js";
import { displayPoints } from "../lib/amounts.js";
import { errorText } from "../lib/errors.js";
import { loadAdminToken, saveAdminToken } from "../lib/session-store.js";
import { checkedAdminClient } from "../lib/tokens.js";
import { Pager, useCursorPages } from "../pager.js";

/** Registered contracts shown per page. */
const CONTRACTS_PAGE_SIZE = 25;
/** Recent admin events shown: credits and operator changes of every contract. */
const ADMIN_EVENTS_SHOWN = 50;
/** The audit log is read from its start; past this many events the page stops reading. */
const MAX_EVENTS_SCANNED = 100_000;

/** The operator console's Admin screen: the admin token is asked for here, checked at once, and kept for this tab. */
export function Admin() {
  const { parameters, session } = useConsole();
  const [admin, setAdmin] = useState<PointsAdminClient | null>(() => adminClientOf(loadAdminToken()));
  if (admin === null) return <AdminTokenForm onAccepted={(token, client) => (saveAdminToken(token), setAdmin(client))} />;
  return (
    <section aria-labelledby="admin-title">
      <h1 id="admin-title">Admin</h1>
      <button type="button" onClick={() => (saveAdminToken(null), setAdmin(null))}>
        Forget admin token
      </button>
      <AdminForms admin={admin} parameters={parameters} defaultContract={session.contractAddress} />
    </section>
  );
}

export function adminClientOf(token: string | null): PointsAdminClient | null {
  return token === null ? null : new PointsAdminClient({ baseUrl: location.origin, adminToken: token, retry: { maxAttempts: 2 } });
}

function AdminTokenForm({ onAccepted }: { onAccepted(token: string, client: PointsAdminClient): void }) {
  const [draft, setDraft] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      // Checked before any form shows: a wrong token is refused here, not on the first action.
      onAccepted(draft.trim(), await checkedAdminClient(draft.trim()));
    } catch (failure) {
      setError(errorText(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="admin-title">
      <h1 id="admin-title">Admin</h1>
      <p class="muted">Operators and credits need the service's ADMIN_TOKEN. It is kept for this tab only.</p>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      <form onSubmit={submit}>
        <label>
          Admin token
          <input type="password" name="adminToken" value={draft} onInput={(e) => setDraft(e.currentTarget.value)} autoComplete="off" />
        </label>
        <button type="submit" disabled={busy || draft.trim() === ""}>
          Use admin token
        </button>
      </form>
    </section>
  );
}

/** Operators, registered contracts, credits and the admin events: in the operator console's Admin screen and the admin shell. */
export function AdminForms(props: { admin: PointsAdminClient; parameters: Parameters; defaultContract: string }) {
  const { admin, parameters, defaultContract } = props;
  const fail = useFail();
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);
  const [events, setEvents] = useState<LedgerEvent[] | null>(null);
  // Grows with every operator set here: the list of registered contracts reads again from its first page.
  const [contractsVersion, setContractsVersion] = useState(0);
  const act = async (what: () => Promise<string>) => {
    try {
      setResult({ ok: true, text: await what() });
    } catch (error) {
      setResult({ ok: false, text: fail(error) });
    }
  };
  const form = (event: Event) => Object.fromEntries(new FormData(event.currentTarget as HTMLFormElement)) as Record<string, string>;
  return (
    <>
      {result && (
        <p role={result.ok ? "status" : "alert"} class={`${result.ok ? "notice" : "error"} mono-wrap`}>
          {result.text}
        </p>
      )}
      <h2>Operator</h2>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          const { contract, operator } = form(e);
          void act(async () => {
            const set = await admin.setOperator(contract!, operator!);
            setContractsVersion((v) => v + 1);
            return `The operator of ${set.contractAddress} is now ${set.operatorAddress}.`;
          });
        }}
      >
        <label class="address-field">
          Contract
          <input name="contract" class="mono" defaultValue={defaultContract} />
        </label>
        <label class="address-field">
          Operator address
          <input name="operator" class="mono" placeholder="0x…" />
        </label>
        <button type="submit">Set operator</button>
      </form>
      <h2>Registered contracts</h2>
      <RegisteredContracts key={contractsVersion} admin={admin} />
      <h2>Credit</h2>
      <p class="muted">A retry with the same credit id credits once.</p>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          const { address, pointType, points, creditId, asset, block } = form(e);
          void act(async () => {
            if (parseAddress(address!) === null) throw new Error(`Address: ${addressMessage(address)}`);
            if (parsePoints(points!) === null) throw new Error(`Points: ${pointsMessage(points)}`);
            const source = { asset: asset || undefined, block: block ? Number(block) : undefined };
            const done = await admin.credit(address!, creditId || crypto.randomUUID(), pointType!, points!, source);
            return `${done.created ? "Credited" : "Already credited (same content)"} ${displayPoints(points!)} ${pointType} to ${checksumAddress(parseAddress(address!)!)} as ${done.creditId}.`;
          });
        }}
      >
        <label class="address-field">
          Address
          <input name="address" class="mono" defaultValue={defaultContract} />
        </label>
        <label>
          Point type
          <select name="pointType">
            {parameters.POINT_TYPES.map((t) => (
              <option value={t}>{t}</option>
            ))}
          </select>
        </label>
        <label>
          Points
          <input name="points" class="mono" inputMode="decimal" placeholder="1000" />
        </label>
        <label>
          Credit id (optional)
          <input name="creditId" class="mono" />
        </label>
        <label>
          Asset (optional)
          <input name="asset" placeholder="ETH" />
        </label>
        <label>
          Block (optional)
          <input name="block" inputMode="numeric" />
        </label>
        <button type="submit">Credit points</button>
      </form>
      <h2>Recent admin events</h2>
      <button type="button" onClick={() => void act(async () => (setEvents(await latestEvents(admin)), "Events loaded."))}>
        Load recent events
      </button>
      {events && (
        <ul class="events">
          {events.map((e) => (
            <li>
              <span class="mono">{shortTime(e.occurredAt)}</span> {e.type} <span class="mono">{e.contractAddress ?? ""}</span>
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

/** Every contract with an operator, by address, a page at a time (the batches screen's pager). */
function RegisteredContracts({ admin }: { admin: PointsAdminClient }) {
  const pages = useCursorPages();
  const cursor = pages.cursor;
  const page = useLoad(() => admin.listContracts({ limit: CONTRACTS_PAGE_SIZE, cursor }), [admin, cursor]);
  const contracts = page.data?.contracts ?? [];
  return (
    <>
      {page.error && (
        <p role="alert" class="error">
          {page.error}
        </p>
      )}
      {page.data && contracts.length === 0 && <p class="muted">No contract has an operator yet.</p>}
      {contracts.length > 0 && (
        <div class="table-wrap">
          <table data-testid="registered-contracts">
            <thead>
              <tr>
                <th scope="col">Contract</th>
                <th scope="col">Operator</th>
                <th scope="col">Set</th>
              </tr>
            </thead>
            <tbody>
              {contracts.map((c) => (
                <tr data-contract-address={c.contractAddress}>
                  <td data-label="Contract" class="mono">
                    {c.contractAddress}
                  </td>
                  <td data-label="Operator" class="mono" data-field="operator">
                    {c.operatorAddress}
                  </td>
                  <td data-label="Set">{shortTime(c.updatedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager pages={pages} nextCursor={page.data?.cursor} noun="contracts" />
    </>
  );
}

async function latestEvents(admin: PointsAdminClient): Promise<LedgerEvent[]> {
  const kept: LedgerEvent[] = [];
  let scanned = 0;
  for await (const event of admin.events({ types: ["credit.created", "operator.changed"], limit: 1000 })) {
    if (++scanned > MAX_EVENTS_SCANNED) break;
    kept.push(event);
    if (kept.length > ADMIN_EVENTS_SHOWN) kept.shift();
  }
  return kept.reverse();
}
