import { useState } from "preact/hooks";
import type { LedgerEvent, PointsAdminClient } from "../../../client/index.js";
import { checksumAddress, parseAddress } from "../../../domain/address.js";
import { addressMessage, pointsMessage } from "../../../domain/messages.js";
import { parsePoints } from "../../../domain/points.js";
import { shortTime, useLoad } from "../context.js";
import { displayPoints } from "../lib/amounts.js";
import { Pager, useCursorPages } from "../pager.js";

/**
 * The parts of the Admin forms (./admin.tsx AdminForms), each reading alone: the operator form,
 * the registered contracts, the credit form and the recent admin events. A part's action runs
 * through `act`, which shows what it did (or why it failed) in the forms' one notice.
 */

/** Runs an admin action and shows the sentence it returns, or its failure. */
export type AdminAct = (what: () => Promise<string>) => Promise<void>;

/** Registered contracts shown per page. */
const CONTRACTS_PAGE_SIZE = 25;
/** Recent admin events shown: credits and operator changes of every contract. */
const ADMIN_EVENTS_SHOWN = 50;
/** The audit log is read from its start; past this many events the page stops reading. */
const MAX_EVENTS_SCANNED = 100_000;

/** A form's fields by name. */
function fieldsOf(event: Event): Record<string, string> {
  return Object.fromEntries(new FormData(event.currentTarget as HTMLFormElement)) as Record<string, string>;
}

/** Sets a contract's operator; `onSet` tells the registered contracts to read again. */
export function OperatorForm(props: { admin: PointsAdminClient; act: AdminAct; defaultContract: string; onSet: () => void }) {
  const { admin, act, defaultContract, onSet } = props;
  return (
    <form
      class="filters"
      onSubmit={(e) => {
        e.preventDefault();
        const { contract, operator } = fieldsOf(e);
        void act(async () => {
          const set = await admin.setOperator(contract!, operator!);
          onSet();
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
  );
}

/** Credits points to an address; the address and the points are checked here, before the service is asked. */
export function CreditForm(props: { admin: PointsAdminClient; act: AdminAct; pointTypes: readonly string[]; defaultAddress: string }) {
  const { admin, act, pointTypes, defaultAddress } = props;
  return (
    <>
      <p class="muted">A retry with the same credit id credits once.</p>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          const { address, pointType, points, creditId, asset, block } = fieldsOf(e);
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
          <input name="address" class="mono" defaultValue={defaultAddress} />
        </label>
        <label>
          Point type
          <select name="pointType">
            {pointTypes.map((t) => (
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
    </>
  );
}

/** The latest credits and operator changes of every contract, read when asked for. */
export function AdminEvents({ admin, act }: { admin: PointsAdminClient; act: AdminAct }) {
  const [events, setEvents] = useState<LedgerEvent[] | null>(null);
  return (
    <>
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
export function RegisteredContracts({ admin }: { admin: PointsAdminClient }) {
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
