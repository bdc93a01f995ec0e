/**
 * How a port's primitives answer. better-sqlite3 answers synchronously, and SQLite's speed comes
 * from running a whole operation inside one synchronous transaction (no await, no other request
 * in between); pg answers with promises. A port is declared once for both: each adapter file
 * `satisfies` it in its own mode, and the flows (src/ledger/) are written against both (M = Io).
 */
export type Io = "sync" | "async";

/**
 * What a primitive returns in mode M; distributive, so over `Io` (either mode, the flows' view)
 * it is `T | Promise<T>`, and a port in one mode is assignable to the port in either.
 */
export type Out<M extends Io, T> = M extends "sync" ? T : Promise<T>;
