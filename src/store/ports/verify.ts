import type { Io, Out } from "./io.js";

/** A broken ledger invariant (README, Architecture: Ledger model), as `points-ledger verify` reports it. */
export interface Violation {
  /** 1–4: the ledger; 5: its read models; 6: the transparency log has logged every event older than a bound. */
  invariant: 1 | 2 | 3 | 4 | 5 | 6;
  message: string;
}

/** LedgerStore.verify: every invariant checked over the whole database, in one consistent read `db`. */
export interface VerifyPort<Db, out M extends Io = Io> {
  verifyLedger(db: Db): Out<M, Violation[]>;
}
