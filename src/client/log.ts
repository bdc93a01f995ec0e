import { eventLeafHash } from "../domain/log-event.js";
import { fromBase64, NoteError, openNote, parseCheckpoint, parseVerifierKey, toBase64 } from "../domain/signed-note.js";
import { verifyConsistency, verifyInclusion } from "../domain/tlog.js";
import { parseEpochNote, type EpochAnnouncement } from "../domain/log-epoch.js";
import type { Transport } from "./transport.js";
import type { LedgerEvent } from "./types.js";

/**
 * The transparency log (docs/api.md, Transparency log; docs/transparency.md), checked here, not
 * trusted: a checkpoint is accepted only with a valid signature of the key the caller pins,
 * consistency and inclusion proofs are verified against the checkpoints' root hashes, and an
 * event's leaf is recomputed from the Event JSON the caller holds (from the API, a webhook or the
 * stream). Every check that fails throws LogVerificationError.
 */

export class LogVerificationError extends Error {
  override readonly name = "LogVerificationError";
}

/** A checkpoint whose signature was checked: the log's origin, its size and its root hash (base64). */
export interface Checkpoint {
  origin: string;
  size: number;
  rootHash: string;
  /** The signed note as served, to keep (a witness saves it). */
  note: string;
}

/** GET …/events/{eventId}/proof. */
export interface EventProof {
  eventId: string;
  logIndex: number;
  treeSize: number;
  leafHash: string;
  proof: string[];
}

/** Where an event's proof is asked: the contract's route with its token, or the admin's. */
export type EventProofSource = (eventId: string, treeSize: number) => Promise<EventProof>;

function decodeAll(hashes: readonly string[]): Uint8Array[] {
  return hashes.map((hash) => fromBase64(hash));
}

/** Opens a signed checkpoint with `verifierKey` (`<name>+<id>+<key>`); LogVerificationError when it does not verify. */
export function verifyCheckpoint(note: string, verifierKey: string): Checkpoint {
  try {
    const checkpoint = parseCheckpoint(openNote(note, parseVerifierKey(verifierKey)));
    return { origin: checkpoint.origin, size: checkpoint.size, rootHash: toBase64(checkpoint.root), note };
  } catch (error) {
    if (error instanceof NoteError)
      throw new LogVerificationError(`the checkpoint does not verify with ${verifierKey.trim()}: ${error.message}`);
    throw error;
  }
}

/** Checks `proof` shows `newer` extends `older` (same origin, nothing rewritten); LogVerificationError otherwise. */
export function verifyCheckpointConsistency(older: Checkpoint, newer: Checkpoint, proof: readonly string[]): void {
  if (older.origin !== newer.origin) throw new LogVerificationError(`the origin changed from ${older.origin} to ${newer.origin}`);
  if (newer.size < older.size) {
    throw new LogVerificationError(`the log shrank from ${older.size} to ${newer.size} events: its history was rewritten`);
  }
  const ok = verifyConsistency(older.size, newer.size, fromBase64(older.rootHash), fromBase64(newer.rootHash), decodeAll(proof));
  if (!ok) {
    throw new LogVerificationError(
      older.size === newer.size
        ? `two checkpoints of ${older.size} events with different roots: the log forked`
        : `the log of ${newer.size} events does not extend the log of ${older.size} events: its history was rewritten`,
    );
  }
}

/** Checks `proof` shows `event` (its Event JSON) at its place in `checkpoint`; returns its log index. */
export function verifyEventInclusion(event: LedgerEvent | object, proof: EventProof, checkpoint: Checkpoint): number {
  const leaf = eventLeafHash(event);
  if (proof.treeSize !== checkpoint.size)
    throw new LogVerificationError(`the proof is for ${proof.treeSize} events, the checkpoint has ${checkpoint.size}`);
  if (!verifyInclusion(proof.logIndex, proof.treeSize, leaf, decodeAll(proof.proof), fromBase64(checkpoint.rootHash))) {
    throw new LogVerificationError(
      `event ${proof.eventId} as given is not at ${proof.logIndex} in the checkpoint of ${checkpoint.size} events`,
    );
  }
  return proof.logIndex;
}

/** GET /v1/log/status. */
export interface LogStatus {
  treeSize: number;
  checkpointSize: number | null;
  checkpointSignedAt: string | null;
  oldestUnloggedAt: string | null;
  lagSeconds: number;
}

/** GET /v1/log/epochs: one epoch's announcement as served. */
export interface LogEpoch {
  epoch: number;
  origin: string;
  startedAt: string;
  note: string;
}

/** What TransparencyLog.followEpochs found: the checkpoint now served, the key it is signed by, the announcements followed. */
export interface FollowedEpochs {
  checkpoint: Checkpoint;
  verifierKey: string;
  epochs: EpochAnnouncement[];
  /** Events of the saved checkpoint past the fork (a restore to an older copy): they are not in the new epoch. */
  eventsNotFollowed: number;
}

/** The announcement in `note` if `verifierKey` signed it, else null. */
function openAnnouncement(note: string, verifierKey: string): EpochAnnouncement | null {
  try {
    return parseEpochNote(openNote(note, parseVerifierKey(verifierKey)));
  } catch (error) {
    if (error instanceof NoteError) return null;
    throw error;
  }
}

