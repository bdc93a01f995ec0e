import { Ajv, type ErrorObject, type Options } from "ajv";
import type { FastifySchemaCompiler } from "fastify";
import type { FieldError } from "../domain/errors.js";

/**
 * Fastify's default validator coerces types, drops extra fields and stops at the first error.
 * API.md wants bodies taken as sent, extra fields rejected and every offending field listed, so
 * bodies get their own Ajv; query strings and path parameters arrive as text and are coerced.
 */
const common: Options = { allErrors: true, strict: false, removeAdditional: false, useDefaults: false };
const bodyAjv = new Ajv({ ...common, coerceTypes: false });
const textAjv = new Ajv({ ...common, coerceTypes: true });

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === "body" ? bodyAjv : textAjv;
  return ajv.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
};

/** `/transfers/17/points` → `transfers[17].points` (the `details.path` form of API.md). */
export function toFieldPath(instancePath: string, property?: string): string {
  let path = "";
  const segments = instancePath.split("/").slice(1);
  if (property !== undefined) segments.push(property);
  for (const raw of segments) {
    const segment = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (/^[0-9]+$/.test(segment)) path += `[${segment}]`;
    else path += path === "" ? segment : `.${segment}`;
  }
  return path === "" ? "(body)" : path;
}

function messageOf(error: ErrorObject): string {
  switch (error.keyword) {
    case "additionalProperties":
      return "is not an allowed field";
    case "required":
      return "is required";
    case "pattern":
      return "has an invalid format";
    case "anyOf":
      return "does not match any allowed form";
    default:
      return error.message ?? "is invalid";
  }
}

/**
 * Turns Ajv errors into one FieldError per offending field. Union branches report the same
 * field several times; keep one message per path, preferring the most specific.
 */
export function fieldErrorsOf(errors: ErrorObject[]): FieldError[] {
  const byPath = new Map<string, string>();
  for (const error of errors) {
    const property =
      error.keyword === "additionalProperties"
        ? String(error.params.additionalProperty)
        : error.keyword === "required"
          ? String(error.params.missingProperty)
          : undefined;
    const path = toFieldPath(error.instancePath, property);
    if (!byPath.has(path) || error.keyword !== "anyOf") byPath.set(path, messageOf(error));
  }
  return [...byPath].map(([path, message]) => ({ path, message }));
}
