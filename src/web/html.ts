// Atrium's few browser pages (sign-in, consent, signed-out, errors): server-rendered HTML,
// escaped by construction, no scripts and no third-party assets.

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Markup that is already safe; only `html` and `raw` make one. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ESCAPES[ch] as string);
}

/** A template tag: interpolated values are escaped unless they are SafeHtml (or arrays of it). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0] ?? "";
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? "");
  });
  return new SafeHtml(out);
}

function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join("");
  if (value === undefined || value === null || value === false) return "";
  return escapeHtml(String(value));
}

const STYLE = `
body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#1a1a1a;background:#fff}
h1{font-size:1.4rem}main{border:1px solid #ccc;border-radius:8px;padding:1.5rem}
dt{font-weight:600}dd{margin:0 0 .75rem}ul{padding-left:1.2rem}
.actions{display:flex;gap:.75rem;margin-top:1.5rem}
button,.button{font:inherit;padding:.5rem 1.1rem;border-radius:6px;border:1px solid #555;background:#f4f4f4;color:#1a1a1a;cursor:pointer;text-decoration:none}
button.primary{background:#1f4fd1;border-color:#1f4fd1;color:#fff}
button:focus-visible,.button:focus-visible{outline:3px solid #f5a623;outline-offset:2px}
.note{color:#555;font-size:.9rem}
@media (prefers-color-scheme:dark){body{background:#161616;color:#eee}main{border-color:#444}button,.button{background:#2a2a2a;color:#eee}.note{color:#aaa}}
`;

/**
 * A whole page. The headers keep it out of frames (a consent button must not be
 * clickjacked), out of caches and referrers, and forbid any script or remote asset.
 */
export function page(title: string, body: SafeHtml, status = 200): Response {
  const document = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title === "Atrium" ? title : `${title} · Atrium`}</title>
<style>${new SafeHtml(STYLE)}</style>
</head>
<body>
<main>
<h1>${title}</h1>
${body}
</main>
</body>
</html>
`;
  return new Response(document.value, {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy":
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
      "x-frame-options": "DENY",
      "cache-control": "no-store",
      "referrer-policy": "same-origin",
      "x-content-type-options": "nosniff",
    },
  });
}
