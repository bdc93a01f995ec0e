/**
 * CSV exports and formula injection (issue 19, item 10): every cell of every export goes through
 * one writer (src/http/csv.ts) that neutralises a leading `=`, `+`, `-`, `@`, tab or carriage
 * return the way OWASP describes: a `'` inside a quoted cell. Batch ids may start with `-`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { csvCell, csvRow } from "../src/http/csv.js";
import { BALANCES_CSV_HEADER, TRANSFERS_CSV_HEADER } from "../src/http/routes/transfers.js";
import { batchBody, putBatch, randomAddress, setupContract, type TestLedger } from "./helpers/http.js";

/** RFC 4180 cells of one line (quoted cells with doubled quotes), enough to read the exports back. */
function parseCsvLine(line: string): string[] {
  const cells: string[] = [];
  let index = 0;
  while (index <= line.length) {
    if (line[index] === '"') {
      let cell = "";
      index += 1;
      for (;;) {
        const quote = line.indexOf('"', index);
        if (quote === -1) throw new Error(`unterminated quoted cell in ${line}`);
        cell += line.slice(index, quote);
        if (line[quote + 1] === '"') {
          cell += '"';
          index = quote + 2;
        } else {
          index = quote + 1;
          break;
        }
      }
      cells.push(cell);
      index += 1;
    } else {
      const comma = line.indexOf(",", index);
      const end = comma === -1 ? line.length : comma;
      cells.push(line.slice(index, end));
      index = end + 1;
    }
  }
  return cells;
}

describe("csvCell", () => {
  it.each(["=", "+", "-", "@", "\t", "\r"])("neutralises a cell starting with %j: quoted, with a leading '", (start) => {
    const value = `${start}HYPERLINK("http://evil.example","x")`;
    const cell = csvCell(value);
    expect(cell.startsWith(`"'${start}`)).toBe(true);
    expect(parseCsvLine(cell)).toEqual([`'${value}`]);
  });

  it("leaves ordinary cells as they are and quotes commas, quotes and line breaks", () => {
    expect(csvCell("0xAbC")).toBe("0xAbC");
    expect(csvCell("12.5")).toBe("12.5");
    expect(csvCell("")).toBe("");
    expect(csvCell('a,"b"\nc')).toBe('"a,""b""\nc"');
    expect(csvRow(["-1", "x"])).toBe(`"'-1",x\n`);
  });
});

describe("exports neutralise dangerous cells", () => {
  let ledger: TestLedger;
  beforeAll(async () => {
    ledger = await setupContract();
  });
  afterAll(async () => {
    await ledger.close();
  });

  it("transfers.csv writes a batch id starting with - as a quoted cell with a leading '", async () => {
    const recipient = randomAddress();
    const batchIds = ["-2-3.cmd", "--1", "ordinary-id"];
    for (const batchId of batchIds) await putBatch(ledger.send, ledger, batchId, batchBody([{ toAddress: recipient, points: "1" }]));
    const response = await ledger.send({ method: "GET", url: `/v1/contracts/${ledger.contract}/transfers.csv`, token: ledger.token });
    expect(response.status, response.text).toBe(200);
    const lines = response.text.trimEnd().split("\n");
    expect(lines[0]).toBe(TRANSFERS_CSV_HEADER);
    const firstCells = lines.slice(1).map((line) => line.split(",", 1)[0]);
    expect(firstCells.sort()).toEqual([`"'--1"`, `"'-2-3.cmd"`, "ordinary-id"].sort());
    // No line of the export starts with a character a spreadsheet would read as a formula.
    for (const line of lines) expect(line, line).not.toMatch(/^[=+\-@\t\r]/);
    const rows = lines.slice(1).map(parseCsvLine);
    for (const row of rows) expect(row).toHaveLength(TRANSFERS_CSV_HEADER.split(",").length);
    expect(rows.map((row) => row[0]).sort()).toEqual(["'--1", "'-2-3.cmd", "ordinary-id"].sort());
  });

  it("balances.csv goes through the same writer (every row parses back to its header's cells)", async () => {
    const response = await ledger.send({ method: "GET", url: "/v1/admin/balances.csv", token: ledger.adminToken });
    expect(response.status, response.text).toBe(200);
    const lines = response.text.trimEnd().split("\n");
    expect(lines[0]).toBe(BALANCES_CSV_HEADER);
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines.slice(1)) {
      expect(line).not.toMatch(/^[=+\-@\t\r]/);
      expect(parseCsvLine(line)).toHaveLength(BALANCES_CSV_HEADER.split(",").length);
    }
  });
});
