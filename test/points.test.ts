import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { AddressKey } from "../src/domain/address.js";
import type { PointType } from "../src/domain/batch.js";
import { ApiError, type FieldError } from "../src/domain/errors.js";
import { MAX_POINTS_UNITS, UNITS_PER_POINT, formatPoints, parsePoints } from "../src/domain/points.js";
import { toNewBatch, type BatchRules } from "../src/domain/validate.js";

/*
 * Everything here is checked against oracles written with plain string arithmetic, so a bug in
 * points.ts cannot hide behind the same bigint reasoning in the test.
 */

const DIGITS = "0123456789";
const MAX_WHOLE = "1000000000000000000";

/** Units biased toward the edges (0, 1 unit, whole points, the maximum) as well as anywhere in range. */
const unitsInRange = fc.oneof(
  fc.bigInt({ min: 0n, max: MAX_POINTS_UNITS }),
  fc.constantFrom(0n, 1n, UNITS_PER_POINT - 1n, UNITS_PER_POINT, UNITS_PER_POINT + 1n, MAX_POINTS_UNITS - 1n, MAX_POINTS_UNITS),
  fc.bigInt({ min: 0n, max: 10n ** 18n }).map((whole) => whole * UNITS_PER_POINT),
);

const digitString = (minLength: number, maxLength: number) => fc.string({ unit: fc.constantFrom(...DIGITS), minLength, maxLength });

/** A whole part in the accepted form: "0" or 1..18 digits without a leading zero (always < 10^18). */
const wholeText = fc.oneof(
  fc.constant("0"),
  fc.tuple(fc.constantFrom(..."123456789"), digitString(0, 17)).map(([first, rest]) => first + rest),
);

/** Any string the API accepts as points (below 10^18, so never over the limit). */
const validPointsText = fc
  .tuple(wholeText, fc.option(digitString(1, 12), { nil: undefined }))
  .map(([whole, fraction]) => (fraction === undefined ? whole : `${whole}.${fraction}`));

/** Sums two non-negative decimal strings digit by digit: the independent oracle for exact sums. */
function addDecimalStrings(a: string, b: string): string {
  const [aWhole, aFraction = ""] = a.split(".");
  const [bWhole, bFraction = ""] = b.split(".");
  const fractionLength = Math.max(aFraction.length, bFraction.length);
  const wholeLength = Math.max(aWhole!.length, bWhole!.length);
  const left = aWhole!.padStart(wholeLength, "0") + aFraction.padEnd(fractionLength, "0");
  const right = bWhole!.padStart(wholeLength, "0") + bFraction.padEnd(fractionLength, "0");
  let carry = 0;
  let digits = "";
  for (let i = left.length - 1; i >= 0; i--) {
    const sum = Number(left[i]) + Number(right[i]) + carry;
    digits = String(sum % 10) + digits;
    carry = sum >= 10 ? 1 : 0;
  }
  if (carry) digits = "1" + digits;
  const whole = digits.slice(0, digits.length - fractionLength).replace(/^0+(?=\d)/, "");
  const fraction = digits.slice(digits.length - fractionLength).replace(/0+$/, "");
  return fraction === "" ? whole : `${whole}.${fraction}`;
}

/** The accepted form, spelled out character by character (an oracle independent of POINTS_PATTERN). */
function isAcceptedPointsText(text: string): boolean {
  const parts = text.split(".");
  if (parts.length > 2) return false;
  const [whole = "", fraction] = parts;
  const allDigits = (s: string) => s.length > 0 && [...s].every((c) => DIGITS.includes(c));
  if (!allDigits(whole) || (whole.length > 1 && whole[0] === "0")) return false;
  if (fraction !== undefined && (!allDigits(fraction) || fraction.length > 12)) return false;
  if (whole.length < MAX_WHOLE.length) return true;
  return whole === MAX_WHOLE && [...(fraction ?? "")].every((c) => c === "0");
}

