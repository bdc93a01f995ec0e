import { describeHistory } from "./history-suite.js";
import { createTestSchema, DATABASE_URL_TEST, SKIP_REASON } from "./helpers/postgres.js";

if (!DATABASE_URL_TEST) console.warn(SKIP_REASON);

describeHistory(
  "PostgreSQL",
  async () => {
    const schema = await createTestSchema(DATABASE_URL_TEST!);
    return { store: schema.openStore(), close: () => schema.drop() };
  },
  !DATABASE_URL_TEST,
);
