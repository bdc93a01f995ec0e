import { useEffect, useState } from "preact/hooks";

export interface ScreenLink {
  path: string;
  title: string;
}

/**
 * The top bar of a console shell: brand, the screens as links, and the session's controls. Below
 * 640 px the links fold into a menu button so the bar fits a phone; picking a screen closes it.
 */
export function Header(props: {
  screens: readonly ScreenLink[];
  route: string;
  subtitle: string;
  /** False when the subtitle is a note (the admin console) rather than the session's contract address. */
  subtitleIsContract?: boolean;
  feedStatus?: string;
  signOutLabel?: string;
  onSignOut: () => void;
}) {
  const [menuOpen, setMenuOpen] = useState(false);
  useEffect(() => setMenuOpen(false), [props.route]);
  const current = props.screens.find((screen) => screen.path === props.route);
  return (
    <header class={`top${menuOpen ? " menu-open" : ""}`} onKeyDown={(e) => e.key === "Escape" && setMenuOpen(false)}>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById("main")?.focus())}>
        Skip to content
      </a>
      <div class="brand">
        <strong>points-ledger</strong>
        <span
          class={props.subtitleIsContract === false ? "contract" : "contract mono"}
          title={props.subtitleIsContract === false ? undefined : "contract"}
          data-testid="session-subtitle"
        >
          {props.subtitle}
        </span>
      </div>
      <button type="button" class="menu-button" aria-expanded={menuOpen} aria-controls="screens-nav" onClick={() => setMenuOpen(!menuOpen)}>
        Menu{current ? `: ${current.title}` : ""}
      </button>
      <nav id="screens-nav" aria-label="Screens">
        {props.screens.map((screen) => (
          <a href={`#/${screen.path}`} aria-current={props.route === screen.path ? "page" : undefined} onClick={() => setMenuOpen(false)}>
            {screen.title}
          </a>
        ))}
      </nav>
      <div class="session">
        {props.feedStatus !== undefined && (
          <span
            class={`dot ${props.feedStatus}`}
            role="img"
            aria-label={`live feed ${props.feedStatus}`}
            title={`live feed ${props.feedStatus}`}
          />
        )}
        <button type="button" onClick={props.onSignOut}>
          {props.signOutLabel ?? "Sign out"}
        </button>
      </div>
    </header>
  );
}
