import { shortTime } from "./context.js";

/**
 * A time in a table cell: the day and the time of day each stay whole, but may sit on two lines,
 * so a wide table keeps every column inside a 1280 px window.
 */
export function When({ iso }: { iso: string | null }) {
  const text = shortTime(iso);
  const space = text.indexOf(" ");
  if (space === -1) return <>{text}</>;
  return (
    <span class="when">
      <span>{text.slice(0, space)}</span> <span>{text.slice(space + 1)}</span>
    </span>
  );
}