describe("formatPoints and parsePoints", () => {
  it("parse(format(units)) is units for every amount from 0 to 10^18 points", () => {
    fc.assert(
      fc.property(unitsInRange, (units) => {
        expect(parsePoints(formatPoints(units))).toBe(units);
      }),
      { numRuns: 2000 },
    );
  });

  it("format prints no trailing fractional zeros and no leading zeros", () => {
    fc.assert(
      fc.property(unitsInRange, (units) => {
        expect(formatPoints(units)).toMatch(/^(0|[1-9][0-9]*)(\.[0-9]*[1-9])?$/);
      }),
      { numRuns: 2000 },
    );
  });

  it("formats known amounts exactly", () => {
    expect(formatPoints(0n)).toBe("0");
    expect(formatPoints(1n)).toBe("0.000000000001");
    expect(formatPoints(1_500_000_000_000n)).toBe("1.5");
    expect(formatPoints(2n * UNITS_PER_POINT)).toBe("2");
    expect(formatPoints(MAX_POINTS_UNITS)).toBe(MAX_WHOLE);
    expect(formatPoints(MAX_POINTS_UNITS - 1n)).toBe("999999999999999999.999999999999");
    expect(() => formatPoints(-1n)).toThrow(RangeError);
  });

  it("format(parse(text)) is text with its trailing fractional zeros removed", () => {
    fc.assert(
      fc.property(validPointsText, (text) => {
        const canonical = text.includes(".") ? text.replace(/0+$/, "").replace(/\.$/, "") : text;
        expect(formatPoints(parsePoints(text)!)).toBe(canonical);
      }),
      { numRuns: 2000 },
    );
  });

  it("parse(a) + parse(b) equals parse of the decimal sum computed digit by digit", () => {
    fc.assert(
      fc.property(validPointsText, validPointsText, (a, b) => {
        const sumText = addDecimalStrings(a, b);
        const sum = parsePoints(a)! + parsePoints(b)!;
        const parsedSum = parsePoints(sumText);
        // A sum past 10^18 points is refused by parse; then the bigint sum must be past it too.
        if (parsedSum === null) expect(sum > MAX_POINTS_UNITS).toBe(true);
        else expect(sum).toBe(parsedSum);
      }),
      { numRuns: 2000 },
    );
  });

  it("sums of many small amounts stay exact where floats would drift", () => {
    const tenth = parsePoints("0.1")!;
    let total = 0n;
    for (let i = 0; i < 10; i++) total += tenth;
    expect(total).toBe(parsePoints("1"));
    expect(parsePoints("0.1")! + parsePoints("0.2")!).toBe(parsePoints("0.3"));
  });

  it("accepts a string exactly when the hand-written grammar does", () => {
    const alphabet = fc.constantFrom(..."0123456789", ".", "+", "-", "e", " ", "１", "٣");
    const arbitraryText = fc.oneof(
      fc.string({ unit: alphabet, maxLength: 34 }),
      validPointsText,
      fc.constantFrom(MAX_WHOLE, `${MAX_WHOLE}.0`, `${MAX_WHOLE}.000000000000`, `${MAX_WHOLE}.000000000001`),
    );
    fc.assert(
      fc.property(arbitraryText, (text) => {
        expect(parsePoints(text) !== null).toBe(isAcceptedPointsText(text));
      }),
      { numRuns: 5000 },
    );
  });

  const malformed: [string, string[]][] = [
    ["signs", ["+1", "-1", "-0", "+0.5", "−1"]],
    ["exponents", ["1e5", "1E5", "1.5e-3", "1e0", "1e+2"]],
    ["spaces", [" 1", "1 ", "1 .5", "1. 5", "\t1", "1\n", "1\u00a0"]],
    ["leading zeros", ["00", "01", "00.5", "007", "000.000"]],
    ["an empty fraction", ["1.", "0.", "."]],
    ["a leading dot", [".5", ".000000000001"]],
    ["13 decimals", ["0.0000000000001", "1.1234567890123"]],
    ["more than 10^18 points", ["1000000000000000000.000000000001", "1000000000000000001", "10000000000000000000", "9999999999999999999"]],
    ["unicode digits", ["١", "１", "𝟏", "1١", "٠.5", "1.５"]],
    ["hex, binary, octal and other notations", ["0x10", "0X1", "0b1", "0o7", "1_000", "1,5", "Infinity", "NaN", "1..2", "1.2.3"]],
    ["the empty string", [""]],
  ];
  for (const [label, texts] of malformed) {
    it(`rejects ${label}`, () => {
      for (const text of texts) expect(parsePoints(text), JSON.stringify(text)).toBeNull();
    });
  }

  it("rejects non-strings", () => {
    for (const value of [1, 0, 1n, 1.5, null, undefined, {}, [], ["1"], true, new String("1")]) {
      expect(parsePoints(value as unknown as string), String(value)).toBeNull();
    }
  });

  it("rejects every valid amount once a sign, space, exponent, leading zero or unicode digit is added", () => {
    const mutation = fc.oneof(
      fc.constantFrom("+", "-", " ").map((prefix) => (text: string) => prefix + text),
      fc.constantFrom(" ", "e1", "E0", "e-3", ".", "x").map((suffix) => (text: string) => text + suffix),
      fc.constant((text: string) => `0${text}`),
      fc.constant((text: string) => `${text.split(".")[0]}.`),
      fc.constantFrom("١", "１", "𝟏", "٣").map((digit) => (text: string) => text.replace(/[0-9]/, digit)),
      fc.constant((text: string) =>
        text.includes(".") ? `${text}0000000000000`.slice(0, text.indexOf(".") + 14) : `${text}.0000000000001`,
      ),
    );
    fc.assert(
      fc.property(validPointsText, mutation, (text, mutate) => {
        expect(parsePoints(mutate(text)), mutate(text)).toBeNull();
      }),
      { numRuns: 3000 },
    );
  });
});

