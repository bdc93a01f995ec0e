/**
 * The signed-in session lives in sessionStorage: it ends with the tab, is never shared with
 * other tabs or written to disk by the page, and sign-out removes it.
 */

export interface StoredSession {
  contractAddress: string;
  bearerToken: string;
  /** ISO 8601; for a pasted token, the longest a token can live (BEARER_TOKEN_TTL_SECONDS). */
  expiresAt: string;
  /** How the session began: shown in the header, so an operator knows what signed in. */
  via: "wallet" | "link" | "token";
  operatorAddress: string | null;
}

const SESSION_KEY = "points-ledger.console.session";
const ADMIN_KEY = "points-ledger.console.admin";
/** Set when the tab signed in with the admin token alone: the admin console, no operator session. */
const ADMIN_SESSION_KEY = "points-ledger.console.admin-session";

export function loadSession(): StoredSession | null {
  const raw = sessionStorage.getItem(SESSION_KEY);
  if (raw === null) return null;
  try {
    const session = JSON.parse(raw) as StoredSession;
    return Date.parse(session.expiresAt) > Date.now() ? session : null;
  } catch {
    return null;
  }
}

export function saveSession(session: StoredSession): void {
  sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
  // An operator session replaces an admin one; the admin token stays for the Admin screen.
  sessionStorage.removeItem(ADMIN_SESSION_KEY);
}

export function forgetSession(): void {
  sessionStorage.removeItem(SESSION_KEY);
  sessionStorage.removeItem(ADMIN_KEY);
  sessionStorage.removeItem(ADMIN_SESSION_KEY);
}

/** The admin token of an admin session (signed in with the admin token alone), or null. */
export function loadAdminSession(): string | null {
  return sessionStorage.getItem(ADMIN_SESSION_KEY) === null ? null : loadAdminToken();
}

export function saveAdminSession(token: string): void {
  sessionStorage.removeItem(SESSION_KEY);
  saveAdminToken(token);
  sessionStorage.setItem(ADMIN_SESSION_KEY, "1");
}

export function loadAdminToken(): string | null {
  return sessionStorage.getItem(ADMIN_KEY);
}

export function saveAdminToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(ADMIN_KEY);
  else sessionStorage.setItem(ADMIN_KEY, token);
}
