/**
 * The headers of the pages this service serves to browsers (the console, /docs, the favicon): no
 * other site may frame them (clickjacking: `frame-ancestors 'none'` and, for older browsers,
 * X-Frame-Options), and they may load and call this origin only, so nothing from another host
 * runs or is posted to. A page that needs one inline style names it by hash in `styleHashes`
 * rather than allowing 'unsafe-inline'.
 */
export function pageSecurityHeaders(styleHashes: readonly string[] = []): Readonly<Record<string, string>> {
  const contentSecurityPolicy = [
    "default-src 'none'",
    "script-src 'self'",
    ["style-src 'self'", ...styleHashes].join(" "),
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
  return {
    "content-security-policy": contentSecurityPolicy,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
  };
}
