import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { ConnectionError, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ApiError, notFound, unavailable, validationFailed } from "../domain/errors.js";
import { bodyTooLargeMessage, EMPTY_BODY_MESSAGE, MALFORMED_REQUEST_MESSAGE, NO_SUCH_ROUTE_MESSAGE } from "../domain/messages.js";
import { StoreUnavailableError } from "../store/errors.js";
import { fieldErrorsOf } from "./validation.js";

/**
 * Everything that goes wrong ends here and leaves as `{success: false, error: {...}}`:
 * our ApiErrors, Fastify's own errors (bad JSON, body too large, bad URL encoding, schema
 * validation) and anything unexpected, which becomes a 500 without internals. `request` gives the
 * route's body limit, which a 413 names.
 */
export function toApiError(error: FastifyError | Error, request?: FastifyRequest): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof StoreUnavailableError) return unavailable(error.message, error.retryAfterSeconds);
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) return validationFailed(fieldErrorsOf(fastifyError.validation as never));
  switch (fastifyError.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return payloadTooLarge(request);
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return fastifyError.statusCode === 415
        ? new ApiError("UNSUPPORTED_MEDIA_TYPE")
        : validationFailed([{ path: "(body)", message: fastifyError.message }]);
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return validationFailed([{ path: "(body)", message: EMPTY_BODY_MESSAGE }]);
    case "FST_ERR_BAD_URL":
    case "FST_ERR_ASYNC_CONSTRAINT":
      return notFound(NO_SUCH_ROUTE_MESSAGE);
  }
  const status = fastifyError.statusCode ?? 500;
  if (status === 413) return payloadTooLarge(request);
  if (status === 415) return new ApiError("UNSUPPORTED_MEDIA_TYPE");
  if (status === 404) return notFound(NO_SUCH_ROUTE_MESSAGE);
  if (status >= 400 && status < 500) {
    // JSON syntax errors, prototype poisoning, malformed headers: all the client's input.
    return validationFailed([{ path: "(body)", message: fastifyError.message }], MALFORMED_REQUEST_MESSAGE);
  }
  return new ApiError("INTERNAL");
}

function payloadTooLarge(request: FastifyRequest | undefined): ApiError {
  const limitBytes = request?.routeOptions.bodyLimit;
  return limitBytes === undefined ? new ApiError("PAYLOAD_TOO_LARGE") : new ApiError("PAYLOAD_TOO_LARGE", bodyTooLargeMessage(limitBytes));
}

export function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  if (error.code === "UNAUTHORIZED") reply.header("www-authenticate", 'Bearer realm="points-ledger"');
  if (error.retryAfterSeconds !== undefined) reply.header("retry-after", String(error.retryAfterSeconds));
  const body: { code: string; message: string; details?: unknown } = { code: error.code, message: error.message };
  if (error.details !== undefined) body.details = error.details;
  return reply.code(error.status).send({ success: false, error: body });
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const apiError = toApiError(error, request);
    if (apiError.status >= 500) request.log.error({ err: error }, "request failed");
    return sendError(reply, apiError);
  });
  app.setNotFoundHandler((request, reply) => sendError(reply, notFound(`no route ${request.method} ${request.url.split("?")[0]}`)));
}

/** Router errors (bad percent-encoding, an over-long path parameter) bypass the error handler; send them through the catalogue too. */
export function frameworkErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  void sendError(reply, toApiError(error, request));
}

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (headers over the size limit,
 * a broken request line) also get the catalogue's body, then the connection closes.
 */
export function clientErrorHandler(error: ConnectionError, socket: Socket): void {
  if (error.code === "ECONNRESET" || socket.destroyed || !socket.writable) return;
  const apiError = clientErrorOf(error.code);
  const body = JSON.stringify({ success: false, error: { code: apiError.code, message: apiError.message, details: apiError.details } });
  socket.end(
    `HTTP/1.1 ${apiError.status} ${STATUS_CODES[apiError.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

function clientErrorOf(code: string | undefined): ApiError {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return new ApiError("PAYLOAD_TOO_LARGE", "the request line and headers exceed the size limit");
    case "ERR_HTTP_REQUEST_TIMEOUT":
      // Node's headers/request timeout: a client that sends its headers or body too slowly.
      return validationFailed([{ path: "(request)", message: "did not arrive within the request timeout" }], "request timeout");
    default:
      return validationFailed([{ path: "(request)", message: "is not a well-formed HTTP/1.1 request" }], MALFORMED_REQUEST_MESSAGE);
  }
}
