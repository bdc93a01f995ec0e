import type { ComponentChildren } from "preact";
import { CopyButton } from "./copy-button.js";

interface SecretOnceProps {
  /** The secret, shown only now (a webhook signing secret, an API key). */
  secret: string;
  /** What the box is, for assistive technology ("Signing secret"). */
  label: string;
  /** The text above the secret: what it is and what to do with it. */
  children: ComponentChildren;
  /** The line before the secret itself, if any. */
  lead?: string;
  /** Test hooks: the box and the secret's element. */
  testId: string;
  valueTestId: string;
  /** Extra classes of the box. */
  class?: string;
  onDismiss(): void;
}

/**
 * A secret the service shows once: the secret, a copy button that says when the browser refuses,
 * and a dismissal after which the page no longer holds it. Used by the webhooks and API keys screens.
 */
export function SecretOnce({ secret, label, children, lead, testId, valueTestId, class: extra, onDismiss }: SecretOnceProps) {
  return (
    <div class={`notice secret-panel${extra ? ` ${extra}` : ""}`} role="region" aria-label={label} data-testid={testId}>
      {children}
      <div class="secret">
        {lead && <span>{lead}</span>}{" "}
        <code class="mono mono-wrap" data-testid={valueTestId}>
          {secret}
        </code>
        <CopyButton text={secret} label="Copy secret" what="the secret" />
        <button type="button" onClick={onDismiss}>
          I have saved it
        </button>
      </div>
    </div>
  );
}
