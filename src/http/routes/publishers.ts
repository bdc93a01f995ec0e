import type { FastifyInstance } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import { configuredKinds, lagSecondsOf, PUBLISHER_KINDS, PUBLISHER_STATES } from "../../domain/publishers.js";
import { targetOf } from "../../domain/publishers.js";
import type { AppContext } from "../context.js";
import { responses } from "../schemas.js";

const Publisher = Type.Object({
  kind: Type.Union(PUBLISHER_KINDS.map((kind) => Type.Literal(kind))),
  target: Type.String({ description: "the broker's address, without credentials" }),
  lastEventId: Type.Union([Type.String(), Type.Null()], { description: "the last event the broker acknowledged (null: none yet)" }),
  lagSeconds: Type.Number({ description: "age of the oldest event not yet published; 0 when caught up" }),
  state: Type.Union(
    PUBLISHER_STATES.map((state) => Type.Literal(state)),
    {
      description: "ok; retrying: the broker fails, published again on its return; stopped: the broker refuses the configuration",
    },
  ),
});

const PublishersResponse = Type.Object(
  { success: Type.Literal(true), publishers: Type.Array(Publisher) },
  {
    description: "Each publisher configured (EVENTS_NATS_URL, EVENTS_AMQP_URL), as the database records it; empty when none is.",
    examples: [
      {
        success: true,
        publishers: [
          {
            kind: "nats",
            target: "nats://127.0.0.1:4222",
            lastEventId: "evt_849484e47b7c4a25b644e8a0006a0095",
            lagSeconds: 0,
            state: "ok",
          },
          {
            kind: "amqp",
            target: "amqp://127.0.0.1:5672",
            lastEventId: "evt_9a206c1687374b2e8d31e0f73ca57fe2",
            lagSeconds: 4.2,
            state: "retrying",
          },
        ],
      },
    ],
  },
);

/** GET /v1/admin/publishers (API.md, Events to a message broker); registered in the admin scope. */
export function adminPublisherRoutes(fastify: FastifyInstance, ctx: AppContext): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    "/publishers",
    { schema: { tags: ["admin"], security: [{ bearer: [] }], response: responses(PublishersResponse, 403) } },
    async () => {
      const config = ctx.config.publishers;
      const statuses = await ctx.store.publisherStatuses(configuredKinds(config));
      const nowMs = ctx.clock.now();
      return {
        success: true as const,
        publishers: statuses.map((status) => ({
          kind: status.kind,
          target: targetOf(config[status.kind]!.url),
          lastEventId: status.lastEventId,
          lagSeconds: lagSecondsOf(status, nowMs),
          state: status.state,
        })),
      };
    },
  );
}
