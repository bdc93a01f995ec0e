import { useState } from "preact/hooks";
import { PointsAdminClient, type Parameters } from "../../../client/index.js";
import { useConsole, useFail } from "../context.js";
import { errorText } from "../lib/errors.js";
import { loadAdminToken, saveAdminToken } from "../lib/session-store.js";
import { checkedAdminClient } from "../lib/tokens.js";
import { AdminEvents, CreditForm, OperatorForm, RegisteredContracts } from "./admin-parts.js";

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
  // Grows with every operator set here: the list of registered contracts reads again from its first page.
  const [contractsVersion, setContractsVersion] = useState(0);
  // Every part reports through one notice above the forms: what it did, or why it failed.
  const act = async (what: () => Promise<string>) => {
    try {
      setResult({ ok: true, text: await what() });
    } catch (error) {
      setResult({ ok: false, text: fail(error) });
    }
  };
  return (
    <>
      {result && (
        <p role={result.ok ? "status" : "alert"} class={`${result.ok ? "notice" : "error"} mono-wrap`}>
          {result.text}
        </p>
      )}
      <h2>Operator</h2>
      <OperatorForm admin={admin} act={act} defaultContract={defaultContract} onSet={() => setContractsVersion((v) => v + 1)} />
      <h2>Registered contracts</h2>
      <RegisteredContracts key={contractsVersion} admin={admin} />
      <h2>Credit</h2>
      <CreditForm admin={admin} act={act} pointTypes={parameters.POINT_TYPES} defaultAddress={defaultContract} />
      <h2>Recent admin events</h2>
      <AdminEvents admin={admin} act={act} />
    </>
  );
}
