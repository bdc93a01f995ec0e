import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { FastifyInstance, FastifyReply } from "fastify";
import fastifyStatic from "@fastify/static";
import { notFound } from "../../domain/errors.js";
import { pageSecurityHeaders } from "../security-headers.js";

/**
 * GET /console: the operator console (src/console), built by `npm run build` into dist/console
 * and served as static files; GET / leads there, and /favicon.ico is its icon. The page talks to this same origin only, so its
 * Content-Security-Policy allows nothing else: no other host can be loaded, framed or posted to.
 */

/** dist/console, seen from this module built (dist/src/http/routes) or run from source (src/http/routes). */
const BUILD_CANDIDATES = ["../../../console/", "../../../dist/console/"];

const SECURITY_HEADERS = pageSecurityHeaders();

/** Hashed asset names change with their content: they may be cached for good. The page itself never is. */
const ASSET_MAX_AGE_SECONDS = 365 * 24 * 3600;

/**
 * The icon browsers ask /favicon.ico for (the console's page names none): a "P" on a rounded
 * square, as SVG text so it is source like the rest and needs no build step. Browsers take an SVG
 * there when its content type says so. Its name never changes with its content, so it is cached
 * for a day, not for good.
 */
const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">' +
  '<rect width="32" height="32" rx="7" fill="#1f4e79"/>' +
  '<path d="M11 25V7h6.5a5.5 5.5 0 0 1 0 11H11" fill="none" stroke="#fff" stroke-width="3.5" stroke-linejoin="round"/>' +
  "</svg>";
const FAVICON_MAX_AGE_SECONDS = 24 * 3600;

export function consoleBuildDir(): string | null {
  for (const candidate of BUILD_CANDIDATES) {
    const dir = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(`${dir}index.html`)) return dir;
  }
  return null;
}

function secureHeaders(reply: FastifyReply): FastifyReply {
  return reply.headers(SECURITY_HEADERS);
}

export async function consoleRoutes(app: FastifyInstance): Promise<void> {
  const root = consoleBuildDir();
  const page = root === null ? null : readFileSync(`${root}index.html`, "utf8");
  const sendPage = async (_request: unknown, reply: FastifyReply) => {
    if (page === null) throw notFound("the console is not built: run `npm run build`");
    return secureHeaders(reply).header("cache-control", "no-cache").type("text/html; charset=utf-8").send(page);
  };
  // The service's root has nothing of its own: a browser pointed at it lands on the console.
  app.get("/", { schema: { hide: true } }, async (_request, reply) => reply.redirect("/console/", 302));
  app.get("/favicon.ico", { schema: { hide: true } }, async (_request, reply) =>
    secureHeaders(reply).header("cache-control", `public, max-age=${FAVICON_MAX_AGE_SECONDS}`).type("image/svg+xml").send(FAVICON_SVG),
  );
  app.get("/console", { schema: { hide: true } }, async (_request, reply) => reply.redirect("/console/", 301));
  app.get("/console/", { schema: { hide: true } }, sendPage);
  if (root !== null) {
    await app.register(fastifyStatic, {
      root: `${root}assets`,
      prefix: "/console/assets/",
      wildcard: false,
      index: false,
      decorateReply: false,
      maxAge: ASSET_MAX_AGE_SECONDS * 1000,
      immutable: true,
      setHeaders: (response) => {
        response.headers(SECURITY_HEADERS);
      },
    });
  }
  // Client-side routes live in the fragment; any other path under /console is the page too.
  app.get("/console/*", { schema: { hide: true } }, async (request, reply) => {
    if (request.url.startsWith("/console/assets/")) throw notFound(`no console asset ${request.url.split("?")[0]}`);
    return sendPage(request, reply);
  });
}
