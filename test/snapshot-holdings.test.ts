import { describe, expect, it } from "vitest";
import { InvariantViolation } from "../src/domain/errors.js";
import { addHoldingsPage, type SnapshotHoldings } from "../src/domain/snapshot.js";

/** What goes into a snapshot, decided once for both adapters (domain/snapshot.ts addHoldingsPage). */

const address = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;
const row = (n: number, units: bigint) => ({ address: address(n), units });
const unitsOf = (r: { units: bigint }) => r.units;
const empty = (): SnapshotHoldings => ({ addresses: [], units: [] });

describe("addHoldingsPage", () => {
  it("keeps the positive amounts in address order and leaves out the zero ones", () => {
    const holdings = empty();
    addHoldingsPage(holdings, "", [row(1, 5n), row(2, 0n), row(3, 7n)], 10, unitsOf);
    expect(holdings).toEqual({ addresses: [address(1), address(3)], units: [5n, 7n] });
  });

  it("asks for the next page after the last row of a full page, even a zero one, and for none after a short page", () => {
    expect(addHoldingsPage(empty(), "", [row(1, 5n), row(2, 0n)], 2, unitsOf)).toBe(address(2));
    expect(addHoldingsPage(empty(), "", [row(1, 5n)], 2, unitsOf)).toBeNull();
    expect(addHoldingsPage(empty(), "", [], 2, unitsOf)).toBeNull();
  });

  it("stops the build on a negative amount instead of publishing a wrong tree", () => {
    expect(() => addHoldingsPage(empty(), "", [row(1, -1n)], 10, unitsOf)).toThrow(InvariantViolation);
  });

  it("stops the build on rows out of address order, repeated, or not after the previous page", () => {
    expect(() => addHoldingsPage(empty(), "", [row(2, 1n), row(1, 1n)], 10, unitsOf)).toThrow(InvariantViolation);
    expect(() => addHoldingsPage(empty(), "", [row(1, 1n), row(1, 1n)], 10, unitsOf)).toThrow(InvariantViolation);
    expect(() => addHoldingsPage(empty(), address(5), [row(5, 1n)], 10, unitsOf)).toThrow(InvariantViolation);
  });
});
