import { EVENT_CURSOR_REFRESH_MS, PAGE_LIMIT_DEFAULT } from "../../domain/limits.js";
import type { FastifyInstance } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { Static } from "@sinclair/typebox";
import type { AddressKey } from "../../domain/address.js";
import { invalidCursor } from "../../domain/cursor.js";
import { ApiError, validationFailed, type FieldError } from "../../domain/errors.js";
import { STREAM_EVENT_TYPES, eventJson, type EventType } from "../../domain/events.js";
import { cursorMessage } from "../../domain/messages.js";
import type { EventQuery, StoredEvent } from "../../store/store.js";
import { credentialCheck } from "../auth.js";
import type { ApiInstance, AppContext } from "../context.js";
import { ServerKeys } from "../cursor-key.js";
import { EventCursors, type CursorScope, type DecodedEventCursor } from "../event-cursor.js";
import { EventStreams } from "../../outbox/event-stream.js";
import { ContractParams, EventResponses, EventStreamQuery, EventsQuery, responses, textResponse } from "../schemas.js";
import { streamExample } from "../openapi-docs.js";

/**
 * Reading the event log (docs/api.md Events): a contract pages through its own stream, the
 * administrator through every stream; both follow the same cursor rules. The stream of a
 * contract is also served as server-sent events.
 */

const tags = ["events"];
const security = [{ bearer: [] }];

/** What the administrator's listing may name: every stream type plus the admin-only ones. */
const ADMIN_EVENT_TYPES: readonly EventType[] = [...STREAM_EVENT_TYPES, "snapshot.created"];

/**
 * One set of open streams per app, shared by the stream route and the admin scope. Every
 * transaction this process commits wakes them (store.onCommittedEvents: requests and the finalize
 * job alike), rather than letting them find the events at their next poll; other processes'
 * events are found by the poll, within EVENT_STREAM_POLL_MS.
 */
const streamsByApp = new WeakMap<AppContext, EventStreams>();

function streamsOf(ctx: AppContext, app: FastifyInstance): EventStreams {
  let streams = streamsByApp.get(ctx);
  if (!streams) {
    const created = new EventStreams({
      store: ctx.store,
      keepAliveMs: ctx.config.eventStreamKeepAliveMs,
      maxPerContract: ctx.config.maxEventStreamsPerContract,
      maxPerToken: ctx.config.maxEventStreamsPerToken,
      nowMs: () => ctx.clock.now(),
      log: app.log,
    });
    const unsubscribe = ctx.store.onCommittedEvents(() => created.notify());
    app.addHook("onClose", async () => unsubscribe());
    streamsByApp.set(ctx, created);
    streams = created;
  }
  return streams;
}

/** The cursor sealing of one app (its keys are read from the store once, at the first use). */
const keysByApp = new WeakMap<AppContext, ServerKeys>();

function cursorsOf(ctx: AppContext): Promise<EventCursors> {
  let keys = keysByApp.get(ctx);
  if (!keys) {
    keys = new ServerKeys(ctx.store);
    keysByApp.set(ctx, keys);
  }
  return EventCursors.load(keys);
}

/** GET /v1/contracts/{c}/events and …/events/stream; registered in the contract scope. */
export function eventRoutes(fastify: FastifyInstance, ctx: AppContext): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const streams = streamsOf(ctx, fastify);
  // preClose, not onClose: onClose runs once the server has closed, which waits for these very
  // connections; ending them first lets app.close() finish (clients resume with Last-Event-ID).
  fastify.addHook("preClose", async () => streams.closeAll());
  app.get(
    "/events",
    {
      config: { scope: "read" },
      schema: {
        tags,
        security,
        params: ContractParams,
        querystring: EventsQuery,
        response: responses(EventResponses.page, 400, 401, 403, 410),
      },
    },
    async (request) => readPage(ctx, request.grant!.contract, request.query, STREAM_EVENT_TYPES),
  );
  streamRoute(app, ctx, streams);
}

/** GET /v1/admin/events: every event of every stream; registered in the admin scope. */
export function adminEventRoutes(fastify: FastifyInstance, ctx: AppContext): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    "/events",
    { schema: { tags: ["admin"], security, querystring: EventsQuery, response: responses(EventResponses.page, 400, 403, 410) } },
    async (request) => readPage(ctx, null, request.query, ADMIN_EVENT_TYPES),
  );
}

/**
 * Long-lived: `longLived` keeps it out of MAX_IN_FLIGHT_REQUESTS (app.ts installAdmission), or a
 * few hundred idle listeners would refuse every other request; MAX_EVENT_STREAMS bounds it instead.
 */
