import { SecretOnce } from "../secret-once.js";
import { useRef, useState } from "preact/hooks";
import type { ApiKey, ApiKeyScope } from "../../../client/index.js";
import { API_KEY_SCOPES } from "../../../domain/api-keys.js";
import { API_KEY_NAME_MAX_LENGTH } from "../../../domain/limits.js";
import { useConsole, useLoad } from "../context.js";
import { actorText, actorTitle } from "../lib/actors.js";
import { When } from "../when.js";

/** What each scope lets a backend do (API.md, "Scopes"), shown beside its checkbox. */
const SCOPE_HINTS: Record<ApiKeyScope, string> = {
  read: "every GET: balances, batches, events, webhooks",
  submit: "submit batches",
  cancel: "cancel pending batches",
  webhooks: "manage webhook endpoints",
};

/** A new key's secret: on screen until the operator says it is saved, then gone from the page's state. */
interface ShownSecret {
  name: string;
  prefix: string;
  secret: string;
}

type Act = (what: () => Promise<string>) => Promise<void>;

/** "YYYY-MM-DD" of today in UTC: the earliest expiry day the form offers. */
function todayUtc(nowMs: number): string {
  return new Date(nowMs).toISOString().slice(0, 10);
}

/**
 * An expiry day read as its last second in UTC, so a key "expiring on" a day works through that
 * day wherever the operator sits; string work only, no arithmetic on times.
 */
function endOfDayUtc(day: string): string {
  return `${day}T23:59:59.000Z`;
}

export function ApiKeys() {
  const { client, fail } = useConsole();
  const keys = useLoad(() => client.apiKeys.list(), []);
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  const [secret, setSecret] = useState<ShownSecret | null>(null);
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<ApiKeyScope[]>([]);
  const [expiresOn, setExpiresOn] = useState("");
  const act: Act = async (what) => {
    try {
      setMessage({ ok: true, text: await what() });
      keys.reload();
    } catch (error) {
      setMessage({ ok: false, text: fail(error) });
    }
  };
  const create = (event: Event) => {
    event.preventDefault();
    if (scopes.length === 0) return setMessage({ ok: false, text: "Choose at least one scope." });
    void act(async () => {
      const created = await client.apiKeys.create({
        name: name.trim(),
        scopes,
        expiresAt: expiresOn === "" ? undefined : endOfDayUtc(expiresOn),
      });
      setName("");
      setScopes([]);
      setExpiresOn("");
      setSecret({ name: created.apiKey.name, prefix: created.apiKey.prefix, secret: created.secret });
      return `Key “${created.apiKey.name}” created with ${created.apiKey.scopes.join(", ")}.`;
    });
  };
  const toggle = (scope: ApiKeyScope, on: boolean) => setScopes(API_KEY_SCOPES.filter((s) => (s === scope ? on : scopes.includes(s))));
  const list = keys.data ?? [];
  return (
    <section aria-labelledby="api-keys-title">
      <h1 id="api-keys-title">API keys</h1>
      <p class="muted">
        Keys let a backend call the API for this contract without the operator's wallet, limited to the scopes you choose. Only a signed-in
        operator manages keys.
      </p>
      {secret && <SecretPanel shown={secret} onDismiss={() => setSecret(null)} />}
      {message && (
        <p role={message.ok ? "status" : "alert"} class={message.ok ? "notice mono-wrap" : "error mono-wrap"} data-testid="api-key-message">
          {message.text}
        </p>
      )}
      {keys.error && (
        <p role="alert" class="error">
          {keys.error}
        </p>
      )}
      <form class="wide-field" onSubmit={create} aria-label="New API key">
        <label>
          Name
          <input
            name="name"
            value={name}
            maxLength={API_KEY_NAME_MAX_LENGTH}
            onInput={(e) => setName(e.currentTarget.value)}
            placeholder="nightly payouts job"
            required
          />
        </label>
        <label>
          Expires on (optional, end of that day UTC)
          <input
            name="expires"
            type="date"
            min={todayUtc(Date.now())}
            value={expiresOn}
            onInput={(e) => setExpiresOn(e.currentTarget.value)}
          />
        </label>
        <fieldset class="types scopes">
          <legend>Scopes (at least one)</legend>
          {API_KEY_SCOPES.map((scope) => (
            <label>
              <input
                type="checkbox"
                name="scopes"
                value={scope}
                checked={scopes.includes(scope)}
                onChange={(e) => toggle(scope, e.currentTarget.checked)}
              />
              {scope} <span class="muted">— {SCOPE_HINTS[scope]}</span>
            </label>
          ))}
        </fieldset>
        <button type="submit">Create key</button>
      </form>
      {list.length === 0 && !keys.loading && <p class="muted">No API keys yet.</p>}
      {list.length > 0 && <KeyTable keys={list} act={act} />}
    </section>
  );
}

