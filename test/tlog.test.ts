import { sha256 as nobleSha256 } from "@noble/hashes/sha2";
import { describe, expect, it } from "vitest";
import { canonicalEvent, eventLeafHash } from "../src/domain/log-event.js";
import {
  appendToTiles,
  consistencyProof,
  edgeTiles,
  inclusionProof,
  innerNodes,
  leafHash,
  nodeHash,
  nodeHashesFromTiles,
  nodesNeeded,
  tilesOf,
  treeHash,
  verifyConsistency,
  verifyInclusion,
  type Hash,
  type NodeHashes,
  type StoredTile,
  type Tile,
  TILE_WIDTH,
} from "../src/domain/tlog.js";
import {
  checkpointText,
  formatSignerKey,
  generateSignerKey,
  NoteError,
  openNote,
  parseCheckpoint,
  parseSignerKey,
  parseVerifierKey,
  signNote,
  verifierKey,
} from "../src/domain/signed-note.js";
import { refConsistency, refInclusion, refLeaf, refRoot, refVerifyConsistency, refVerifyInclusion } from "./helpers/rfc9162.js";

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const unhex = (text: string) => new Uint8Array(Buffer.from(text, "hex"));

// RFC 6962's reference leaves and tree heads (Certificate Transparency's test data, as carried by
// transparency-dev/merkle and golang.org/x/mod/sumdb/tlog), used as data.
const RFC_LEAVES = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"].map(unhex);
const RFC_ROOTS = [
  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
  "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
  "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
  "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
  "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
  "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
  "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
  "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];
const RFC_INCLUSION = [
  {
    index: 0,
    size: 8,
    proof: [
      "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
  },
  {
    index: 5,
    size: 8,
    proof: [
      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
  },
];
const RFC_CONSISTENCY = [
  {
    from: 2,
    to: 8,
    proof: [
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
  },
  {
    from: 6,
    to: 8,
    proof: [
      "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
  },
  {
    from: 2,
    to: 5,
    proof: [
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    ],
  },
];

/** A NodeHashes over an array of leaf hashes (complete subtrees computed by the reference). */
const arrayNodes =
  (leaves: readonly Hash[]): NodeHashes =>
  (level, index) =>
    refRoot(leaves.slice(index * 2 ** level, (index + 1) * 2 ** level));

/** Tiles grown by appendToTiles in uneven steps, as the logging job grows them. */
function grownTiles(leaves: readonly Hash[], steps: readonly number[]): Map<string, Tile> {
  const stored = new Map<string, Tile>();
  let size = 0;
  let next = 0;
  while (size < leaves.length) {
    const count = Math.min(steps[next++ % steps.length]!, leaves.length - size);
    const edge: Tile[] = edgeTiles(size).map((key) => stored.get(`${key.level}/${key.index}`)!);
    for (const tile of appendToTiles(size, edge, leaves.slice(size, size + count))) stored.set(`${tile.level}/${tile.index}`, tile);
    size += count;
  }
  return stored;
}

describe("RFC 9162 Merkle tree (domain/tlog.ts)", () => {
  const leaves = RFC_LEAVES.map(leafHash);

  it("matches RFC 6962's reference tree heads for every size 0..8", () => {
    for (let size = 0; size <= 8; size++) expect(hex(treeHash(size, arrayNodes(leaves)))).toBe(RFC_ROOTS[size]);
  });

  it("gives RFC 6962's reference inclusion and consistency proofs, and verifies them", () => {
    const node = arrayNodes(leaves);
    for (const { index, size, proof } of RFC_INCLUSION) {
      expect(inclusionProof(index, size, node).map(hex)).toEqual(proof);
      expect(verifyInclusion(index, size, leaves[index]!, proof.map(unhex), unhex(RFC_ROOTS[size]!))).toBe(true);
    }
    for (const { from, to, proof } of RFC_CONSISTENCY) {
      expect(consistencyProof(from, to, node).map(hex)).toEqual(proof);
      expect(verifyConsistency(from, to, unhex(RFC_ROOTS[from]!), unhex(RFC_ROOTS[to]!), proof.map(unhex))).toBe(true);
    }
  });

  const many = Array.from({ length: 70 }, (_, i) => refLeaf(Uint8Array.of(i, i * 7)));

  it("agrees with the independent reference on every proof of every tree up to 70 leaves, both verifiers accepting them", () => {
    const node = arrayNodes(many);
    for (let size = 1; size <= many.length; size++) {
      const tree = many.slice(0, size);
      const root = refRoot(tree);
      expect(hex(treeHash(size, node))).toBe(hex(root));
      for (let index = 0; index < size; index++) {
        const proof = inclusionProof(index, size, node);
        expect(proof.map(hex)).toEqual(refInclusion(index, tree).map(hex));
        expect(verifyInclusion(index, size, tree[index]!, proof, root)).toBe(true);
        expect(refVerifyInclusion(index, size, tree[index]!, proof, root)).toBe(true);
      }
      for (let from = 0; from <= size; from++) {
        const proof = consistencyProof(from, size, node);
        expect(proof.map(hex)).toEqual(refConsistency(from, tree).map(hex));
        const fromRoot = refRoot(tree.slice(0, from));
        expect(verifyConsistency(from, size, fromRoot, root, proof)).toBe(true);
        expect(refVerifyConsistency(from, size, fromRoot, root, proof)).toBe(true);
      }
    }
  });

  it("refuses a proof for another leaf, index, size or root, and a changed or shortened proof", () => {
    const node = arrayNodes(many);
    for (const [index, size] of [
      [0, 1],
      [3, 7],
      [12, 13],
      [31, 64],
      [40, 70],
    ] as const) {
      const root = treeHash(size, node);
      const proof = inclusionProof(index, size, node);
      expect(verifyInclusion(index, size, many[index]!, proof, root)).toBe(true);
      expect(verifyInclusion(index, size, many[index + 1]!, proof, root)).toBe(false);
      if (index + 1 < size) expect(verifyInclusion(index + 1, size, many[index]!, proof, root)).toBe(false);
      expect(verifyInclusion(index, size, many[index]!, proof, treeHash(size - 1 || 2, node))).toBe(false);
      if (proof.length > 0) {
        expect(verifyInclusion(index, size, many[index]!, proof.slice(1), root)).toBe(false);
        const changed = proof.map((hash, i) => (i === proof.length - 1 ? refLeaf(hash) : hash));
        expect(verifyInclusion(index, size, many[index]!, changed, root)).toBe(false);
      }
    }
    for (const [from, to] of [
      [1, 2],
      [3, 7],
      [8, 13],
      [13, 70],
    ] as const) {
      const proof = consistencyProof(from, to, node);
      const [fromRoot, toRoot] = [treeHash(from, node), treeHash(to, node)];
      expect(verifyConsistency(from, to, fromRoot, toRoot, proof)).toBe(true);
      expect(verifyConsistency(from, to, toRoot, fromRoot, proof)).toBe(false);
      expect(verifyConsistency(from, to, fromRoot, toRoot, proof.slice(1))).toBe(false);
      // A fork: the same size with another leaf in it is not an extension.
      const forked = [...many.slice(0, to)];
      forked[from - 1] = refLeaf(Uint8Array.of(255));
      expect(verifyConsistency(from, to, fromRoot, refRoot(forked), proof)).toBe(false);
    }
  });
});

describe("the tree in tiles", () => {
  const leaves = Array.from({ length: 70_000 }, (_, i) => refLeaf(Uint8Array.of(i & 255, (i >> 8) & 255, i >> 16)));

  /** Every root, inclusion and consistency proof the tiles give at these sizes, checked by the independent verifier. */
  function expectProofsAsTheFullTree(tiles: ReadonlyMap<string, StoredTile>) {
    const fromTiles = nodeHashesFromTiles(tiles);
    const sizes = [1, 255, 256, 257, 4097, 65_535, 65_536, 65_537, 70_000];
    const roots = new Map(sizes.map((size) => [size, refRoot(leaves.slice(0, size))]));
    for (const size of sizes) {
      const root = roots.get(size)!;
      expect(hex(treeHash(size, fromTiles))).toBe(hex(root));
      for (const index of [0, size - 1, Math.floor(size / 3)]) {
        const proof = inclusionProof(index, size, fromTiles);
        expect(refVerifyInclusion(index, size, leaves[index]!, proof, root)).toBe(true);
      }
      for (const from of sizes.filter((m) => m <= size)) {
        const proof = consistencyProof(from, size, fromTiles);
        expect(refVerifyConsistency(from, size, roots.get(from)!, root, proof)).toBe(true);
      }
    }
  }

  it("tiles grown in uneven steps answer every node the proofs ask, as the full tree does", () => {
    const tiles = grownTiles(leaves, [1, 300, 7, 4096, 255, 12_000, 1]);
    // About 37 bytes a leaf: the leaf hashes, one hash per 256 below, and 30 inner nodes per 256.
    const bytes = [...tiles.values()].reduce((sum, tile) => sum + tile.hashes.length + (tile.nodes?.length ?? 0), 0);
    expect(bytes / leaves.length).toBeLessThan(37);
    expectProofsAsTheFullTree(tiles);
  });

  it("a tile's inner nodes are the roots of its complete subtrees of heights 4 to 7, computed by the reference", () => {
    const tiles = grownTiles(leaves, [1, 300, 7, 4096, 255, 12_000, 1]);
    for (const index of [0, 17, Math.floor(leaves.length / TILE_WIDTH)]) {
      const tile = tiles.get(`0/${index}`)!;
      const bottom = leaves.slice(index * TILE_WIDTH, (index + 1) * TILE_WIDTH);
      const expected: string[] = [];
      for (let height = 4; height < 8; height++) {
        for (let i = 0; (i + 1) * 2 ** height <= bottom.length; i++)
          expected.push(hex(refRoot(bottom.slice(i * 2 ** height, (i + 1) * 2 ** height))));
      }
      const stored = Array.from({ length: tile.nodes!.length / 32 }, (_, i) => hex(tile.nodes!.subarray(i * 32, (i + 1) * 32)));
      expect(stored).toEqual(expected);
    }
  });

  it("tiles stored before the log kept inner nodes (nodes null) give the same proofs, hashed from their bottom row", () => {
    const tiles = grownTiles(leaves, [5000, 1, 256]);
    expectProofsAsTheFullTree(new Map([...tiles].map(([name, tile]) => [name, { ...tile, nodes: null }])));
    // and appending to such a tree writes every changed tile with its inner nodes again
    const size = 70_000;
    const edge = edgeTiles(size).map((key) => ({ ...tiles.get(`${key.level}/${key.index}`)!, nodes: null }));
    const more = leaves.slice(0, 300);
    for (const tile of appendToTiles(size, edge, more)) expect(tile.nodes).toEqual(innerNodes(tile.hashes));
  });

  it("node:crypto (the server) and @noble/hashes (a browser) hash leaves and nodes to the same bytes", () => {
    const left = refLeaf(Uint8Array.of(1));
    const right = refLeaf(Uint8Array.of(2));
    expect(hex(nodeHash(left, right))).toBe(hex(nobleSha256(new Uint8Array([1, ...left, ...right]))));
    const event = new TextEncoder().encode("x".repeat(1000));
    expect(hex(leafHash(event))).toBe(hex(nobleSha256(new Uint8Array([0, ...event]))));
  });

  it("a proof names the few tiles it needs before reading them", () => {
    const nodes = nodesNeeded((node) => inclusionProof(12_345, 70_000, node));
    const tiles = tilesOf(nodes);
    expect(tiles.length).toBeLessThanOrEqual(6);
  });
});

describe("C2SP signed-note and tlog-checkpoint (domain/signed-note.ts)", () => {
  // golang.org/x/mod/sumdb/note's documented example key and note, used as data.
  const SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
  const VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
  const TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
  const NOTE = `${TEXT}\n— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n`;

  it("signs and opens the Go reference implementation's example byte for byte", () => {
    const signer = parseSignerKey(SKEY);
    expect(verifierKey(signer)).toBe(VKEY);
    expect(signNote(TEXT, signer)).toBe(NOTE);
    expect(openNote(NOTE, parseVerifierKey(VKEY))).toBe(TEXT);
    expect(formatSignerKey("PeterNeumann", signer.seed)).toBe(SKEY);
  });

  it("refuses a changed text, another key, and a malformed note", () => {
    const verifier = parseVerifierKey(VKEY);
    expect(() => openNote(NOTE.replace("answer", "Answer"), verifier)).toThrow(NoteError);
    const other = parseSignerKey(generateSignerKey("PeterNeumann"));
    expect(() => openNote(signNote(TEXT, other), verifier)).toThrow(/not signed by/);
    expect(() => openNote(TEXT, verifier)).toThrow(NoteError);
    expect(() => parseVerifierKey(VKEY.replace("c74f20a3", "c74f20a4"))).toThrow(NoteError);
  });

  it("a checkpoint is origin, size and base64 root, and reads back", () => {
    const signer = parseSignerKey(generateSignerKey("ledger.example/points-ledger"));
    const checkpoint = { origin: "ledger.example/points-ledger", size: 8, root: unhex(RFC_ROOTS[8]!) };
    const text = checkpointText(checkpoint);
    expect(text).toBe(`ledger.example/points-ledger\n8\n${Buffer.from(unhex(RFC_ROOTS[8]!)).toString("base64")}\n`);
    const note = signNote(text, signer);
    const opened = parseCheckpoint(openNote(note, parseVerifierKey(verifierKey(signer))));
    expect({ ...opened, root: hex(opened.root) }).toEqual({ ...checkpoint, root: RFC_ROOTS[8] });
  });
});

describe("an event's leaf (domain/log-event.ts)", () => {
  it("is the RFC 8785 form of the Event object less logIndex, whatever its key order", () => {
    const event = {
      id: "evt_1",
      type: "credit.created",
      contractAddress: null,
      occurredAt: "2026-11-28T10:00:00.000Z",
      actor: { type: "admin" },
      data: { points: "1.5", block: 10, asset: null, pointType: "XP", creditId: "c-é" },
      logIndex: 4,
    };
    expect(canonicalEvent(event)).toBe(
      '{"actor":{"type":"admin"},"contractAddress":null,"data":{"asset":null,"block":10,"creditId":"c-é","pointType":"XP","points":"1.5"},"id":"evt_1","occurredAt":"2026-11-28T10:00:00.000Z","type":"credit.created"}',
    );
    const reordered = {
      logIndex: null,
      data: event.data,
      type: event.type,
      id: event.id,
      actor: event.actor,
      occurredAt: event.occurredAt,
      contractAddress: null,
    };
    expect(hex(eventLeafHash(reordered))).toBe(hex(eventLeafHash(event)));
    expect(hex(eventLeafHash(event))).toBe(hex(refLeaf(Buffer.from(canonicalEvent(event), "utf8"))));
  });
});
