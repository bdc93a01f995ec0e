import type { LogStatus, TransparencyLog } from "../../client/index.js";
import { shortTime, useLoad } from "./context.js";

/** Past this age the oldest waiting event is shown as a fault: events are logged about a second after their commit. */
const LAG_WARNING_SECONDS = 60;

/** The log's lag in words: nothing waits, or since when the oldest committed event waits. */
function lagText(status: LogStatus): string {
  if (status.oldestUnloggedAt === null) return "nothing: every committed event is logged";
  const seconds = Math.floor(status.lagSeconds);
  const age = seconds < 120 ? `${seconds} s` : `${Math.floor(seconds / 60)} min`;
  const note = status.lagSeconds > LAG_WARNING_SECONDS ? " — the log is not advancing" : "";
  return `events since ${shortTime(status.oldestUnloggedAt)} (${age})${note}`;
}

/**
 * The transparency log's current checkpoint (docs/transparency.md) and how to witness it: its
 * size, root hash and signing time, what still waits to be logged (the log's lag), its signature checked here with the key the service serves,
 * and the `points-ledger-witness` line a witness runs (the client package's command). Shown on the live feed (operator) and
 * the admin console; `version` reloads it (the live feed's events, throttled).
 */
export function LogCheckpoint(props: { log: TransparencyLog; version: number }) {
  const { log, version } = props;
  const latest = useLoad(async () => {
    const key = await log.key();
    const [signed, status] = await Promise.all([log.signedCheckpoint(key), log.status()]);
    return { key, ...signed, status };
  }, [log, version]);
  const url = location.origin;
  return (
    <section aria-labelledby="log-title" class="log-checkpoint" data-testid="log-checkpoint">
      <h2 id="log-title">Transparency log</h2>
      <p>
        Every event is appended to a public, append-only Merkle log. Its signed checkpoint lets anyone check that the history shown here is
        the one everybody is shown, and that it is never rewritten: it proves what was recorded and in what order, not that points were
        deserved.
      </p>
      {latest.error && (
        <p role="alert" class="error">
          {latest.error}
        </p>
      )}
      {latest.data === null ? (
        !latest.error && <p class="muted">Loading…</p>
      ) : (
        <dl class="facts">
          <dt>Log</dt>
          <dd class="mono" data-field="origin">
            {latest.data.checkpoint.origin}
          </dd>
          <dt>Events</dt>
          <dd data-field="size">{latest.data.checkpoint.size.toLocaleString("en")}</dd>
          <dt>Root hash</dt>
          <dd class="mono" data-field="root">
            {latest.data.checkpoint.rootHash}
          </dd>
          <dt>Signed</dt>
          <dd data-field="signed-at">{latest.data.signedAt === null ? "—" : shortTime(latest.data.signedAt)}</dd>
          <dt>Waiting to be logged</dt>
          <dd data-field="lag" class={latest.data.status.lagSeconds > LAG_WARNING_SECONDS ? "error" : undefined}>
            {lagText(latest.data.status)}
          </dd>
          <dt>Verifier key</dt>
          <dd class="mono" data-field="key">
            {latest.data.key}
          </dd>
        </dl>
      )}
      <p class="muted">The signature was checked in this page with the key the service serves; a witness keeps the key it saw first.</p>
      <h3>Witness it</h3>
      <p>
        Install the client package (its tarball, <code>@points-ledger/client</code>: it has no dependencies) on a machine the operator does
        not control and run this every minute from cron. It checks the signature, proves the new checkpoint extends the one it saved last,
        follows a restore the log announced, and exits 1 if the history was rewritten or forked:
      </p>
      <pre class="command">
        <code data-testid="witness-command">npx points-ledger-witness --url {url} --state witness.json</code>
      </pre>
      <button type="button" onClick={latest.reload} disabled={latest.loading}>
        Refresh
      </button>
    </section>
  );
}
