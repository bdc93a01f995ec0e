import { useState } from "preact/hooks";
import type { WebhookEndpoint } from "../../../client/index.js";
import { shortTime, useConsole, useLoad } from "../context.js";

const DELIVERIES_SHOWN = 20;

export function Webhooks() {
  const { client, fail } = useConsole();
  const endpoints = useLoad(() => client.listWebhookEndpoints(), []);
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  const [url, setUrl] = useState("");
  const [description, setDescription] = useState("");
  const act = async (what: () => Promise<string>) => {
    try {
      setMessage({ ok: true, text: await what() });
      endpoints.reload();
    } catch (error) {
      setMessage({ ok: false, text: fail(error) });
    }
  };
  const create = (event: Event) => {
    event.preventDefault();
    void act(async () => {
      const created = await client.createWebhookEndpoint({ url: url.trim(), description: description.trim() || undefined });
      setUrl("");
      setDescription("");
      return `Endpoint ${created.endpoint.id} added. Its signing secret, shown only now: ${created.secret}`;
    });
  };
  return (
    <section aria-labelledby="webhooks-title">
      <h1 id="webhooks-title">Webhooks</h1>
      {message && (
        <p role={message.ok ? "status" : "alert"} class={message.ok ? "notice mono-wrap" : "error"} data-testid="webhook-message">
          {message.text}
        </p>
      )}
      {endpoints.error && (
        <p role="alert" class="error">
          {endpoints.error}
        </p>
      )}
      <form class="filters" onSubmit={create}>
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
        <button type="submit">Add endpoint</button>
      </form>
      {(endpoints.data ?? []).length === 0 && !endpoints.loading && <p class="muted">No endpoints yet.</p>}
      {(endpoints.data ?? []).map((endpoint) => (
        <Endpoint endpoint={endpoint} act={act} />
      ))}
    </section>
  );
}

function Endpoint({ endpoint, act }: { endpoint: WebhookEndpoint; act: (what: () => Promise<string>) => Promise<void> }) {
  const { client, fail } = useConsole();
  const [round, setRound] = useState(0);
  const [since, setSince] = useState("");
  const deliveries = useLoad(() => client.listWebhookDeliveries(endpoint.id, { limit: DELIVERIES_SHOWN }), [endpoint.id, round]);
  const refresh = async (what: () => Promise<string>) => {
    await act(what);
    setRound((r) => r + 1);
  };
  return (
    <article class="card endpoint" data-endpoint-id={endpoint.id}>
      <h2 class="mono">{endpoint.url}</h2>
      <p class="muted">
        {endpoint.id} · {endpoint.disabled ? `disabled (${endpoint.disabledReason ?? "by the operator"})` : "enabled"} ·{" "}
        {endpoint.types.join(", ")}
        {endpoint.description ? ` · ${endpoint.description}` : ""}
      </p>
      <div class="row">
        <button
          type="button"
          onClick={() => void refresh(async () => `Test delivery ${(await client.testWebhookEndpoint(endpoint.id)).deliveryId} queued.`)}
        >
          Send test
        </button>
        <button
          type="button"
          onClick={() =>
            void refresh(
              async () => `New secret (the old one signs beside it for 24 h): ${(await client.rotateWebhookSecret(endpoint.id)).secret}`,
            )
          }
        >
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
        <button
          type="button"
          class="danger"
          onClick={() => void refresh(async () => (await client.deleteWebhookEndpoint(endpoint.id), "Endpoint deleted."))}
        >
          Delete
        </button>
        <button type="button" onClick={() => setRound((r) => r + 1)}>
          Refresh deliveries
        </button>
      </div>
      <form
        class="row"
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
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Delivery</th>
              <th scope="col">Event</th>
              <th scope="col">Status</th>
              <th scope="col">Attempts</th>
              <th scope="col">Next attempt</th>
              <th scope="col" />
            </tr>
          </thead>
          <tbody>
            {(deliveries.data?.deliveries ?? []).map((d) => (
              <tr data-delivery-status={d.status} data-event-type={d.eventType}>
                <td class="mono">{d.id}</td>
                <td>{d.eventType}</td>
                <td>
                  <span class={`status ${d.status === "SUCCEEDED" ? "FINALIZED" : d.status === "FAILED" ? "CANCELLED" : "PENDING"}`}>
                    {d.status}
                  </span>
                </td>
                <td>
                  {d.attempts
                    .map((a) => `${shortTime(a.at)} → ${a.statusCode ?? a.error ?? "no answer"} (${a.durationMs} ms)`)
                    .join("; ") || "not sent yet"}
                </td>
                <td>{shortTime(d.nextAttemptAt)}</td>
                <td>
                  <button
                    type="button"
                    onClick={() =>
                      void refresh(async () => `Delivery ${(await client.retryWebhookDelivery(endpoint.id, d.id)).id} sent again.`).catch(
                        fail,
                      )
                    }
                  >
                    Retry
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </article>
  );
}
