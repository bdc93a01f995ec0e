import { fromBase64, toBase64 } from "./signed-note.js";

/**
 * The transparency log's epochs (docs/transparency.md, issue 37). A log's history must never be
 * rewritten; a database restored from an older copy would rewrite it (the events after the copy
 * are gone, new ones take their places). So a restored copy starts a new epoch: the same tree
 * continued from what the copy holds, under a new origin (LOG_ORIGIN, then `/epoch-<n>`), announced
 * by a signed note that says which log it follows and where it forked. A witness that saved a
 * checkpoint of the old epoch follows an announcement signed by the key it pinned, and still fails
 * on an unannounced rewrite. A key rotation is an epoch too: its announcement is signed by the old
 * key and names the new one.
 */

export const EPOCH_NOTE_HEADER = "points-ledger log epoch";

export interface EpochAnnouncement {
  /** The new epoch's checkpoint origin. */
  origin: string;
  /** The origin of the log it continues (the previous epoch's). */
  follows: string;
  /** The first `forkSize` events of the previous epoch are this epoch's first; their root. */
  forkSize: number;
  forkRoot: Uint8Array;
  /** The verifier key that signs the new epoch's checkpoints. */
  verifierKey: string;
}

/** The checkpoint origin of `epoch` of the log named `origin`. */
export function epochOrigin(origin: string, epoch: number): string {
  return epoch === 0 ? origin : `${origin}/epoch-${epoch}`;
}

export function epochNoteText(announcement: EpochAnnouncement): string {
  return [
    EPOCH_NOTE_HEADER,
    `origin ${announcement.origin}`,
    `follows ${announcement.follows}`,
    `fork ${announcement.forkSize} ${toBase64(announcement.forkRoot)}`,
    `key ${announcement.verifierKey}`,
    "",
  ].join("\n");
}

/** The announcement in an epoch note's (already opened) text; null when it is not one. */
export function parseEpochNote(text: string): EpochAnnouncement | null {
  const match = /^points-ledger log epoch\norigin (\S+)\nfollows (\S+)\nfork (0|[1-9][0-9]{0,15}) ([A-Za-z0-9+/]{43}=)\nkey (\S+)\n$/.exec(
    text,
  );
  if (match === null) return null;
  return { origin: match[1]!, follows: match[2]!, forkSize: Number(match[3]), forkRoot: fromBase64(match[4]!), verifierKey: match[5]! };
}
