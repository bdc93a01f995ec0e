import type { FastifyReply, FastifyRequest } from "fastify";

/**
 * A route hook (`onRequest: noStore`) for answers that carry a token, a secret or a sign-in
 * challenge: `Cache-Control: no-store`, so no browser, proxy or CDN keeps a copy. Set before the
 * handler runs, so it stays on whatever the route answers (errors included).
 */
export async function noStore(_request: FastifyRequest, reply: FastifyReply): Promise<void> {
  void reply.header("cache-control", "no-store");
}
