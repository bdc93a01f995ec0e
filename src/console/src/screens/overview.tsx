import type { Batch, WebhookDelivery, WebhookEndpoint } from "../../../client/index.js";
import { DailyChart } from "../chart.js";
import { countdown, shortTime, useConsole, useLoad, useNow, useThrottled } from "../context.js";
import { displayPoints } from "../lib/amounts.js";
import { CHART_DAYS, loadDailyPoints } from "../lib/daily.js";

/** Pending batches read for the overview; more than this shows "at least". */
const PENDING_SHOWN = 1000;
/** Next finalizations listed by name. */
const NEXT_FINALIZATIONS_LISTED = 5;
/** Endpoints whose delivery health the overview reads (each one request). */
const ENDPOINTS_CHECKED = 10;
/** Recent deliveries per endpoint the health counts. */
const DELIVERIES_COUNTED = 50;
/**
 * The chart and the webhook health read many rows (up to 10 pages of batches, one request per
 * endpoint): on a busy ledger they follow the live feed at most this often, not on every event.
 */
const HEAVY_RELOAD_MS = 10_000;

export function Overview() {
  const { client, parameters, ledgerVersion } = useConsole();
  const balances = useLoad(() => client.getBalances(), [ledgerVersion]);
  const heavyVersion = useThrottled(ledgerVersion, HEAVY_RELOAD_MS);
  const daily = useLoad(() => loadDailyPoints(client, parameters.POINT_TYPES, Date.now()), [heavyVersion]);
  return (
    <section aria-labelledby="overview-title">
      <h1 id="overview-title">Overview</h1>
      <OperatorSource />
      {balances.error && (
        <p role="alert" class="error">
          {balances.error}
        </p>
      )}
      <div class="cards">
        {parameters.POINT_TYPES.map((pointType) => {
          const balance = balances.data?.[pointType];
          const figure = (value: string | undefined) => (value === undefined ? "…" : displayPoints(value));
          return (
            <article class="card" data-point-type={pointType}>
              <h2>{pointType}</h2>
              <dl>
                <dt>Available to send</dt>
                <dd class="amount" data-field="available">
                  {figure(balance?.available)}
                </dd>
                <dt>Pending (sent, not yet final)</dt>
                <dd class="amount" data-field="pending">
                  {figure(balance?.pendingSent)}
                </dd>
                <dt>Distributed (finalized, all time)</dt>
                <dd class="amount" data-field="distributed">
                  {figure(balance?.finalizedSentCumulative)}
                </dd>
                <dt>Earned (credits, all time)</dt>
                <dd class="amount" data-field="earned">
                  {figure(balance?.earnedCumulative)}
                </dd>
                <dt>Received (from transfers, all time)</dt>
                <dd class="amount" data-field="received">
                  {figure(balance?.receivedCumulative)}
                </dd>
              </dl>
            </article>
          );
        })}
      </div>
      <h2>Points per day, last {CHART_DAYS} days</h2>
      {daily.error && (
        <p role="alert" class="error">
          {daily.error}
        </p>
      )}
      {daily.data === null ? (
        !daily.error && <p class="muted">Loading…</p>
      ) : (
        <>
          {daily.data.capped && (
            <p class="notice" data-testid="chart-capped">
              The chart reads {daily.data.batchCount.toLocaleString("en")} batches at most, and this contract sent more in {CHART_DAYS}{" "}
              days: days before {daily.data.completeFrom} are incomplete.
            </p>
          )}
          <div class="charts">
            {[...daily.data.byPointType].map(([pointType, days]) =>
              days.every((d) => d.finalized === "0" && d.pending === "0") ? (
                <p class="muted" data-point-type={pointType}>
                  No {pointType} sent in the last {CHART_DAYS} days.
                </p>
              ) : (
                <DailyChart pointType={pointType} days={days} />
              ),
            )}
          </div>
        </>
      )}
      <div class="two-columns">
        <NextFinalizations />
        <WebhookHealth version={heavyVersion} />
      </div>
    </section>
  );
}

/**
 * Where this contract's operator comes from: registered by the administrator, or named on chain
 * in the operator registry that the service reads (GET /v1/chain), with the block last read.
 */
function OperatorSource() {
  const { client, session } = useConsole();
  const source = useLoad(async () => ({ chain: await client.getChain() }), []);
  const operator = session.operatorAddress;
  const chain = source.data?.chain;
  return (
    <p class="operator-source" data-testid="operator-source" data-source={chain === undefined ? "" : chain === null ? "admin" : "chain"}>
      <span>Operator{operator === null ? "" : " "}</span>
      {operator !== null && <span class="mono">{operator}</span>}
      {source.error && <span class="error"> ({source.error})</span>}
      {chain === null && <span>: registered by the administrator.</span>}
      {chain && (
        <span>
          : named on chain {chain.chainId ?? "?"} in the operator registry{" "}
          <span class="mono">{chain.registry ?? "(waiting for the chain's id)"}</span>, read at {chain.blockTag} block{" "}
          {chain.blockNumber ?? "—"}
          {chain.state === "unavailable" ? " (the chain does not answer now; sign-ins wait)" : ""}. A change or a ban on chain ends this
          session.
        </span>
      )}
    </p>
  );
}

