import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { parseConsoleLogin, type ConsoleLogin, type Parameters, type PublicClient } from "../../client/index.js";
import { errorText } from "./lib/errors.js";
import type { StoredSession } from "./lib/session-store.js";

/** What a login link would replace: the open session, named for the person asked. */
export type OpenSession = { kind: "operator"; contractAddress: string } | { kind: "admin" } | null;

interface PendingLogin {
  login: ConsoleLogin;
  busy: boolean;
  error: string | null;
}

/**
 * A `#login=…` fragment (from `points-ledger console-login`), on load or arriving in a tab that is
 * already open (hashchange). It is taken out of the address bar at once. With no session open it
 * is solved right away; with one open, the person is asked first, naming both contracts: a link
 * someone else sent must not switch a signed-in tab to their contract without a word (login CSRF).
 * Declining discards the link unsolved.
 */
export function useLoginLink(
  service: PublicClient,
  parameters: Parameters | null,
  open: OpenSession,
  signIn: (session: StoredSession) => void,
  setNotice: (text: string | null) => void,
) {
  const [pending, setPending] = useState<PendingLogin | null>(null);
  const openNow = useRef(open);
  openNow.current = open;
  const solve = useCallback(
    (login: ConsoleLogin) =>
      service.solveChallenge(login.challengeData, login.signature).then(
        (solved) => signIn({ contractAddress: login.contractAddress, ...solved, via: "link", operatorAddress: null }),
        (error: unknown) => {
          throw new Error(
            `This login link cannot be used: it was already used or has expired (${errorText(error)}). Run points-ledger console-login again.`,
          );
        },
      ),
    [service, signIn],
  );
  useEffect(() => {
    if (parameters === null) return;
    let lastRoute = location.hash.startsWith("#/") ? location.hash : "";
    const take = () => {
      if (location.hash.startsWith("#/")) lastRoute = location.hash;
      let login: ConsoleLogin | null;
      try {
        login = parseConsoleLogin(location.hash);
      } catch (error) {
        setNotice(errorText(error));
        dropFragment(lastRoute);
        return;
      }
      if (login === null) return;
      dropFragment(lastRoute);
      if (openNow.current === null) solve(login).catch((error: unknown) => setNotice(errorText(error)));
      else setPending({ login, busy: false, error: null });
    };
    take();
    window.addEventListener("hashchange", take);
    return () => window.removeEventListener("hashchange", take);
  }, [parameters, solve]);

  const accept = () => {
    if (pending === null) return;
    setPending({ ...pending, busy: true, error: null });
    solve(pending.login).then(
      () => setPending(null),
      (error: unknown) => setPending({ ...pending, busy: false, error: errorText(error) }),
    );
  };
  return { pending, accept, decline: () => setPending(null) };
}

/** Back to the route the tab showed before the link (a replace, so Back does not bring the link again). */
function dropFragment(lastRoute: string): void {
  history.replaceState(null, "", `${location.pathname}${lastRoute}`);
  // replaceState fires no hashchange: tell the routers the address changed.
  window.dispatchEvent(new HashChangeEvent("hashchange"));
}

/** The question before a login link replaces the open session. */
export function LoginSwitchDialog(props: { pending: PendingLogin; open: OpenSession; onAccept(): void; onDecline(): void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    if (!dialog.current?.open) dialog.current?.showModal();
  }, []);
  const link = props.pending.login.contractAddress;
  const current = props.open?.kind === "operator" ? props.open.contractAddress : null;
  return (
    <dialog
      ref={dialog}
      aria-labelledby="switch-title"
      data-testid="login-switch"
      onCancel={(e) => (e.preventDefault(), props.onDecline())}
    >
      <h2 id="switch-title">Switch to another contract?</h2>
      <p>
        A login link asks to sign this tab in to contract{" "}
        <strong class="mono" data-testid="link-contract">
          {link}
        </strong>
        .
      </p>
      <p>
        {current === null ? (
          "This tab has the admin console open; it would be closed."
        ) : (
          <>
            This tab is signed in to contract{" "}
            <strong class="mono" data-testid="current-contract">
              {current}
            </strong>
            ; that session would end.
          </>
        )}{" "}
        Only accept a link you asked for yourself.
      </p>
      {props.pending.error && (
        <p role="alert" class="error">
          {props.pending.error}
        </p>
      )}
      <div class="row">
        <button type="button" class="danger" disabled={props.pending.busy} onClick={props.onAccept}>
          Switch to {shortAddress(link)}
        </button>
        <button type="button" onClick={props.onDecline} autofocus>
          {current === null ? "Keep the admin console" : `Keep ${shortAddress(current)}`}
        </button>
      </div>
    </dialog>
  );
}

function shortAddress(address: string): string {
  return `${address.slice(0, 6)}…${address.slice(-4)}`;
}
