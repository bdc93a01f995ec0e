import { MAX_TRANSFERS_SCANNED_PER_PAGE, PAGE_LIMIT_DEFAULT } from "../../domain/limits.js";
import { Readable } from "node:stream";
import type { FastifyInstance, FastifyReply } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { checksumAddress, type AddressKey } from "../../domain/address.js";
import { isoOrNull, isoTime } from "../../domain/json.js";
import { formatPoints } from "../../domain/points.js";
import { requireAddress } from "../../domain/validate.js";
import { availableOf, type AccountQuery, type TransferPosition, type TransferQuery, type TransferRow } from "../../store/store.js";
import type { AppContext } from "../context.js";
import { csvRow } from "../csv.js";
import { decodeCursor, encodeCursor } from "../../domain/cursor.js";
import { TRANSFER_CURSOR } from "../cursor.js";
import { asOfMsOf } from "../history.js";
import { presentsAdminToken } from "../public-reads.js";
import { balancesAsOfJson, balancesJson } from "../present.js";
import {
  AddressParams,
  BalancesAsOfQuery,
  ContractParams,
  ExportResponses,
  balancesCsvQuerySchema,
  responses,
  transfersCsvQuerySchema,
  transfersQuerySchema,
} from "../schemas.js";

/**
 * Transfers and exports (docs/api.md): a contract's transfers (JSON pages, and all of them as CSV),
 * every balance as CSV (admin), and any address's balances (admin, or anyone with PUBLIC_READS).
 *
 * The CSV exports are pulled by the reply stream one keyset page at a time (Readable.from over an
 * async generator: the next page is read only when the socket has taken the previous one), so
 * memory stays one page whatever the export's size and a slow client slows the reads, not the
 * heap. Pages are separate reads (see store/sqlite/transfers.ts): an export is not one snapshot,
 * and with DATABASE_READ_URL each page may be the replica's (store/ports/replica.ts).
 */

/** Rows per store read while a CSV is streamed (a page is ≈ 100-250 KB of text). */
const EXPORT_ROWS_PER_PAGE = 2000;

export const TRANSFERS_CSV_HEADER = "batchId,toAddress,pointType,points,status,createdAt,finalizeAt,finalizedAt";
export const BALANCES_CSV_HEADER = "address,pointType,available,pendingSent,earnedCumulative,receivedCumulative,finalizedSentCumulative";

const security = [{ bearer: [] }];

/** Contract scope: GET …/transfers and …/transfers.csv (operator token). */
export function transferRoutes(fastify: FastifyInstance, ctx: AppContext): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ["transfers"];
  app.get(
    "/transfers",
    {
      config: { scope: "read" },
      schema: {
        tags,
        security,
        params: ContractParams,
        querystring: transfersQuerySchema(ctx.config),
        response: responses(ExportResponses.transfers, 400, 401, 403),
      },
    },
    async (request) => {
      const { cursor, limit, ...filters } = request.query;
      const page = await ctx.store.listTransfers(request.grant!.contract, {
        ...transferFilters(filters),
        limit: limit ?? PAGE_LIMIT_DEFAULT,
        after: cursor === undefined ? undefined : decodeCursor(TRANSFER_CURSOR, cursor),
        scanLimit: MAX_TRANSFERS_SCANNED_PER_PAGE,
      });
      return {
        success: true as const,
        transfers: page.transfers.map(transferJson),
        cursor: page.next && encodeCursor(TRANSFER_CURSOR, page.next),
      };
    },
  );
  app.get(
    "/transfers.csv",
    {
      config: { streamedRead: true, scope: "read" },
      schema: {
        tags,
        security,
        params: ContractParams,
        querystring: transfersCsvQuerySchema(ctx.config),
        response: responses(ExportResponses.csv, 400, 401, 403),
      },
    },
    async (request, reply) => {
      const contract = request.grant!.contract;
      const query = transferFilters(request.query);
      return sendCsv(reply, "transfers.csv", transfersCsv(ctx, contract, query));
    },
  );
}

/** Admin scope: GET /v1/admin/balances.csv. */
export function balancesExportRoute(fastify: FastifyInstance, ctx: AppContext): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    "/balances.csv",
    {
      config: { streamedRead: true },
      schema: {
        tags: ["admin"],
        security,
        querystring: balancesCsvQuerySchema(ctx.config),
        response: responses(ExportResponses.csv, 400, 403),
      },
    },
    async (request, reply) => sendCsv(reply, "balances.csv", balancesCsv(ctx, request.query.pointType)),
  );
}

/**
 * Read scope (admin token, or none with PUBLIC_READS): GET /v1/addresses/{address}/point-balances;
 * with `asOf`, the balances as they stood then, without byAsset (API.md "Leaderboards and history").
 */
