import { Ajv, type ErrorObject, type Options } from "ajv";
import type { FastifySchemaCompiler } from "fastify";
import { capDetails, type FieldError } from "../domain/errors.js";
import { MAX_VALIDATION_DETAILS } from "../domain/limits.js";
import { inputMessage, isInputKind, oneOfMessage } from "../domain/messages.js";

/**
 * Fastify's default validator coerces types, drops extra fields and stops at the first error.
 * docs/api.md wants bodies taken as sent, extra fields rejected and every offending field listed, so
 * bodies get their own Ajv; query strings and path parameters arrive as text and are coerced.
 */
const common: Options = { allErrors: true, strict: false, removeAdditional: false, useDefaults: false };
/**
 * verbose: errors carry their parentSchema and the value, so a union can name its own message
 * (MESSAGE_KEYWORD) and a field of a known kind gets the message that quotes it (INPUT_KIND_KEYWORD).
 */
const bodyAjv = new Ajv({ ...common, coerceTypes: false, verbose: true });
/** Stops at the first error: decides valid/invalid at the cost of one pass, whatever the body holds. */
const firstErrorAjv = new Ajv({ ...common, allErrors: false, coerceTypes: false });
const textAjv = new Ajv({ ...common, coerceTypes: true, verbose: true });

export type Validate = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  if (httpPart !== "body") return textAjv.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
  return boundedBodyValidator(schema as SchemaNode) as ReturnType<FastifySchemaCompiler<unknown>>;
};

/**
 * Ajv with allErrors walks a whole invalid body and makes an error object per offence: a 1 MB
 * `[{},{},…]` or 95,000 extra keys cost seconds and hundreds of MB. So a body is first checked
 * with a first-error validator (a valid body pays nothing more); an invalid one is scanned for
 * structural offences (arrays past maxItems, which are not walked, and extra keys of closed
 * objects); only when those are few does the all-errors validator run, and its work is then
 * bounded by maxItems × the fields of an item.
 */
export function boundedBodyValidator(schema: SchemaNode): Validate {
  const isValid = firstErrorAjv.compile(schema);
  const allErrors = bodyAjv.compile(schema);
  const validate: Validate = (data) => {
    validate.errors = null;
    if (isValid(data)) return true;
    const structural = structuralErrors(schema, data);
    if (structural.errors.length > 0 && (structural.arrayTooLong || structural.count > MAX_VALIDATION_DETAILS)) {
      validate.errors = truncated(structural.errors, structural.count);
      return false;
    }
    allErrors(data);
    validate.errors = allErrors.errors ?? [];
    return false;
  };
  return validate;
}

/** The parts of a JSON schema the structural scan follows (TypeBox objects and arrays). */
export interface SchemaNode {
  type?: unknown;
  [INPUT_KIND_KEYWORD]?: unknown;
  properties?: Record<string, SchemaNode>;
  additionalProperties?: unknown;
  items?: SchemaNode;
  maxItems?: number;
}

interface StructuralFindings {
  errors: ErrorObject[];
  count: number;
  arrayTooLong: boolean;
}

/** Finds arrays longer than their maxItems (without walking them) and extra keys of closed objects; keeps the first MAX_VALIDATION_DETAILS. */
function structuralErrors(schema: SchemaNode, data: unknown): StructuralFindings {
  const findings: StructuralFindings = { errors: [], count: 0, arrayTooLong: false };
  const report = (error: ErrorObject) => {
    findings.count += 1;
    if (findings.errors.length < MAX_VALIDATION_DETAILS) findings.errors.push(error);
  };
  const visit = (node: SchemaNode, value: unknown, instancePath: string) => {
    if (node.type === "array" && Array.isArray(value)) {
      if (node.maxItems !== undefined && value.length > node.maxItems) {
        findings.arrayTooLong = true;
        const error = ajvError("maxItems", instancePath, { limit: node.maxItems }, `must have at most ${node.maxItems} items`);
        report({ ...error, parentSchema: node, data: value });
        return;
      }
      if (node.items) for (let i = 0; i < value.length; i++) visit(node.items, value[i], `${instancePath}/${i}`);
    } else if (node.type === "object" && typeof value === "object" && value !== null && !Array.isArray(value)) {
      const properties = node.properties ?? {};
      for (const key of Object.keys(value)) {
        const child = Object.hasOwn(properties, key) ? properties[key] : undefined;
        if (child) visit(child, (value as Record<string, unknown>)[key], `${instancePath}/${escapePointer(key)}`);
        else if (node.additionalProperties === false) {
          report(ajvError("additionalProperties", instancePath, { additionalProperty: key }, "must NOT have additional properties"));
        }
      }
    }
  };
  visit(schema, data, "");
  return findings;
}

