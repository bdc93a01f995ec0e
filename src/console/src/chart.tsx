import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { UNITS_PER_POINT } from "../../domain/points.js";
import { displayPoints, unitsOf } from "./lib/amounts.js";
import type { DayTotal } from "./lib/daily.js";

const CHART_HEIGHT_PX = 220;
const HALF_DAY_S = 43_200;
const FINALIZED_COLOUR = "#1b7f3b";
const PENDING_COLOUR = "#c98a00";

/**
 * The one place a points amount becomes a JavaScript number: a bar's height on the screen. The
 * bigint units are divided exactly into whole points and a remainder first, and only that result
 * turns into a float, at the last step, for a pixel position. Every amount a person reads (the
 * readout under the chart, the day table) is formatted from the exact points string instead.
 */
function plotHeight(points: string): number {
  const units = unitsOf(points);
  return Number(units / UNITS_PER_POINT) + Number(units % UNITS_PER_POINT) / Number(UNITS_PER_POINT);
}

/** Axis ticks are positions on the scale, not amounts of any batch: a short form is enough ("1.5k"). */
const tickFormat = new Intl.NumberFormat("en", { notation: "compact", maximumFractionDigits: 2 });

/** Points per day as bars (finalized and pending side by side), with the exact totals in a table beside it. */
export function DailyChart({ pointType, days }: { pointType: string; days: DayTotal[] }) {
  const box = useRef<HTMLDivElement>(null);
  const [selected, setSelected] = useState<number>(days.length - 1);
  useEffect(() => {
    const element = box.current;
    if (element === null) return;
    const x = days.map((d) => Date.parse(`${d.day}T00:00:00.000Z`) / 1000);
    const bars = (align: -1 | 1) => uPlot.paths.bars!({ size: [0.4, 40], align });
    const chart = new uPlot(
      {
        width: element.clientWidth,
        height: CHART_HEIGHT_PX,
        legend: { show: false },
        cursor: { y: false, points: { show: false } },
        scales: {
          // Half a day either side, so the first and last days' bars are drawn whole.
          x: { time: true, range: (_u, min, max) => [min - HALF_DAY_S, max + HALF_DAY_S] },
          y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] },
        },
        axes: [{}, { values: (_u, ticks) => ticks.map((tick) => tickFormat.format(tick)), size: 56 }],
        series: [
          { value: (_u, v) => (v === null ? "" : utcDayOf(v)) },
          { label: "Finalized", stroke: FINALIZED_COLOUR, fill: FINALIZED_COLOUR, paths: bars(-1), points: { show: false } },
          { label: "Pending", stroke: PENDING_COLOUR, fill: PENDING_COLOUR, paths: bars(1), points: { show: false } },
        ],
        hooks: { setCursor: [(u) => u.cursor.idx != null && setSelected(u.cursor.idx)] },
      },
      [x, days.map((d) => plotHeight(d.finalized)), days.map((d) => plotHeight(d.pending))],
      element,
    );
    const resize = new ResizeObserver(() => chart.setSize({ width: element.clientWidth, height: CHART_HEIGHT_PX }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
    };
  }, [days]);
  const day = days[Math.min(selected, days.length - 1)];
  return (
    <figure class="chart" data-point-type={pointType}>
      <figcaption>
        <strong>{pointType}</strong> per day of submission (UTC): <span class="legend finalized">Finalized</span>{" "}
        <span class="legend pending">Pending</span>
      </figcaption>
      <div ref={box} class="chart-canvas" role="img" aria-label={`${pointType} points per day, last ${days.length} days`} />
      {day && (
        <p class="readout" data-testid="chart-readout">
          <span class="mono">{day.day}</span>: <span class="amount">{displayPoints(day.finalized)}</span> finalized,{" "}
          <span class="amount">{displayPoints(day.pending)}</span> pending
        </p>
      )}
      <details>
        <summary>Exact totals per day</summary>
        <div class="table-wrap">
          <table class="cards-on-phone">
            <thead>
              <tr>
                <th scope="col">Day (UTC)</th>
                <th scope="col" class="num">
                  Finalized
                </th>
                <th scope="col" class="num">
                  Pending
                </th>
              </tr>
            </thead>
            <tbody>
              {days.map((d) => (
                <tr data-day={d.day} data-finalized={d.finalized} data-pending={d.pending}>
                  <td data-label="Day (UTC)" class="mono">
                    {d.day}
                  </td>
                  <td data-label="Finalized" class="num amount">
                    {displayPoints(d.finalized)}
                  </td>
                  <td data-label="Pending" class="num amount">
                    {displayPoints(d.pending)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}

function utcDayOf(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(0, 10);
}
