import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";

/** Plain JSON calls to the service for set-up and sampling (the load itself goes through autocannon). */

export class CallError extends Error {}

export async function call<T = Record<string, unknown>>(
  baseUrl: string,
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
): Promise<T> {
  const response = await fetch(baseUrl + path, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new CallError(`${method} ${path} → ${response.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
}

export interface Operator {
  contract: `0x${string}`;
  sign(message: string): Promise<string>;
  address: `0x${string}`;
}

export function newOperator(): Operator {
  const account = privateKeyToAccount(generatePrivateKey());
  return {
    contract: privateKeyToAccount(generatePrivateKey()).address,
    address: account.address,
    sign: (message) => account.signMessage({ message }),
  };
}

/** Registers the operator and credits the contract through the admin API. */
export async function registerAndCredit(
  baseUrl: string,
  adminToken: string,
  operator: Operator,
  pointType: string,
  points: string,
): Promise<void> {
  const admin = `/v1/admin/contracts/${operator.contract}`;
  await call(baseUrl, "PUT", `${admin}/operator`, adminToken, { operatorAddress: operator.address });
  await call(baseUrl, "PUT", `${admin}/credits/bench-credit`, adminToken, { pointType, points });
}

/** Signs in the way an operator's backend does: challenge, ERC-191 signature, solve. */
export async function signIn(baseUrl: string, operator: Operator): Promise<string> {
  const challenge = await call<{ challengeData: string; message: string }>(baseUrl, "POST", "/v1/dapp-auth/challenge", null, {
    contractAddress: operator.contract,
    operatorAddress: operator.address,
  });
  const signature = await operator.sign(challenge.message);
  const solved = await call<{ bearerToken: string }>(baseUrl, "POST", "/v1/dapp-auth/solve", null, {
    challengeData: challenge.challengeData,
    signature,
  });
  return solved.bearerToken;
}

/** Creates an API key of the operator's contract with `scopes`; returns its secret (shown once). */
export async function createApiKey(baseUrl: string, token: string, operator: Operator, scopes: string[]): Promise<string> {
  const created = await call<{ secret: string }>(baseUrl, "POST", `/v1/contracts/${operator.contract}/api-keys`, token, {
    name: "bench",
    scopes,
  });
  return created.secret;
}

export interface BatchSummary {
  id: string;
  status: string;
  createdAt: string;
  finalizeAt: string;
  finalizedAt: string | null;
}

/** Every batch of the contract with `status` created after `afterMs`, following cursors (bounded). */
export async function listBatches(
  baseUrl: string,
  token: string,
  contract: string,
  status: string,
  afterMs: number,
  maxPages = 1000,
): Promise<BatchSummary[]> {
  const all: BatchSummary[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < maxPages; page++) {
    const query = new URLSearchParams({ status, createdAfter: new Date(afterMs).toISOString(), limit: "1000", sort: "ASC" });
    if (cursor) query.set("cursor", cursor);
    const result: { batches: BatchSummary[]; cursor: string | null } = await call(
      baseUrl,
      "GET",
      `/v1/contracts/${contract}/batches?${query}`,
      token,
    );
    all.push(...result.batches);
    cursor = result.cursor;
    if (!cursor) break;
  }
  return all;
}
