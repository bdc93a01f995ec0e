import { PointsInputError } from "./errors.js";

/**
 * The one-time console login link that `points-ledger console-login` prints:
 * `<service>/console/#login=<challengeData>.<signature>&contract=<address>`.
 *
 * It carries a signed, not yet solved challenge, so it needs no store of its own: the challenge
 * expires after CHALLENGE_TTL_SECONDS and can be solved once, so the link works once, within
 * minutes, and the bearer token exists only in the browser that solved it. It travels in the
 * fragment, which browsers never send to a server, so no access log or proxy sees it.
 */

export interface ConsoleLogin {
  contractAddress: string;
  challengeData: string;
  signature: string;
}

const CHALLENGE_DATA = /^[A-Za-z0-9_-]{1,128}$/;
const SIGNATURE = /^0x[0-9a-fA-F]{130}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const DAMAGED_LINK_MESSAGE = "the login link is damaged: copy it again whole";

export function consoleLoginUrl(baseUrl: string, login: ConsoleLogin): string {
  const fragment = new URLSearchParams({ login: `${login.challengeData}.${login.signature}`, contract: login.contractAddress });
  return `${baseUrl.replace(/\/+$/, "")}/console/#${fragment.toString()}`;
}

/** The login of a console URL's fragment (`#login=…&contract=…`), null when it has none. */
export function parseConsoleLogin(fragment: string): ConsoleLogin | null {
  const params = new URLSearchParams(fragment.replace(/^#/, ""));
  const login = params.get("login");
  if (login === null) return null;
  const dot = login.indexOf(".");
  const challengeData = login.slice(0, dot);
  const signature = login.slice(dot + 1);
  const contractAddress = params.get("contract") ?? "";
  if (dot === -1 || !CHALLENGE_DATA.test(challengeData) || !SIGNATURE.test(signature) || !ADDRESS.test(contractAddress)) {
    throw new PointsInputError([{ path: "login", message: DAMAGED_LINK_MESSAGE }], DAMAGED_LINK_MESSAGE);
  }
  return { contractAddress, challengeData, signature };
}
