import type { LedgerEvent } from "../../../client/index.js";
import { shortTime, useConsole, useThrottled } from "../context.js";
import { LogCheckpoint } from "../log-checkpoint.js";
import { actorText, actorTitle } from "../lib/actors.js";
import { displayPoints } from "../lib/amounts.js";

function summary(event: LedgerEvent) {
  switch (event.type) {
    case "batch.accepted":
    case "batch.cancelled":
    case "batch.finalized": {
      const batch = event.data.batch;
      return (
        <>
          <a class="mono" href={`#/batches/${encodeURIComponent(batch.id)}`}>
            {batch.id}
          </a>{" "}
          <span class="amount">{displayPoints(batch.points)}</span> {batch.pointType} to {batch.transferCount} recipient
          {batch.transferCount === 1 ? "" : "s"}
        </>
      );
    }
    case "credit.created":
      return (
        <>
          credit {event.data.creditId}: <span class="amount">{displayPoints(event.data.points)}</span> {event.data.pointType}
        </>
      );
    case "operator.changed":
      return `operator is now ${event.data.operatorAddress}`;
    case "api_key.created": {
      const key = event.data.apiKey;
      return (
        <>
          <a href="#/api-keys">key “{key.name}”</a> <span class="mono">{key.prefix}…</span> for {key.scopes.join(", ")}
          {key.expiresAt === null ? "" : `, expires ${shortTime(key.expiresAt)}`}
        </>
      );
    }
    case "api_key.revoked": {
      const key = event.data.apiKey;
      return (
        <>
          <a href="#/api-keys">key “{key.name}”</a> <span class="mono">{key.prefix}…</span> revoked
          {key.revokedReason === "operator_changed" ? " because the operator changed" : ""}
        </>
      );
    }
    default:
      return "";
  }
}

/** The log's checkpoint follows the feed's events at most this often (a checkpoint is signed about every second). */
const CHECKPOINT_RELOAD_MS = 5_000;

export function LiveFeed() {
  const { client, feed, feedStatus, ledgerVersion } = useConsole();
  const checkpointVersion = useThrottled(ledgerVersion, CHECKPOINT_RELOAD_MS);
  return (
    <section aria-labelledby="feed-title">
      <h1 id="feed-title">Live feed</h1>
      <p role="status" data-testid="feed-status">
        {feedStatus === "live"
          ? "Live: new events appear within a second."
          : feedStatus === "stopped"
            ? "The event stream stopped."
            : "Connecting to the event stream…"}
      </p>
      {feed.length === 0 ? (
        <p class="muted">No events yet.</p>
      ) : (
        <ol class="feed" aria-live="polite">
          {feed.map(({ event }) => (
            <li data-event-type={event.type} key={event.id}>
              <span class="mono time">{shortTime(event.occurredAt)}</span>{" "}
              <span class={`type ${event.type.replace(".", "-")}`}>{event.type}</span> <span class="what">{summary(event)}</span>{" "}
              <span class="by" title={actorTitle(event.actor)}>
                by {actorText(event.actor)}
              </span>
            </li>
          ))}
        </ol>
      )}
      <LogCheckpoint log={client.log} version={checkpointVersion} />
    </section>
  );
}