function SecretPanel({ shown, onDismiss }: { shown: ShownSecret; onDismiss(): void }) {
  return (
    <SecretOnce
      secret={shown.secret}
      label="New API key secret"
      testId="api-key-secret"
      valueTestId="api-key-secret-value"
      class="secret-once"
      onDismiss={onDismiss}
    >
      <p>
        <strong>Copy this secret now: it will not be shown again.</strong> The service keeps only a hash of it; if it is lost, revoke key “
        {shown.name}” and create another.
      </p>
    </SecretOnce>
  );
}

/** Active, expired, or revoked (with why); a revoked key that also expired reads as revoked. */
function keyStatus(key: ApiKey, nowMs: number): { label: string; tone: string; reason: string | null } {
  if (key.revokedAt !== null) {
    return {
      label: "revoked",
      tone: "CANCELLED",
      reason: key.revokedReason === "operator_changed" ? "operator changed" : "by the operator",
    };
  }
  if (key.expiresAt !== null && Date.parse(key.expiresAt) <= nowMs) return { label: "expired", tone: "PENDING", reason: null };
  return { label: "active", tone: "FINALIZED", reason: null };
}

function KeyTable({ keys, act }: { keys: ApiKey[]; act: Act }) {
  const nowMs = Date.now();
  return (
    <div class="table-wrap api-keys">
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Scopes</th>
            <th scope="col">Prefix</th>
            <th scope="col">Created</th>
            <th scope="col">Expires</th>
            <th scope="col">Last used</th>
            <th scope="col">Status</th>
            <th scope="col">
              <span class="visually-hidden">Action</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {keys.map((key) => {
            const status = keyStatus(key, nowMs);
            return (
              <tr data-api-key-id={key.id} data-status={status.label}>
                <td data-label="Name" class="key-name">
                  <span>{key.name}</span>
                </td>
                <td data-label="Scopes" class="scopes" data-field="scopes">
                  {key.scopes.join(", ")}
                </td>
                <td data-label="Prefix" class="mono" data-field="prefix">
                  {key.prefix}…
                </td>
                <td data-label="Created" class="created">
                  <span>
                    <When iso={key.createdAt} />
                    <br />
                    <span class="muted" title={actorTitle(key.createdBy)}>
                      by {actorText(key.createdBy)}
                    </span>
                  </span>
                </td>
                <td data-label="Expires">{key.expiresAt === null ? "never" : <When iso={key.expiresAt} />}</td>
                <td data-label="Last used" data-field="last-used">
                  {key.lastUsedAt === null ? "never" : <When iso={key.lastUsedAt} />}
                </td>
                <td data-label="Status" class="key-status">
                  <span>
                    <span class={`status ${status.tone}`} data-field="status">
                      {status.label}
                    </span>
                    {status.reason && (
                      <span class="muted reason" data-field="revoked-reason">
                        {status.reason}
                      </span>
                    )}
                  </span>
                </td>
                <td data-label="Action">
                  {key.revokedAt === null ? <RevokeButton apiKey={key} act={act} /> : <span class="muted">—</span>}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

function RevokeButton({ apiKey, act }: { apiKey: ApiKey; act: Act }) {
  const { client } = useConsole();
  const dialog = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const confirm = async () => {
    setBusy(true);
    await act(async () => (await client.apiKeys.revoke(apiKey.id), `Key “${apiKey.name}” revoked.`));
    setBusy(false);
    dialog.current?.close();
  };
  return (
    <>
      <button type="button" class="danger" onClick={() => dialog.current?.showModal()}>
        Revoke…
      </button>
      <dialog ref={dialog} aria-labelledby={`revoke-${apiKey.id}`}>
        <h2 id={`revoke-${apiKey.id}`} class="mono-wrap">
          Revoke key “{apiKey.name}”?
        </h2>
        <p class="mono-wrap">
          Every request made with <span class="mono">{apiKey.prefix}…</span> is refused within a second, on every instance of the service.
          This cannot be undone: a backend still using it needs a new key.
        </p>
        <div class="row">
          <button type="button" class="danger" disabled={busy} onClick={() => void confirm()}>
            Yes, revoke the key
          </button>
          <button type="button" onClick={() => dialog.current?.close()} autofocus>
            Keep it
          </button>
        </div>
      </dialog>
    </>
  );
}
