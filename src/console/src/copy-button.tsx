import { useState } from "preact/hooks";

/**
 * A button that copies `text`, and says so, or says that the browser refused (a page not served
 * over HTTPS or localhost has no clipboard) and that `what` must be selected and copied by hand.
 */
export function CopyButton({ text, label, what }: { text: string; label: string; what: string }) {
  const [copied, setCopied] = useState<string | null>(null);
  const copy = () =>
    navigator.clipboard.writeText(text).then(
      () => setCopied("Copied."),
      () => setCopied(`Copying is not allowed here: select ${what} and copy it by hand.`),
    );
  return (
    <>
      <button type="button" onClick={() => void copy()}>
        {label}
      </button>
      {copied && (
        <span role="status" class="muted">
          {copied}
        </span>
      )}
    </>
  );
}
