import { SecretOnce } from "../secret-once.js";
import { useRef, useState } from "preact/hooks";
import { PointsApiError, type WebhookDelivery, type WebhookEndpoint, type WebhookEventType } from "../../../client/index.js";
import { STREAM_EVENT_TYPES } from "../../../domain/events.js";
import { shortTime, useConsole, useLoad } from "../context.js";
import { When } from "../when.js";

const DELIVERIES_SHOWN = 20;
const PRIVATE_URL_SETTING = "WEBHOOK_ALLOW_PRIVATE_URLS";
/** How the service words a refused target (src/outbox/ssrf.ts): loopback, private, link-local, reserved. */
const REFUSED_TARGET = /loopback|private|link-local|reserved|refused address/i;

/** A secret shown once: it stays on screen until the operator says it is saved. */
interface ShownSecret {
  endpointId: string;
  text: string;
  secret: string;
}

/**
 * A refused private target names the setting that allows it, so the operator knows it is the
 * service's choice, not a typo. The service's message is kept; the hint is added only when the
 * message does not already name the setting.
 */
function withPrivateUrlHint(error: unknown, text: string): string {
  if (!PointsApiError.is(error, "VALIDATION_FAILED") || text.includes(PRIVATE_URL_SETTING)) return text;
  const details = Array.isArray(error.details) ? (error.details as { path: string; message: string }[]) : [];
  const refused = details.some((d) => d.path.endsWith("url") && REFUSED_TARGET.test(d.message));
  if (!refused) return text;
  return `${text}. The service refuses private, loopback and link-local targets; its administrator can allow them with ${PRIVATE_URL_SETTING}=true (for receivers on a trusted network).`;
}

export function Webhooks() {
  const { client, fail } = useConsole();
  const endpoints = useLoad(() => client.listWebhookEndpoints(), []);
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  const [secret, setSecret] = useState<ShownSecret | null>(null);
  const [url, setUrl] = useState("");
  const [description, setDescription] = useState("");
  const [types, setTypes] = useState<WebhookEventType[]>([...STREAM_EVENT_TYPES]);
  const act = async (what: () => Promise<string>, explain: (error: unknown, text: string) => string = (_e, text) => text) => {
    try {
      setMessage({ ok: true, text: await what() });
      endpoints.reload();
    } catch (error) {
      setMessage({ ok: false, text: explain(error, fail(error)) });
    }
  };
  const create = (event: Event) => {
    event.preventDefault();
    if (types.length === 0) return setMessage({ ok: false, text: "Choose at least one event type." });
    void act(async () => {
      const created = await client.createWebhookEndpoint({ url: url.trim(), types, description: description.trim() || undefined });
      setUrl("");
      setDescription("");
      setSecret({ endpointId: created.endpoint.id, text: `Endpoint ${created.endpoint.id} added.`, secret: created.secret });
      return `Endpoint ${created.endpoint.id} added for ${created.endpoint.types.join(", ")}.`;
    }, withPrivateUrlHint);
  };
  const toggle = (type: WebhookEventType, on: boolean) => setTypes(STREAM_EVENT_TYPES.filter((t) => (t === type ? on : types.includes(t))));
  return (
    <section aria-labelledby="webhooks-title">
      <h1 id="webhooks-title">Webhooks</h1>
      {secret && <SecretPanel shown={secret} onDismiss={() => setSecret(null)} />}
      {message && (
        <p role={message.ok ? "status" : "alert"} class={message.ok ? "notice mono-wrap" : "error mono-wrap"} data-testid="webhook-message">
          {message.text}
        </p>
      )}
      {endpoints.error && (
        <p role="alert" class="error">
          {endpoints.error}
        </p>
      )}
      <form class="wide-field" onSubmit={create}>
        <label>
          Endpoint URL
          <input
            name="url"
            type="url"
            class="mono"
            value={url}
            onInput={(e) => setUrl(e.currentTarget.value)}
            placeholder="https://…"
            required
          />
        </label>
        <label>
          Description (optional)
          <input name="description" value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        </label>
        <fieldset class="types">
          <legend>Event types sent to it</legend>
          {STREAM_EVENT_TYPES.map((type) => (
            <label>
              <input
                type="checkbox"
                name="types"
                value={type}
                checked={types.includes(type)}
                onChange={(e) => toggle(type, e.currentTarget.checked)}
              />
              {type}
            </label>
          ))}
        </fieldset>
        <button type="submit">Add endpoint</button>
      </form>
      {(endpoints.data ?? []).length === 0 && !endpoints.loading && <p class="muted">No endpoints yet.</p>}
      {(endpoints.data ?? []).map((endpoint) => (
        <Endpoint endpoint={endpoint} act={act} onSecret={setSecret} />
      ))}
    </section>
  );
}

function SecretPanel({ shown, onDismiss }: { shown: ShownSecret; onDismiss(): void }) {
  return (
    <SecretOnce
      secret={shown.secret}
      label="Signing secret"
      lead="The signing secret, shown only now:"
      testId="webhook-secret"
      valueTestId="webhook-secret-value"
      onDismiss={onDismiss}
    >
      <p>{shown.text} Keep the secret to verify the signatures of its deliveries: it is not shown again.</p>
    </SecretOnce>
  );
}

interface EndpointProps {
  endpoint: WebhookEndpoint;
  act: (what: () => Promise<string>) => Promise<void>;
  onSecret: (shown: ShownSecret) => void;
}