function NextFinalizations() {
  const { client, ledgerVersion } = useConsole();
  const now = useNow();
  const pending = useLoad(() => client.listBatches({ status: "PENDING", sort: "ASC", limit: PENDING_SHOWN }), [ledgerVersion]);
  const batches = [...(pending.data?.batches ?? [])].sort((a, b) => a.finalizeAt.localeCompare(b.finalizeAt));
  const next = batches.slice(0, NEXT_FINALIZATIONS_LISTED);
  return (
    <div>
      <h2>Next finalizations</h2>
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
            : `${pending.data.cursor === null ? "" : "At least "}${batches.length} pending batch${batches.length === 1 ? "" : "es"}; next finalization ${shortTime(next[0]!.finalizeAt)} (${countdown(next[0]!.finalizeAt, now)}).`}
      </p>
      {next.length > 0 && (
        <ol class="next-list" data-testid="next-finalizations">
          {next.map((batch: Batch) => (
            <li data-batch-id={batch.id}>
              <a class="mono" href={`#/batches/${encodeURIComponent(batch.id)}`}>
                {batch.id}
              </a>
              <span>
                <span class="amount">{displayPoints(batch.points)}</span> {batch.pointType}
              </span>
              <span class="muted">{countdown(batch.finalizeAt, now)}</span>
            </li>
          ))}
        </ol>
      )}
      {batches.length > 0 && (
        <p>
          <a href="#/batches">See all batches</a>
        </p>
      )}
    </div>
  );
}

interface EndpointHealth {
  endpoint: WebhookEndpoint;
  counts: Record<WebhookDelivery["status"], number>;
  lastFailure: string | null;
}

async function loadHealth(list: () => Promise<WebhookEndpoint[]>, deliveries: (id: string) => Promise<WebhookDelivery[]>) {
  const endpoints = (await list()).slice(0, ENDPOINTS_CHECKED);
  return Promise.all(
    endpoints.map(async (endpoint): Promise<EndpointHealth> => {
      const recent = await deliveries(endpoint.id);
      const counts = { PENDING: 0, SUCCEEDED: 0, FAILED: 0 };
      for (const d of recent) counts[d.status]++;
      const failedAttempt = recent.flatMap((d) => d.attempts).find((a) => a.statusCode === null || a.statusCode >= 300);
      const lastFailure = failedAttempt ? `${failedAttempt.statusCode ?? failedAttempt.error ?? "no answer"}` : null;
      return { endpoint, counts, lastFailure };
    }),
  );
}

function WebhookHealth({ version }: { version: number }) {
  const { client } = useConsole();
  const health = useLoad(
    () =>
      loadHealth(
        () => client.listWebhookEndpoints(),
        async (id) => (await client.listWebhookDeliveries(id, { limit: DELIVERIES_COUNTED })).deliveries,
      ),
    [version],
  );
  return (
    <div>
      <h2>Webhook deliveries</h2>
      {health.error && (
        <p role="alert" class="error">
          {health.error}
        </p>
      )}
      {health.data !== null && health.data.length === 0 && (
        <p class="muted">
          No webhook endpoints. <a href="#/webhooks">Add one</a>
        </p>
      )}
      {health.data !== null && health.data.length > 0 && (
        <>
          <p class="muted">The last {DELIVERIES_COUNTED} deliveries of each endpoint.</p>
          <ul class="health" data-testid="webhook-health">
            {health.data.map(({ endpoint, counts, lastFailure }) => (
              <li
                data-endpoint-id={endpoint.id}
                data-failed={counts.FAILED}
                data-succeeded={counts.SUCCEEDED}
                data-pending={counts.PENDING}
              >
                <a class="mono url" href="#/webhooks">
                  {endpoint.url}
                </a>
                <span>
                  {endpoint.disabled ? <span class="status CANCELLED">disabled</span> : null}{" "}
                  <span class="status FINALIZED">{counts.SUCCEEDED} delivered</span>{" "}
                  <span class={`status ${counts.FAILED > 0 ? "CANCELLED" : ""}`}>{counts.FAILED} failed</span>{" "}
                  <span class="status PENDING">{counts.PENDING} waiting</span>
                </span>
                {lastFailure && <span class="muted">last failed attempt: {lastFailure}</span>}
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}