describe("toNewBatch minimum transfer sizes", () => {
  const contract = "0x1111111111111111111111111111111111111111" as AddressKey;
  const rules: BatchRules = {
    minimumTransferUnits: { PHASE2_POINTS: parsePoints("0.01")!, PHASE2_GOLD: parsePoints("0.000001")! },
    defaultFinalizeSeconds: 86_400,
    maxTransfersPerBatch: 2000,
  };
  const recipient = (i: number) => `0x${(i + 1).toString(16).padStart(40, "0")}`;

  function fieldErrors(pointType: PointType, points: string[]): FieldError[] {
    const body = { pointType, transfers: points.map((p, i) => ({ toAddress: recipient(i), points: p })) };
    try {
      toNewBatch(contract, "batch-1", body, rules, 0);
      return [];
    } catch (error) {
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).code).toBe("VALIDATION_FAILED");
      return (error as ApiError).details as FieldError[];
    }
  }

  it("accepts an amount exactly when it is at least the point type's minimum", () => {
    const pointTypes = fc.constantFrom<PointType>("PHASE2_POINTS", "PHASE2_GOLD");
    fc.assert(
      fc.property(pointTypes, fc.bigInt({ min: -3n, max: 3n }), fc.bigInt({ min: 0n, max: MAX_POINTS_UNITS }), (pointType, offset, far) => {
        const minimum = rules.minimumTransferUnits[pointType]!;
        // Amounts right around the minimum, and anywhere in range.
        for (const units of [minimum + offset, far]) {
          if (units < 0n) continue;
          const errors = fieldErrors(pointType, [formatPoints(units)]);
          if (units >= minimum) expect(errors).toEqual([]);
          else {
            expect(errors).toEqual([
              { path: "transfers[0].points", message: `is below the minimum transfer size ${formatPoints(minimum)}` },
            ]);
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it("uses the minimum of the batch's own point type", () => {
    // 0.00001 is above the gold minimum and below the points minimum.
    expect(fieldErrors("PHASE2_GOLD", ["0.00001"])).toEqual([]);
    expect(fieldErrors("PHASE2_POINTS", ["0.00001"]).map((e) => e.path)).toEqual(["transfers[0].points"]);
    expect(fieldErrors("PHASE2_POINTS", ["0.01", "0"]).map((e) => e.path)).toEqual(["transfers[1].points"]);
  });

  it("lists every transfer below the minimum, not just the first", () => {
    const errors = fieldErrors("PHASE2_POINTS", ["0.009999999999", "5", "0", "0.01", "0.001"]);
    expect(errors.map((e) => e.path)).toEqual(["transfers[0].points", "transfers[2].points", "transfers[4].points"]);
  });

  it("totals the accepted transfers exactly", () => {
    fc.assert(
      fc.property(
        fc.array(fc.bigInt({ min: parsePoints("0.01")!, max: 10n ** 17n * UNITS_PER_POINT }), { minLength: 1, maxLength: 8 }),
        (amounts) => {
          const body = {
            pointType: "PHASE2_POINTS" as const,
            transfers: amounts.map((units, i) => ({ toAddress: recipient(i), points: formatPoints(units) })),
          };
          const batch = toNewBatch(contract, "batch-1", body, rules, 1000);
          expect(batch.transfers.map((t) => t.amount)).toEqual(amounts);
          expect(batch.total).toBe(amounts.reduce((sum, units) => sum + units, 0n));
          expect(batch.secondsToFinalize).toBe(86_400);
        },
      ),
      { numRuns: 300 },
    );
  });
});