function ajvError(keyword: string, instancePath: string, params: Record<string, unknown>, message: string): ErrorObject {
  return { keyword, instancePath, schemaPath: "", params, message };
}

function escapePointer(key: string): string {
  return key.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** `truncated` carries how many offences were found past the ones listed. */
function truncated(errors: ErrorObject[], count: number): ErrorObject[] {
  if (count <= errors.length) return errors;
  return [...errors, ajvError(TRUNCATED_KEYWORD, "", { more: count - errors.length }, "more offences")];
}

const TRUNCATED_KEYWORD = "truncated";

/** A schema annotation: the message for a value that matches none of a union's forms. */
export const MESSAGE_KEYWORD = "x-message";

/**
 * A schema annotation: what the field holds (an InputKind of src/domain/messages.ts). A value its
 * schema refuses, for whatever keyword, gets that kind's message, the one the client gives too.
 */
export const INPUT_KIND_KEYWORD = "x-input";

/** `/transfers/17/points` → `transfers[17].points` (the `details.path` form of docs/api.md). */
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
  const parentSchema = error.parentSchema as SchemaNode | undefined;
  const kind = parentSchema?.[INPUT_KIND_KEYWORD];
  if (isInputKind(kind)) return inputMessage(kind, error.data, parentSchema?.maxItems);
  switch (error.keyword) {
    case "additionalProperties":
      return "is not an allowed field";
    case "required":
      return "is required";
    case "pattern":
      return "has an invalid format";
    case "anyOf":
      return "does not match any allowed form";
    case "enum":
      // A configured list (POINT_TYPES): name what is allowed.
      return oneOfMessage(error.params.allowedValues as unknown[]);
    default:
      return error.message ?? "is invalid";
  }
}

/**
 * Turns Ajv errors into one FieldError per offending field. Union branches report the same
 * field several times; keep one message per path, preferring the most specific.
 */
export function fieldErrorsOf(errors: ErrorObject[]): FieldError[] {
  /** A union's own message, or the error whose message is made if the answer lists its field. */
  const byPath = new Map<string, string | ErrorObject>();
  /** Paths whose union named its own message: the branches' messages ("must be null") would mislead. */
  const named = new Set<string>();
  let more = 0;
  for (const error of errors) {
    if (error.keyword === TRUNCATED_KEYWORD) {
      more += Number(error.params.more);
      continue;
    }
    const property =
      error.keyword === "additionalProperties"
        ? String(error.params.additionalProperty)
        : error.keyword === "required"
          ? String(error.params.missingProperty)
          : undefined;
    const path = toFieldPath(error.instancePath, property);
    if (named.has(path)) continue;
    const ownMessage = (error.parentSchema as Record<string, unknown> | undefined)?.[MESSAGE_KEYWORD];
    if (error.keyword === "anyOf" && typeof ownMessage === "string") {
      byPath.set(path, ownMessage);
      named.add(path);
    } else if (!byPath.has(path) || error.keyword !== "anyOf") {
      byPath.set(path, error);
    }
  }
  // Messages quote the values they refuse: make them only for the fields the answer lists (a
  // batch of 2,000 bad transfers has 4,000 offending fields; the answer names 100).
  const entries = [...byPath];
  const listed = entries.slice(0, MAX_VALIDATION_DETAILS).map(([path, source]) => ({
    path,
    message: typeof source === "string" ? source : messageOf(source),
  }));
  return capDetails(listed, more + entries.length - listed.length);
}
