import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import { PointsClient, PublicClient, type Parameters } from "../../client/index.js";
import { ConsoleContext, type ConsoleState, type FeedEntry } from "./context.js";
import { errorText, isSessionOver } from "./lib/errors.js";
import { forgetSession, loadAdminSession, loadSession, saveAdminSession, saveSession, type StoredSession } from "./lib/session-store.js";
import { SignIn } from "./screens/sign-in.js";
import { Overview } from "./screens/overview.js";
import { Batches } from "./screens/batches.js";
import { BatchDetail } from "./screens/batch-detail.js";
import { NewDistribution } from "./screens/new-distribution.js";
import { Recipients } from "./screens/recipients.js";
import { Leaderboard } from "./screens/leaderboard.js";
import { LiveFeed } from "./screens/live-feed.js";
import { Webhooks } from "./screens/webhooks.js";
import { ApiKeys } from "./screens/api-keys.js";
import { Admin } from "./screens/admin.js";
import { Payouts } from "./screens/payouts.js";
import { AdminShell } from "./admin-shell.js";
import { LoginSwitchDialog, useLoginLink, type OpenSession } from "./login-link.js";
import { Header } from "./header.js";

export { Header, type ScreenLink } from "./header.js";

/** Events kept for the live feed screen; older ones drop off. */
const FEED_LIMIT = 200;
/** Pages of history read to find the end of the log before streaming (bounded on a huge log). */
const MAX_HISTORY_PAGES = 20;
const HISTORY_PAGE_SIZE = 1000;

export const SCREENS = [
  { path: "overview", title: "Overview" },
  { path: "batches", title: "Batches" },
  { path: "new", title: "New distribution" },
  { path: "recipients", title: "Recipients" },
  { path: "leaderboard", title: "Leaderboard" },
  { path: "events", title: "Live feed" },
  { path: "webhooks", title: "Webhooks" },
  { path: "api-keys", title: "API keys" },
  { path: "payouts", title: "Payouts" },
  { path: "admin", title: "Admin" },
] as const;

function useHashRoute(): string[] {
  const read = () => location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const onChange = () => setRoute(read());
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  return route;
}

export function App() {
  const service = useMemo(() => new PublicClient({ baseUrl: location.origin }), []);
  const [parameters, setParameters] = useState<Parameters | null>(null);
  const [session, setSession] = useState<StoredSession | null>(loadSession);
  // Signed in with the admin token alone (no operator session): the admin console.
  const [adminToken, setAdminToken] = useState<string | null>(() => (loadSession() === null ? loadAdminSession() : null));
  const [notice, setNotice] = useState<string | null>(null);
  const [startError, setStartError] = useState<string | null>(null);
  const route = useHashRoute();

  useEffect(() => {
    service.getParameters().then(setParameters, (error: unknown) => setStartError(errorText(error)));
  }, [service]);

  const signIn = useCallback((next: StoredSession) => {
    saveSession(next);
    setNotice(null);
    setAdminToken(null);
    setSession(next);
    if (!location.hash.startsWith("#/")) location.hash = "#/overview";
  }, []);

  const signInAdmin = useCallback((token: string) => {
    saveAdminSession(token);
    setNotice(null);
    setSession(null);
    setAdminToken(token);
    if (!location.hash.startsWith("#/")) location.hash = "#/admin";
  }, []);

  const signOut = useCallback((message: string | null) => {
    forgetSession();
    setSession(null);
    setAdminToken(null);
    setNotice(message);
  }, []);

  const open: OpenSession =
    session !== null ? { kind: "operator", contractAddress: session.contractAddress } : adminToken !== null ? { kind: "admin" } : null;
  const link = useLoginLink(service, parameters, open, signIn, setNotice);

  if (startError !== null)
    return (
      <main class="center">
        <p role="alert" class="error">
          The service did not answer: {startError}
        </p>
      </main>
    );
  if (parameters === null)
    return (
      <main class="center">
        <p>Loading…</p>
      </main>
    );
  const question = link.pending && <LoginSwitchDialog pending={link.pending} open={open} onAccept={link.accept} onDecline={link.decline} />;
  if (session !== null)
    return (
      <>
        <SignedIn session={session} parameters={parameters} onSignOut={signOut} />
        {question}
      </>
    );
  if (adminToken !== null)
    return (
      <>
        <AdminShell adminToken={adminToken} parameters={parameters} route={route} onSignOut={signOut} />
        {question}
      </>
    );
  return <SignIn parameters={parameters} notice={notice} onSignedIn={signIn} onAdmin={signInAdmin} />;
}

