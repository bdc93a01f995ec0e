import { assertInvariant } from "../domain/errors.js";
import { eventJson } from "../domain/events.js";
import { eventLeafHash } from "../domain/log-event.js";
import { epochNoteText, epochOrigin } from "../domain/log-epoch.js";
import { checkpointText, signNote, verifierKey, type NoteSigner } from "../domain/signed-note.js";
import {
  appendToTiles,
  consistencyProof,
  edgeTiles,
  inclusionProof,
  nodeHashesFromTiles,
  nodesNeeded,
  tilesOf,
  treeHash,
  type Hash,
  type NodeHashes,
  type Tile,
} from "../domain/tlog.js";
import type { AddressKey } from "../domain/address.js";
import { LOG_VERIFY_LAG_BOUND_SECONDS } from "../domain/limits.js";
import type { Violation } from "../store/ports/verify.js";
import type { LedgerDatabase, LedgerPorts } from "../store/ports/ledger.js";
import type {
  ConsistencyAnswer,
  InclusionAnswer,
  LogSigning,
  LogStatus,
  LogStep,
  OpenLogAnswer,
  StoredCheckpoint,
  StoredEpoch,
} from "../store/ports/tlog.js";
import { inTransaction, io, readWith, type Flow } from "./flow.js";

/**
 * The transparency log (API.md, Transparency log), a projection of the event log: each step reads
 * the events committed after its position, in the event log's one order (which only grows at its
 * end), appends their leaves to the tree's tiles, stamps their logIndex, and moves its position,
 * in one transaction; a crash loses and doubles nothing, and on PostgreSQL one instance logs at a
 * time (an advisory lock, tried). webhook.test events are passed over: they are on no stream.
 * Nothing here runs inside a transition's transaction.
 */

/** The tiles `compute` needs, read at once, as a NodeHashes. */
function* tileNodes<Db>(ports: LedgerPorts<Db>, db: Db, compute: (node: NodeHashes) => unknown): Flow<NodeHashes> {
  const keys = tilesOf(nodesNeeded(compute));
  const tiles: Tile[] = keys.length === 0 ? [] : yield* io(ports.log.readTiles(db, keys));
  return nodeHashesFromTiles(new Map(tiles.map((tile) => [`${tile.level}/${tile.index}`, tile])));
}

function* rootOf<Db>(ports: LedgerPorts<Db>, db: Db, size: number): Flow<Hash> {
  const node = yield* tileNodes(ports, db, (nodes) => treeHash(size, nodes));
  return treeHash(size, node);
}

function* signCheckpoint<Db>(
  ports: LedgerPorts<Db>,
  db: Db,
  size: number,
  epoch: number,
  nowMs: number,
  signing: LogSigning,
): Flow<StoredCheckpoint> {
  const root = yield* rootOf(ports, db, size);
  const note = signNote(checkpointText({ origin: epochOrigin(signing.origin, epoch), size, root }), signing.signer);
  const checkpoint = { size, root, note, signedAtMs: nowMs };
  yield* io(ports.log.storeCheckpoint(db, checkpoint));
  return checkpoint;
}

/** One step: up to `limit` events logged, then a checkpoint if the tree outgrew the last one and the interval has passed (or none was ever signed). */
export async function appendToLog<Db>(database: LedgerDatabase<Db>, limit: number, nowMs: number, signing: LogSigning): Promise<LogStep> {
  return inTransaction(database, function* (ports, db) {
    if (!(yield* io(ports.log.claimLogger(db)))) return { logged: 0, more: false, checkpoint: null, unsigned: false };
    const state = yield* io(ports.log.logState(db));
    const read = yield* io(ports.log.eventsToLog(db, state.position, limit));
    const logged = read.filter(({ event }) => event.type !== "webhook.test");
    let size = state.size;
    if (logged.length > 0) {
      const edge = yield* io(ports.log.readTiles(db, edgeTiles(size)));
      const leaves: Hash[] = logged.map(({ event }) => {
        assertInvariant(event.logIndex === null || event.logIndex === undefined, `event ${event.id} is logged already`);
        return eventLeafHash(eventJson(event));
      });
      yield* io(ports.log.writeTiles(db, appendToTiles(size, edge, leaves)));
      yield* io(
        ports.log.setLogIndexes(
          db,
          logged.map(({ event }, i) => ({ eventId: event.id, logIndex: size + i })),
        ),
      );
      size += logged.length;
    }
    if (read.length > 0) yield* io(ports.log.advanceLog(db, size, read.at(-1)!.position));
    let checkpoint = state.checkpoint;
    const due = checkpoint === null || (size > checkpoint.size && nowMs - checkpoint.signedAtMs >= signing.checkpointIntervalMs);
    if (due) checkpoint = yield* signCheckpoint(ports, db, size, state.epoch, nowMs, signing);
    return { logged: logged.length, more: read.length === limit, checkpoint, unsigned: size > checkpoint!.size };
  });
}

/**
 * Begins the next epoch (domain/log-epoch.ts): the tree as it stands is its start, announced by a
 * note `announcer` signs (the key of the epoch before), and its first checkpoint is signed at once
 * by `signing`, so a witness finds the announcement and the new checkpoint together.
 */
function* beginNextEpoch<Db>(ports: LedgerPorts<Db>, db: Db, announcer: NoteSigner, signing: LogSigning, nowMs: number): Flow<number> {
  const state = yield* io(ports.log.logState(db));
  const epoch = state.epoch + 1;
  const origin = epochOrigin(signing.origin, epoch);
  const text = epochNoteText({
    origin,
    follows: epochOrigin(announcer.name, state.epoch),
    forkSize: state.size,
    forkRoot: yield* rootOf(ports, db, state.size),
    verifierKey: verifierKey(signing.signer),
  });
  yield* io(ports.log.beginEpoch(db, { epoch, origin, note: signNote(text, announcer), startedAtMs: nowMs }));
  yield* io(ports.log.setLogIdentity(db, signing.origin, verifierKey(signing.signer)));
  yield* signCheckpoint(ports, db, state.size, epoch, nowMs, signing);
  return epoch;
}

