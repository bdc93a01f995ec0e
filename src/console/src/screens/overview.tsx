import { countdown, shortTime, useConsole, useLoad, useNow } from "../context.js";
import { displayPoints, sumPoints } from "../lib/amounts.js";

/** Pending batches read for the overview; more than this shows "at least". */
const PENDING_SHOWN = 1000;

export function Overview() {
  const { client, parameters, ledgerVersion } = useConsole();
  const now = useNow();
  const balances = useLoad(() => client.getBalances(), [ledgerVersion]);
  const pending = useLoad(() => client.listBatches({ status: "PENDING", sort: "ASC", limit: PENDING_SHOWN }), [ledgerVersion]);
  const batches = pending.data?.batches ?? [];
  const next = batches.reduce<string | null>(
    (earliest, b) => (earliest === null || b.finalizeAt < earliest ? b.finalizeAt : earliest),
    null,
  );
  return (
    <section aria-labelledby="overview-title">
      <h1 id="overview-title">Overview</h1>
      {balances.error && (
        <p role="alert" class="error">
          {balances.error}
        </p>
      )}
      <div class="cards">
        {parameters.POINT_TYPES.map((pointType) => {
          const balance = balances.data?.[pointType];
          return (
            <article class="card" data-point-type={pointType}>
              <h2>{pointType}</h2>
              <dl>
                <dt>Available</dt>
                <dd class="mono" data-field="available">
                  {balance ? displayPoints(balance.available) : "…"}
                </dd>
                <dt>Pending</dt>
                <dd class="mono" data-field="pending">
                  {balance ? displayPoints(balance.pendingSent) : "…"}
                </dd>
                <dt>Distributed</dt>
                <dd class="mono" data-field="distributed">
                  {balance ? displayPoints(balance.finalizedSentCumulative) : "…"}
                </dd>
                <dt>Received in total</dt>
                <dd class="mono">{balance ? displayPoints(sumPoints([balance.earnedCumulative, balance.receivedCumulative])) : "…"}</dd>
              </dl>
            </article>
          );
        })}
      </div>
      <h2>Pending batches</h2>
      {pending.error && (
        <p role="alert" class="error">
          {pending.error}
        </p>
      )}
      <p data-testid="pending-summary">
        {pending.data === null
          ? "…"
          : batches.length === 0
            ? "No batch is waiting to finalize."
            : `${pending.data.cursor === null ? "" : "At least "}${batches.length} pending batch${batches.length === 1 ? "" : "es"}; next finalization ${shortTime(next)} (${countdown(next!, now)}).`}
      </p>
      {batches.length > 0 && (
        <p>
          <a href="#/batches">See all batches</a>
        </p>
      )}
    </section>
  );
}
