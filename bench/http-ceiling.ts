import Fastify from "fastify";
import { loadConfig } from "../src/config.js";
import { BatchParams, batchBodySchema } from "../src/http/schemas.js";
import { validatorCompiler } from "../src/http/validation.js";

/**
 * The HTTP ceiling: a bare Fastify route on the batch path that parses and validates the same
 * body with the service's own schema and validator, stores nothing and answers like the service.
 * Nothing the service does per batch can be cheaper than this. Run as a child of the bench.
 */
async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const app = Fastify({ logger: false, bodyLimit: config.bodyLimitBytes });
  app.setValidatorCompiler(validatorCompiler);
  const body = batchBodySchema(config);
  app.put<{ Params: { batchId: string } }>(
    "/v1/contracts/:contractAddress/batches/:batchId",
    { schema: { params: BatchParams, body } },
    async (request) => ({ success: true, batchId: request.params.batchId }),
  );
  app.get("/readyz", async () => ({ success: true, status: "ready" }));
  await app.listen({ port: config.port, host: "127.0.0.1" });
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => void app.close().then(() => process.exit(0)));
  }
}

await main();