function SignedIn(props: { session: StoredSession; parameters: Parameters; onSignOut: (message: string | null) => void }) {
  const { session, parameters, onSignOut } = props;
  const client = useMemo(
    () =>
      new PointsClient({
        baseUrl: location.origin,
        contractAddress: session.contractAddress,
        operator: { bearerToken: session.bearerToken, expiresAt: session.expiresAt },
        retry: { maxAttempts: 3 },
      }),
    [session],
  );
  const fail = useCallback(
    (error: unknown) => {
      if (isSessionOver(error)) onSignOut("Your session has expired or was revoked. Sign in again.");
      return errorText(error);
    },
    [onSignOut],
  );
  const { feed, feedStatus, ledgerVersion } = useLiveFeed(client, fail);
  const state: ConsoleState = { client, session, parameters, ledgerVersion, feed, feedStatus, fail };
  const route = useHashRoute();
  return (
    <ConsoleContext.Provider value={state}>
      <Header
        screens={SCREENS}
        route={route[0] ?? "overview"}
        subtitle={session.contractAddress}
        feedStatus={feedStatus}
        onSignOut={() => onSignOut("Signed out.")}
      />
      <main id="main" tabIndex={-1}>
        <Screen route={route} />
      </main>
    </ConsoleContext.Provider>
  );
}

function Screen({ route }: { route: string[] }) {
  switch (route[0]) {
    case "batches":
      return route[1] ? <BatchDetail batchId={route[1]} /> : <Batches />;
    case "new":
      return <NewDistribution />;
    case "recipients":
      return <Recipients />;
    case "leaderboard":
      return <Leaderboard />;
    case "events":
      return <LiveFeed />;
    case "webhooks":
      return <Webhooks />;
    case "api-keys":
      return <ApiKeys />;
    case "payouts":
      return <Payouts />;
    case "admin":
      return <Admin />;
    default:
      return <Overview />;
  }
}

/** One event stream per session: it feeds the live feed screen and tells the others to reload. */
function useLiveFeed(client: PointsClient, fail: (error: unknown) => string) {
  const [feed, setFeed] = useState<FeedEntry[]>([]);
  const [feedStatus, setStatus] = useState<ConsoleState["feedStatus"]>("connecting");
  const [ledgerVersion, setVersion] = useState(0);
  useEffect(() => {
    const abort = new AbortController();
    const run = async () => {
      let after: string | undefined;
      let recent: FeedEntry[] = [];
      for (let page = 0; page < MAX_HISTORY_PAGES; page++) {
        const result = await client.listEvents({ after, limit: HISTORY_PAGE_SIZE });
        recent = [...result.events.map((event) => ({ cursor: result.cursor, event })).reverse(), ...recent].slice(0, FEED_LIMIT);
        after = result.cursor;
        if (!result.hasMore) break;
      }
      setFeed(recent);
      for await (const entry of client.liveEvents({ after, signal: abort.signal, onOpen: () => setStatus("live") })) {
        setFeed((previous) => [entry, ...previous].slice(0, FEED_LIMIT));
        setVersion((v) => v + 1);
      }
    };
    run().then(
      () => setStatus("stopped"),
      (error: unknown) => {
        if (abort.signal.aborted) return;
        setStatus("stopped");
        fail(error);
      },
    );
    return () => abort.abort();
  }, [client]);
  return { feed, feedStatus, ledgerVersion };
}