export async function openLog<Db>(database: LedgerDatabase<Db>, signing: LogSigning, nowMs: number): Promise<OpenLogAnswer> {
  return inTransaction(database, function* (ports, db): Flow<OpenLogAnswer> {
    const identity = yield* io(ports.log.logIdentity(db));
    const key = verifierKey(signing.signer);
    if (identity.verifierKey === null) yield* io(ports.log.setLogIdentity(db, signing.origin, key));
    else if (identity.verifierKey !== key || identity.origin !== signing.origin) {
      return { kind: "mismatch", origin: identity.origin ?? "", verifierKey: identity.verifierKey };
    }
    if (!identity.newEpochDue) return { kind: "ok", epoch: identity.epoch, begun: false };
    return { kind: "ok", epoch: yield* beginNextEpoch(ports, db, signing.signer, signing, nowMs), begun: true };
  });
}

export async function rotateLogKey<Db>(
  database: LedgerDatabase<Db>,
  previous: NoteSigner,
  signing: LogSigning,
  nowMs: number,
): Promise<OpenLogAnswer> {
  return inTransaction(database, function* (ports, db): Flow<OpenLogAnswer> {
    const identity = yield* io(ports.log.logIdentity(db));
    if (identity.verifierKey !== null && identity.verifierKey !== verifierKey(previous)) {
      return { kind: "mismatch", origin: identity.origin ?? "", verifierKey: identity.verifierKey };
    }
    return { kind: "ok", epoch: yield* beginNextEpoch(ports, db, previous, signing, nowMs), begun: true };
  });
}

export async function markNewLogEpoch<Db>(database: LedgerDatabase<Db>): Promise<void> {
  return inTransaction(database, function* (ports, db) {
    yield* io(ports.log.markNewEpochDue(db));
  });
}

export async function logEpochs<Db>(database: LedgerDatabase<Db>): Promise<StoredEpoch[]> {
  return readWith(database, function* (ports, db) {
    return yield* io(ports.log.logEpochs(db));
  });
}

export async function logCheckpoint<Db>(database: LedgerDatabase<Db>): Promise<StoredCheckpoint | null> {
  return readWith(database, function* (ports, db) {
    return (yield* io(ports.log.logState(db))).checkpoint;
  });
}

export async function logStatus<Db>(database: LedgerDatabase<Db>): Promise<LogStatus> {
  return readWith(database, function* (ports, db) {
    const state = yield* io(ports.log.logState(db));
    const oldestUnloggedAtMs = yield* io(ports.log.oldestUnloggedAtMs(db));
    return { size: state.size, checkpoint: state.checkpoint, oldestUnloggedAtMs };
  });
}

/** The log's part of `points-ledger verify`: an event older than the bound that has no logIndex is a violation (invariant 6). */
export function logLagViolations(status: LogStatus, nowMs: number, boundSeconds = LOG_VERIFY_LAG_BOUND_SECONDS): Violation[] {
  if (status.oldestUnloggedAtMs === null || nowMs - status.oldestUnloggedAtMs <= boundSeconds * 1000) return [];
  const ageSeconds = Math.floor((nowMs - status.oldestUnloggedAtMs) / 1000);
  return [
    {
      invariant: 6,
      message: `the transparency log has not logged an event committed ${ageSeconds} s ago (bound ${boundSeconds} s; the log holds ${status.size} events): it is not advancing, see docs/operations.md#pointsledgertransparencylogstalled`,
    },
  ];
}

/** The inclusion proof of one event (InclusionAnswer says why there is none). */
export async function logInclusionProof<Db>(
  database: LedgerDatabase<Db>,
  eventId: string,
  stream: AddressKey | null,
  treeSize: number | null,
): Promise<InclusionAnswer> {
  return readWith(database, function* (ports, db): Flow<InclusionAnswer> {
    const event = yield* io(ports.log.loggedEvent(db, eventId));
    if (event === null || (stream !== null && event.stream !== stream)) return { kind: "not_found" };
    const checkpoint = (yield* io(ports.log.logState(db))).checkpoint;
    const checkpointSize = checkpoint?.size ?? 0;
    if (treeSize !== null && treeSize > checkpointSize) return { kind: "too_large", checkpointSize };
    const size = treeSize ?? checkpointSize;
    if (event.logIndex === null || event.logIndex >= size) return { kind: "not_yet_logged" };
    const index = event.logIndex;
    const node = yield* tileNodes(ports, db, (nodes) => {
      nodes(0, index);
      return inclusionProof(index, size, nodes);
    });
    return { kind: "proof", logIndex: index, treeSize: size, leafHash: node(0, index), proof: inclusionProof(index, size, node) };
  });
}

export async function logConsistencyProof<Db>(database: LedgerDatabase<Db>, from: number, to: number): Promise<ConsistencyAnswer> {
  return readWith(database, function* (ports, db): Flow<ConsistencyAnswer> {
    const checkpointSize = (yield* io(ports.log.logState(db))).checkpoint?.size ?? 0;
    if (to > checkpointSize) return { kind: "too_large", checkpointSize };
    const node = yield* tileNodes(ports, db, (nodes) => consistencyProof(from, to, nodes));
    return { kind: "proof", proof: consistencyProof(from, to, node) };
  });
}