function Endpoint({ endpoint, act, onSecret }: EndpointProps) {
  const { client } = useConsole();
  const [round, setRound] = useState(0);
  const [since, setSince] = useState("");
  const deliveries = useLoad(() => client.listWebhookDeliveries(endpoint.id, { limit: DELIVERIES_SHOWN }), [endpoint.id, round]);
  const refresh = async (what: () => Promise<string>) => {
    await act(what);
    setRound((r) => r + 1);
  };
  const rotate = async () => {
    const rotated = await client.rotateWebhookSecret(endpoint.id);
    onSecret({
      endpointId: endpoint.id,
      text: `New secret for ${endpoint.id} (the old one signs beside it for 24 h).`,
      secret: rotated.secret,
    });
    return `Secret of ${endpoint.id} rotated.`;
  };
  return (
    <article class="card endpoint" data-endpoint-id={endpoint.id}>
      <h2 class="mono">{endpoint.url}</h2>
      <p class="muted">
        {endpoint.id} · {endpoint.disabled ? `disabled (${endpoint.disabledReason ?? "by the operator"})` : "enabled"} ·{" "}
        <span data-field="types">{endpoint.types.join(", ")}</span>
        {endpoint.description ? ` · ${endpoint.description}` : ""}
      </p>
      <div class="row">
        <button
          type="button"
          onClick={() => void refresh(async () => `Test delivery ${(await client.testWebhookEndpoint(endpoint.id)).deliveryId} queued.`)}
        >
          Send test
        </button>
        <button type="button" onClick={() => void refresh(rotate)}>
          Rotate secret
        </button>
        <button
          type="button"
          onClick={() =>
            void refresh(async () =>
              (await client.updateWebhookEndpoint(endpoint.id, { disabled: !endpoint.disabled })).disabled
                ? "Endpoint disabled."
                : "Endpoint enabled.",
            )
          }
        >
          {endpoint.disabled ? "Enable" : "Disable"}
        </button>
        <DeleteButton endpoint={endpoint} act={act} />
        <button type="button" onClick={() => setRound((r) => r + 1)}>
          Refresh deliveries
        </button>
      </div>
      <form
        class="wide-field"
        onSubmit={(e) => (
          e.preventDefault(),
          void refresh(async () => `${await client.recoverWebhookDeliveries(endpoint.id, new Date(since))} failed deliveries queued again.`)
        )}
      >
        <label>
          Recover failed deliveries since
          <input type="datetime-local" name="since" value={since} onInput={(e) => setSince(e.currentTarget.value)} required />
        </label>
        <button type="submit">Recover</button>
      </form>
      {deliveries.error && (
        <p role="alert" class="error">
          {deliveries.error}
        </p>
      )}
      <Deliveries endpointId={endpoint.id} deliveries={deliveries.data?.deliveries ?? []} refresh={refresh} />
    </article>
  );
}

function DeleteButton({ endpoint, act }: Omit<EndpointProps, "onSecret">) {
  const { client } = useConsole();
  const dialog = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const confirm = async () => {
    setBusy(true);
    await act(async () => (await client.deleteWebhookEndpoint(endpoint.id), `Endpoint ${endpoint.id} deleted.`));
    setBusy(false);
    dialog.current?.close();
  };
  return (
    <>
      <button type="button" class="danger" onClick={() => dialog.current?.showModal()}>
        Delete…
      </button>
      <dialog ref={dialog} aria-labelledby={`delete-${endpoint.id}`}>
        <h2 id={`delete-${endpoint.id}`}>Delete this endpoint?</h2>
        <p class="mono-wrap">
          <span class="mono">{endpoint.url}</span> will receive no more events, and its delivery history goes with it. This cannot be
          undone.
        </p>
        <div class="row">
          <button type="button" class="danger" disabled={busy} onClick={() => void confirm()}>
            Yes, delete the endpoint
          </button>
          <button type="button" onClick={() => dialog.current?.close()} autofocus>
            Keep it
          </button>
        </div>
      </dialog>
    </>
  );
}

function Deliveries(props: { endpointId: string; deliveries: WebhookDelivery[]; refresh: (what: () => Promise<string>) => Promise<void> }) {
  const { client } = useConsole();
  if (props.deliveries.length === 0) return <p class="muted">No deliveries yet.</p>;
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Delivery</th>
            <th scope="col">Event</th>
            <th scope="col">Status</th>
            <th scope="col">Attempts</th>
            <th scope="col">Next attempt</th>
            <th scope="col">
              <span class="visually-hidden">Action</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {props.deliveries.map((d) => {
            const last = d.attempts[d.attempts.length - 1];
            return (
              <tr data-delivery-status={d.status} data-event-type={d.eventType}>
                <td data-label="Delivery" class="mono">
                  {d.id}
                </td>
                <td data-label="Event">{d.eventType}</td>
                <td data-label="Status">
                  <span class={`status ${d.status === "SUCCEEDED" ? "FINALIZED" : d.status === "FAILED" ? "CANCELLED" : "PENDING"}`}>
                    {d.status}
                  </span>
                </td>
                <td data-label="Attempts" class="wrap">
                  {last === undefined
                    ? "not sent yet"
                    : `${d.attempts.length}; last ${shortTime(last.at)} → ${last.statusCode ?? last.error ?? "no answer"} (${last.durationMs} ms)`}
                </td>
                <td data-label="Next attempt">
                  <When iso={d.nextAttemptAt} />
                </td>
                <td data-label="Action">
                  <button
                    type="button"
                    onClick={() =>
                      void props.refresh(
                        async () => `Delivery ${(await client.retryWebhookDelivery(props.endpointId, d.id)).id} sent again.`,
                      )
                    }
                  >
                    Retry
                  </button>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