export function addressBalancesRoute(fastify: FastifyInstance, ctx: AppContext): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    "/addresses/:address/point-balances",
    {
      schema: {
        tags: ["balances"],
        security,
        params: AddressParams,
        querystring: BalancesAsOfQuery,
        response: responses(ExportResponses.addressBalances(ctx.config), 400, 403, 503),
      },
    },
    async (request) => {
      const address = requireAddress(request.params.address, "address");
      const { asOf } = request.query;
      // A public read (no admin token) may be a replica's; the admin reads its own credits back from the primary.
      const reads = presentsAdminToken(ctx, request) ? ctx.store : ctx.store.replicaReads;
      if (asOf !== undefined) {
        const asOfMs = asOfMsOf(asOf, ctx.clock.now());
        const balances = await reads.getBalancesAsOf(address, ctx.config.pointTypes, asOfMs);
        return { success: true as const, address: checksumAddress(address), balancesByPointType: balancesAsOfJson(balances) };
      }
      const [balances, assetEarnings] = await Promise.all([
        reads.getBalances(address, ctx.config.pointTypes),
        reads.getAssetEarnings(address),
      ]);
      return {
        success: true as const,
        address: checksumAddress(address),
        balancesByPointType: balancesJson(balances, assetEarnings, ctx.config.balanceAssets),
      };
    },
  );
}

function transferFilters(query: {
  toAddress?: string;
  pointType?: string;
  status?: TransferQuery["status"];
}): Omit<TransferQuery, "limit" | "after" | "scanLimit"> {
  return {
    toAddress: query.toAddress === undefined ? undefined : requireAddress(query.toAddress, "toAddress"),
    pointType: query.pointType,
    status: query.status,
  };
}

function transferJson(transfer: TransferRow) {
  return {
    batchId: transfer.batchId,
    toAddress: checksumAddress(transfer.toAddress),
    pointType: transfer.pointType,
    points: formatPoints(transfer.amount),
    status: transfer.status,
    createdAt: isoTime(transfer.createdAtMs),
    finalizeAt: isoTime(transfer.finalizeAtMs),
    finalizedAt: isoOrNull(transfer.finalizedAtMs),
  };
}

function sendCsv(reply: FastifyReply, filename: string, lines: AsyncGenerator<string>): FastifyReply {
  // objectMode off: chunks are bytes, and the stream holds at most one page beyond what the socket took.
  const body = Readable.from(lines, { objectMode: false, highWaterMark: 64 * 1024 });
  return reply.type("text/csv; charset=utf-8").header("content-disposition", `attachment; filename="${filename}"`).send(body);
}

async function* transfersCsv(
  ctx: AppContext,
  contract: AddressKey,
  filters: Omit<TransferQuery, "limit" | "after" | "scanLimit">,
): AsyncGenerator<string> {
  yield `${TRANSFERS_CSV_HEADER}\n`;
  let after: TransferPosition | undefined;
  do {
    // A filtered read can come back short, even empty, with `next` set (MAX_TRANSFERS_SCANNED_PER_PAGE): go on until null.
    const page = await ctx.store.replicaReads.listTransfers(contract, {
      ...filters,
      limit: EXPORT_ROWS_PER_PAGE,
      after,
      scanLimit: MAX_TRANSFERS_SCANNED_PER_PAGE,
    });
    // Every cell goes through csvCell: a batchId may start with `-` (formula injection, http/csv.ts).
    let text = "";
    for (const transfer of page.transfers) {
      const row = transferJson(transfer);
      text += csvRow([
        row.batchId,
        row.toAddress,
        row.pointType,
        row.points,
        row.status,
        row.createdAt,
        row.finalizeAt,
        row.finalizedAt ?? "",
      ]);
    }
    if (text !== "") yield text;
    after = page.next ?? undefined;
  } while (after !== undefined);
}

async function* balancesCsv(ctx: AppContext, pointType: string | undefined): AsyncGenerator<string> {
  yield `${BALANCES_CSV_HEADER}\n`;
  let after: AccountQuery["after"];
  for (;;) {
    const rows = await ctx.store.replicaReads.listAccountBalances({ pointType, limit: EXPORT_ROWS_PER_PAGE, after });
    let text = "";
    for (const { address, pointType: type, balance } of rows) {
      text += csvRow([
        checksumAddress(address),
        type,
        formatPoints(availableOf(balance)),
        formatPoints(balance.pendingSent),
        formatPoints(balance.earnedCumulative),
        formatPoints(balance.receivedCumulative),
        formatPoints(balance.finalizedSentCumulative),
      ]);
    }
    if (text !== "") yield text;
    const last = rows.at(-1);
    if (rows.length < EXPORT_ROWS_PER_PAGE || last === undefined) return;
    after = { address: last.address, pointType: last.pointType };
  }
}
