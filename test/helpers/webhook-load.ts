import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { callOk, creditPoints, listAllBatches, randomAddress, setOperator, signIn } from "./process.js";

/**
 * A contract with one webhook endpoint, driven through running server processes: batches
 * submitted and cancelled over HTTP (the finalizers of the processes finalize them), and the
 * contract's event log read back with GET …/events. For the webhook crash and multi-instance tests.
 */

export interface HookedContract {
  contract: string;
  token: string;
  endpointId: string;
  /** The events cursor just before the endpoint existed: the log from here on is what it must get. */
  startCursor: string;
}

/** Far more than the batches of a test send. */
const CREDIT_POINTS = "1000000";
/** Every server of these tests runs with MINIMUM_FINALIZE_SECONDS=1. */
export const FINALIZE_SECONDS = 1;
const EVENT_PAGE_LIMIT = 1000;
const MAX_EVENT_PAGES = 100;

export async function hookedContract(baseUrl: string, adminToken: string, receiverUrl: string): Promise<HookedContract> {
  const operator = privateKeyToAccount(generatePrivateKey());
  const contract = randomAddress();
  await setOperator(baseUrl, adminToken, contract, operator.address);
  const token = await signIn(baseUrl, contract, operator);
  const startCursor = (await readEvents(baseUrl, { contract, token }, undefined)).cursor;
  const created = await callOk(baseUrl, "POST", `/v1/contracts/${contract}/webhook-endpoints`, token, { url: receiverUrl });
  const endpointId = (created.endpoint as { id: string }).id;
  // The credit is the first event the endpoint must get.
  await creditPoints(baseUrl, adminToken, contract, "hooked-credit", "PHASE2_POINTS", CREDIT_POINTS);
  return { contract, token, endpointId, startCursor };
}

export async function submitBatch(baseUrl: string, hooked: Pick<HookedContract, "contract" | "token">, batchId: string): Promise<void> {
  const body = {
    pointType: "PHASE2_POINTS",
    transfers: [{ toAddress: randomAddress(), points: "1" }],
    secondsToFinalize: FINALIZE_SECONDS,
  };
  await callOk(baseUrl, "PUT", `/v1/contracts/${hooked.contract}/batches/${batchId}`, hooked.token, body);
}

export async function cancelBatch(baseUrl: string, hooked: Pick<HookedContract, "contract" | "token">, batchId: string): Promise<void> {
  await callOk(baseUrl, "DELETE", `/v1/contracts/${hooked.contract}/batches/${batchId}`, hooked.token);
}

/** Every event of the contract after `after` (all pages) and the cursor after the last one. */
export async function readEvents(
  baseUrl: string,
  hooked: Pick<HookedContract, "contract" | "token">,
  after: string | undefined,
): Promise<{ ids: string[]; types: string[]; cursor: string }> {
  const ids: string[] = [];
  const types: string[] = [];
  let cursor = after;
  for (let page = 0; page < MAX_EVENT_PAGES; page++) {
    const query = `limit=${EVENT_PAGE_LIMIT}${cursor === undefined ? "" : `&after=${encodeURIComponent(cursor)}`}`;
    const body = await callOk(baseUrl, "GET", `/v1/contracts/${hooked.contract}/events?${query}`, hooked.token);
    for (const event of body.events as { id: string; type: string }[]) {
      ids.push(event.id);
      types.push(event.type);
    }
    cursor = body.cursor as string;
    if (body.hasMore !== true) return { ids, types, cursor };
  }
  throw new Error(`the event log did not end within ${MAX_EVENT_PAGES} pages`);
}

/** True once no batch of the contract is PENDING or FINALIZING: the log will not grow any more. */
export async function everyBatchSettled(baseUrl: string, hooked: Pick<HookedContract, "contract" | "token">): Promise<boolean> {
  const batches = await listAllBatches(baseUrl, hooked.token, hooked.contract);
  return batches.every((batch) => batch.status === "FINALIZED" || batch.status === "CANCELLED");
}

/** The endpoint's deliveries that are not SUCCEEDED (first page: enough for these tests' failures). */
export async function unfinishedDeliveries(baseUrl: string, hooked: HookedContract): Promise<unknown[]> {
  const path = `/v1/contracts/${hooked.contract}/webhook-endpoints/${hooked.endpointId}/deliveries?limit=250`;
  const body = await callOk(baseUrl, "GET", path, hooked.token);
  return (body.deliveries as { status: string }[]).filter((delivery) => delivery.status !== "SUCCEEDED");
}