function streamRoute(app: ApiInstance, ctx: AppContext, streams: EventStreams): void {
  app.get(
    "/events/stream",
    {
      config: { longLived: true, scope: "read" },
      schema: {
        tags,
        security,
        params: ContractParams,
        querystring: EventStreamQuery,
        // Errors are JSON, answered before the stream starts; the 200 is the stream.
        response: {
          ...responses(EventResponses.page, 400, 401, 403, 410, 429, 503),
          200: textResponse("text/event-stream", "The event stream.", streamExample),
        },
      },
    },
    async (request, reply) => {
      const lastEventId = request.headers["last-event-id"];
      const resumeFrom = typeof lastEventId === "string" && lastEventId !== "" ? { cursor: lastEventId, path: "Last-Event-ID" } : null;
      const grant = request.grant!;
      const cursors = await cursorsOf(ctx);
      const { after, types } = parseQuery(cursors, grant.contract, request.query, STREAM_EVENT_TYPES, resumeFrom);
      // The contract hook has checked the credential; the stream checks it again now and then, and ends at its expiry.
      const credential = credentialCheck(ctx, grant, request.headers.authorization);
      const body = await streams
        .start({
          query: { stream: grant.contract, types: types ?? STREAM_EVENT_TYPES },
          after: after === null ? null : { position: after.position, verify: after.issuedAtMs === null },
          holder: {
            contract: grant.contract,
            token: credential.holder,
            expiresAtMs: credential.expiresAtMs,
            authorized: credential.authorized,
          },
          idOf: (stored) => cursorOfEvent(cursors, grant.contract, stored),
        })
        // The store quotes its position as `after`; the client is told about the cursor it sent, header or query.
        .catch((error: unknown) => {
          const sent = resumeFrom ?? (request.query.after === undefined ? null : { cursor: request.query.after, path: "after" });
          throw sent !== null && error instanceof ApiError && error.code === "VALIDATION_FAILED"
            ? invalidCursor(sent.path, sent.cursor)
            : error;
        });
      return (
        reply
          .header("content-type", "text/event-stream; charset=utf-8")
          .header("cache-control", "no-store")
          // nginx buffers responses by default, which would hold events back.
          .header("x-accel-buffering", "no")
          .send(body)
      );
    },
  );
}

type PageQuery = Static<typeof EventsQuery>;

/** `stream` null: every stream (admin). A contract's listing never shows events off its stream's types (webhook.test). */
async function readPage(ctx: AppContext, stream: AddressKey | null, query: PageQuery, allowed: readonly EventType[]) {
  const cursors = await cursorsOf(ctx);
  const { after, types } = parseQuery(cursors, stream, query, allowed, null);
  const listed: EventQuery = {
    stream,
    after: after?.position ?? null,
    verifyAfter: after !== null && after.issuedAtMs === null,
    types: types ?? (stream === null ? null : STREAM_EVENT_TYPES),
    limit: query.limit ?? PAGE_LIMIT_DEFAULT,
  };
  // The store refuses an old-form position past its newest event (verifyAfter): the same cursor error as any other.
  const page = await ctx.store.listEvents(listed).catch((error: unknown) => {
    throw query.after !== undefined && error instanceof ApiError && error.code === "VALIDATION_FAILED"
      ? invalidCursor("after", query.after)
      : error;
  });
  if (page.kind === "expired")
    throw new ApiError(
      "CURSOR_EXPIRED",
      "the cursor is older than the retained events (EVENT_RETENTION_DAYS); start again without `after`",
    );
  const last = page.events.at(-1);
  return {
    success: true as const,
    events: page.events.map((stored) => eventJson(stored.event)),
    cursor: last ? cursorOfEvent(cursors, stream, last) : quietCursor(ctx, cursors, stream, query.after, after, page.position),
    hasMore: page.hasMore,
  };
}

/** The cursor after an event: where it sits in the log, sealed with when it occurred. */
function cursorOfEvent(cursors: EventCursors, scope: CursorScope, stored: StoredEvent): string {
  return cursors.encode(scope, stored.position, stored.event.occurredAtMs);
}

/**
 * The cursor of a page without events. The one asked with, unchanged, so an idle reader's cursor
 * does not move while other tenants write; once it is EVENT_CURSOR_REFRESH_MS old (or of the first
 * form, or absent), the store's position instead, the head of the log when the page read
 * everything there is: a quiet reader's cursor never falls behind the retained events. Such a
 * cursor is salted, so it differs from every other whether or not others wrote.
 */
function quietCursor(
  ctx: AppContext,
  cursors: EventCursors,
  scope: CursorScope,
  asked: string | undefined,
  after: DecodedEventCursor | null,
  position: string,
): string {
  const nowMs = ctx.clock.now();
  if (asked !== undefined && after?.issuedAtMs != null && nowMs - after.issuedAtMs < EVENT_CURSOR_REFRESH_MS) return asked;
  return cursors.encode(scope, position, nowMs, true);
}

/** The position to read after and the types asked for (null: all), every malformed field named at once. */
function parseQuery(
  cursors: EventCursors,
  scope: CursorScope,
  query: { after?: string; types?: string },
  allowed: readonly EventType[],
  resumeFrom: { cursor: string; path: string } | null,
): { after: DecodedEventCursor | null; types: EventType[] | null } {
  const errors: FieldError[] = [];
  const cursor = resumeFrom ?? (query.after === undefined ? null : { cursor: query.after, path: "after" });
  const after = cursor === null ? null : cursors.decode(scope, cursor.cursor);
  if (cursor !== null && after === null) errors.push({ path: cursor.path, message: cursorMessage(cursor.cursor) });
  const types = query.types === undefined ? null : typesOf(query.types, allowed, errors);
  if (errors.length > 0) throw validationFailed(errors);
  return { after, types };
}

function typesOf(text: string, allowed: readonly EventType[], errors: FieldError[]): EventType[] {
  const names = text.split(",");
  const unknown = names.filter((name) => !(allowed as readonly string[]).includes(name));
  if (unknown.length > 0) {
    const shown = unknown.map((name) => (name === "" ? "(empty)" : name)).join(", ");
    errors.push({ path: "types", message: `unknown event type ${shown}; allowed: ${allowed.join(", ")}` });
  }
  return [...new Set(names)] as EventType[];
}