/** The client's `log`: fetch what the service publishes, and verify it locally. */
export class TransparencyLog {
  constructor(
    private readonly transport: Transport,
    private readonly proofSource: EventProofSource,
  ) {}

  /** GET /v1/log/key: the verifier key. Pin the one you trust; do not take it from the service at every check. */
  async key(): Promise<string> {
    return (await this.transport.request<string>({ method: "GET", path: "/v1/log/key", idempotent: true, text: true })).trim();
  }

  /**
   * GET /v1/log/status: how far the log has got (not signed: what the service says of itself).
   * `lagSeconds` is the age of the oldest committed event not logged yet, 0 when none.
   */
  async status(): Promise<LogStatus> {
    const { success: _success, ...status } = await this.transport.request<LogStatus & { success: true }>({
      method: "GET",
      path: "/v1/log/status",
      idempotent: true,
    });
    return status;
  }

  /** GET /v1/log/epochs: the announcements of the log's epochs (not checked here: see followEpochs). */
  async epochs(): Promise<LogEpoch[]> {
    const body = await this.transport.request<{ epochs: LogEpoch[] }>({ method: "GET", path: "/v1/log/epochs", idempotent: true });
    return body.epochs;
  }

  /**
   * Where the log went since `older` (a checkpoint verified with `verifierKey`): the announced
   * epochs it follows, each checked with the key of the epoch before, then the latest checkpoint
   * checked with the last announced key and proven to extend the last fork (and `older`, when it
   * lies within that fork). LogVerificationError when no announcement signed by `verifierKey`
   * leads from `older`'s origin, or a step does not verify: an unannounced rewrite fails.
   */
  async followEpochs(older: Checkpoint, verifierKey: string): Promise<FollowedEpochs> {
    const hops: EpochAnnouncement[] = [];
    let origin = older.origin;
    let key = verifierKey;
    for (const epoch of await this.epochs()) {
      const announcement = openAnnouncement(epoch.note, key);
      if (announcement === null || announcement.follows !== origin) continue;
      hops.push(announcement);
      origin = announcement.origin;
      key = announcement.verifierKey;
    }
    const last = hops.at(-1);
    if (last === undefined) throw new LogVerificationError(`no epoch announced by ${verifierKey} follows ${older.origin}`);
    const newer = await this.checkpoint(key);
    if (newer.origin !== origin)
      throw new LogVerificationError(`the served checkpoint is of ${newer.origin}, not of the announced ${origin}`);
    const fork: Checkpoint = { origin, size: last.forkSize, rootHash: toBase64(last.forkRoot), note: "" };
    await this.verifyConsistency(fork, newer);
    const lost = hops.length === 1 && older.size > last.forkSize ? older.size - last.forkSize : 0;
    if (hops.length === 1 && lost === 0) await this.verifyConsistency({ ...older, origin }, newer);
    return { checkpoint: newer, verifierKey: key, epochs: hops, eventsNotFollowed: lost };
  }

  /** GET /v1/log/checkpoint, its signature checked with `verifierKey`. */
  async checkpoint(verifierKey: string): Promise<Checkpoint> {
    return (await this.signedCheckpoint(verifierKey)).checkpoint;
  }

  /**
   * GET /v1/log/checkpoint, its signature checked with `verifierKey`, and when the service says it
   * signed it (its Last-Modified header, to the second: the signature does not cover the time).
   */
  async signedCheckpoint(verifierKey: string): Promise<{ checkpoint: Checkpoint; signedAt: string | null }> {
    const spec = { method: "GET", path: "/v1/log/checkpoint", idempotent: true, text: true } as const;
    const answer = await this.transport.withRetry(true, () => this.transport.exchange<string>(spec));
    const signedAt = answer.lastModifiedMs === null ? null : new Date(answer.lastModifiedMs).toISOString();
    return { checkpoint: verifyCheckpoint(answer.body, verifierKey), signedAt };
  }

  /** GET /v1/log/proofs/consistency, as the service sends it (base64 hashes). */
  async consistencyProof(from: number, to: number): Promise<string[]> {
    const body = await this.transport.request<{ proof: string[] }>({
      method: "GET",
      path: "/v1/log/proofs/consistency",
      query: { from: String(from), to: String(to) },
      idempotent: true,
    });
    return body.proof;
  }

  /** Proves `newer` extends `older` (both verified checkpoints); LogVerificationError when it does not. */
  async verifyConsistency(older: Checkpoint, newer: Checkpoint): Promise<void> {
    if (older.origin !== newer.origin || newer.size < older.size) return verifyCheckpointConsistency(older, newer, []);
    const proof = older.size === 0 || older.size === newer.size ? [] : await this.consistencyProof(older.size, newer.size);
    verifyCheckpointConsistency(older, newer, proof);
  }

  /**
   * Proves an event you hold (its Event JSON, e.g. a webhook's body) is in the log at `checkpoint`
   * (verified with your pinned key): its leaf is recomputed here. Returns its log index. Throws
   * PointsApiError NOT_YET_LOGGED when it is not in that checkpoint yet.
   */
  async verifyEvent(event: LedgerEvent | { id: string }, checkpoint: Checkpoint): Promise<number> {
    const proof = await this.proofSource(event.id, checkpoint.size);
    if (proof.eventId !== event.id) throw new LogVerificationError(`asked the proof of ${event.id}, got ${proof.eventId}`);
    return verifyEventInclusion(event, proof, checkpoint);
  }
}
