// The one stylesheet of the web pages, inlined in each page's <head> (the pages load nothing else). It is written as
// an html template so it goes into the page as written. Light and dark colours were picked for WCAG AA contrast on
// their backgrounds; test/web/pages.test.ts measures them in Chromium.
import { html } from './html.ts';

const light = html`
  --bg: #f4f5f7; --surface: #ffffff; --text: #1a1d21; --muted: #50596a; --border: #d5dae1;
  --input-border: #8a93a3; --input-bg: #ffffff; --hover: #eef1f5; --link: #1d4ed8;
  --accent: #1d4ed8; --accent-hover: #1e40af; --on-accent: #ffffff; --focus: #1d4ed8;
  --danger: #b42318; --danger-bg: #fef3f2; --danger-border: #f3b4ad;
  --ok: #05603a; --ok-bg: #ecfdf3; --ok-border: #9fdcb9; --code-bg: #eef1f5;`;

const dark = html`
  --bg: #111318; --surface: #1a1d24; --text: #e8eaee; --muted: #a5adbb; --border: #323844;
  --input-border: #6b7484; --input-bg: #111318; --hover: #242934; --link: #9dbcff;
  --accent: #8fb3ff; --accent-hover: #b3cbff; --on-accent: #0b1220; --focus: #9dbcff;
  --danger: #ffb4ab; --danger-bg: #35140f; --danger-border: #7a2e27;
  --ok: #8fe3b0; --ok-bg: #0e2a1b; --ok-border: #1f6b43; --code-bg: #252a35;`;

export const pageStylesheet = html`
*, *::before, *::after { box-sizing: border-box; }
:root {
  color-scheme: light dark;${light}
  --page: 30rem;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans", sans-serif;
  font-size: 100%; line-height: 1.5; color: var(--text); background: var(--bg);
  -webkit-text-size-adjust: 100%; text-size-adjust: 100%;
}
@media (prefers-color-scheme: dark) { :root {${dark} } }
body { margin: 0; min-height: 100vh; display: flex; flex-direction: column; }
code { font-family: ui-monospace, "SF Mono", Menlo, Consolas, "Liberation Mono", monospace; font-size: 0.875em;
  background: var(--code-bg); padding: 0.0625rem 0.3125rem; border-radius: 0.25rem; overflow-wrap: anywhere; }
a { color: var(--link); text-underline-offset: 0.15em; }
a:hover { text-decoration-thickness: 2px; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.visually-hidden { position: absolute !important; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden;
  clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
.skip { position: absolute; left: 0.5rem; top: -4rem; padding: 0.5rem 1rem; background: var(--surface);
  color: var(--link); border-radius: 0.5rem; z-index: 1; }
.skip:focus { top: 0.5rem; }

.site-header { background: var(--surface); border-bottom: 1px solid var(--border); }
.site-footer { border-top: 1px solid var(--border); color: var(--muted); font-size: 0.875rem; }
.bar { max-width: var(--page); margin: 0 auto; padding: 0.75rem 1rem; display: flex; flex-wrap: wrap;
  align-items: center; gap: 0.5rem 1rem; }
.site-footer .bar { padding: 1.25rem 1rem; }
.site-footer p { margin: 0; }
.brand { margin-right: auto; font-weight: 700; font-size: 1.25rem; letter-spacing: 0.01em; color: var(--text);
  text-decoration: none; }
.who { margin: 0; min-width: 0; color: var(--muted); font-size: 0.9375rem; overflow-wrap: anywhere; }
.who strong { color: var(--text); font-weight: 600; }
@media (max-width: 40rem) { .who { order: 1; flex-basis: 100%; } }

body.wide { --page: 46rem; }
main { flex: 1; width: 100%; max-width: var(--page); margin: 0 auto; padding: 2.5rem 1rem 3rem; }
h1 { font-size: 1.75rem; line-height: 1.25; margin: 0 0 0.75rem; overflow-wrap: anywhere; }
h2 { font-size: 1.25rem; line-height: 1.3; margin: 0 0 0.5rem; }
h3 { font-size: 1.0625rem; line-height: 1.35; margin: 0; overflow-wrap: anywhere; }
p { margin: 0 0 1rem; }
.lead { color: var(--muted); font-size: 1.0625rem; }
.muted { color: var(--muted); }
.card { background: var(--surface); border: 1px solid var(--border); border-radius: 0.75rem; padding: 1.5rem; }
.card > :last-child { margin-bottom: 0; }
.after { margin: 1.5rem 0 0; text-align: center; color: var(--muted); }

form { margin: 0; }
/* Hidden inputs lead every form: they take no room, so the first field after them gets no space above it. */
.stack > :not([type="hidden"]) + :not([type="hidden"]) { margin-top: 1.25rem; }
.field label { display: block; font-weight: 600; margin-bottom: 0.25rem; }
.hint { display: block; color: var(--muted); font-size: 0.9375rem; margin: 0 0 0.375rem; }
input[type="email"], input[type="password"], input[type="text"], input[type="number"], input[type="url"] {
  display: block; width: 100%; min-height: 2.75rem; padding: 0.5rem 0.75rem; font: inherit; font-size: 1rem;
  color: var(--text); background: var(--input-bg); border: 1px solid var(--input-border); border-radius: 0.5rem; }
input:focus-visible { outline-offset: 1px; border-color: var(--focus); }
input.short { max-width: 14rem; }
input.user-code { max-width: 16rem; font-family: ui-monospace, "SF Mono", Menlo, Consolas, monospace;
  font-size: 1.5rem; letter-spacing: 0.12em; text-transform: uppercase; }
.check { display: flex; gap: 0.75rem; align-items: flex-start; }
.check input { flex: none; width: 1.5rem; height: 1.5rem; margin: 0; accent-color: var(--accent); }
.check label { font-weight: 400; margin: 0; }
fieldset { margin: 0; padding: 0.75rem 1rem 1rem; border: 1px solid var(--border); border-radius: 0.5rem; min-width: 0; }
legend { font-weight: 600; padding: 0 0.25rem; }
.checks { display: grid; grid-template-columns: repeat(auto-fill, minmax(14rem, 1fr)); gap: 0.5rem 1rem; }
.start ol { margin: 0; padding-left: 1.25rem; }
.start li + li { margin-top: 0.5rem; }

.button { display: inline-flex; align-items: center; justify-content: center; min-height: 2.75rem;
  padding: 0.5rem 1.25rem; font: inherit; font-weight: 600; line-height: 1.25; text-align: center;
  border: 1px solid transparent; border-radius: 0.5rem; cursor: pointer; text-decoration: none; }
.button.small { min-height: 2.5rem; padding: 0.25rem 0.875rem; font-size: 0.9375rem; }
.primary { background: var(--accent); color: var(--on-accent); }
.primary:hover { background: var(--accent-hover); }
.secondary { background: var(--surface); color: var(--text); border-color: var(--input-border); }
.secondary:hover { background: var(--hover); }
.danger { background: var(--surface); color: var(--danger); border-color: var(--danger-border); }
.danger:hover { background: var(--danger-bg); }
.full { width: 100%; }
.actions { display: flex; flex-wrap: wrap; gap: 0.75rem; }
.actions .button { flex: 1 1 10rem; }
.actions.start { margin: 0 0 1rem; }
.actions.start .button { flex: 0 1 auto; }
pre.command { margin: 0 0 1rem; padding: 0.75rem 1rem; background: var(--code-bg); border-radius: 0.5rem;
  overflow-x: auto; }
pre.command code { background: none; padding: 0; font-size: 0.9375rem; white-space: pre-wrap; overflow-wrap: anywhere; }
.badge.test { color: var(--danger); border-color: var(--danger-border); background: var(--danger-bg); font-weight: 600; }
section.test-mode { border: 2px dashed var(--danger-border); border-radius: 0.75rem; padding: 1rem 1.25rem; }

.alert { border: 1px solid; border-radius: 0.5rem; padding: 0.75rem 1rem; margin: 0 0 1.25rem; }
.alert p { margin: 0; }
.alert.error { color: var(--danger); background: var(--danger-bg); border-color: var(--danger-border); }
.alert.notice { color: var(--ok); background: var(--ok-bg); border-color: var(--ok-border); }

dl.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 0.375rem 1rem; margin: 0 0 1rem; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
dl.facts ul { margin: 0; padding: 0; list-style: none; }
@media (max-width: 32rem) {
  dl.facts { grid-template-columns: minmax(0, 1fr); gap: 0; }
  dl.facts dd { margin-bottom: 0.625rem; }
}
.scopes { margin: 0 0 1rem; padding-left: 1.25rem; }
.scopes li + li { margin-top: 0.375rem; }
.scopes code { margin-left: 0.25rem; }
.user-code-shown { display: inline-block; font-family: ui-monospace, "SF Mono", Menlo, Consolas, monospace;
  font-size: 1.75rem; font-weight: 700; letter-spacing: 0.12em; padding: 0.25rem 0.75rem;
  background: var(--code-bg); border-radius: 0.5rem; margin: 0 0 1rem; }

nav.toc ul { display: flex; flex-wrap: wrap; gap: 0.25rem 1.25rem; margin: 0 0 2rem; padding: 0; list-style: none; }
section.part { margin-top: 2.5rem; }
section.part > p { max-width: 40rem; }
.items { list-style: none; margin: 0 0 1rem; padding: 0; display: grid; gap: 1rem; }
.item { background: var(--surface); border: 1px solid var(--border); border-radius: 0.75rem; padding: 1rem 1.25rem; }
.item-head { display: flex; flex-wrap: wrap; align-items: flex-start; justify-content: space-between;
  gap: 0.5rem 1rem; margin-bottom: 0.75rem; }
.item-head > :first-child { flex: 1 1 12rem; min-width: 0; }
.item > :last-child { margin-bottom: 0; }
.tokens { list-style: none; margin: 0; padding: 0; }
.tokens li { display: flex; flex-wrap: wrap; align-items: center; justify-content: space-between; gap: 0.5rem 1rem;
  padding: 0.5rem 0; border-top: 1px solid var(--border); }
.tokens li > span { min-width: 0; overflow-wrap: anywhere; }
.badge { display: inline-block; margin-left: 0.375rem; padding: 0 0.5rem; font-size: 0.8125rem;
  border: 1px solid var(--border); border-radius: 999px; color: var(--muted); }
.empty { color: var(--muted); font-style: italic; }
.secret { display: block; margin: 0 0 0.75rem; padding: 0.75rem; font-size: 0.9375rem; user-select: all; }
.panel { border: 2px solid var(--accent); border-radius: 0.75rem; padding: 1rem 1.25rem; margin: 0 0 1.5rem;
  background: var(--surface); }
.panel h2 { margin-bottom: 0.5rem; }
.panel > :last-child { margin-bottom: 0; }
/* Positioned, so the visually hidden labels of its buttons scroll with it instead of widening the page. */
.table-wrap { position: relative; overflow-x: auto; margin: 0 0 1rem; }
table { width: 100%; border-collapse: collapse; background: var(--surface); border: 1px solid var(--border); }
caption { text-align: left; font-weight: 600; padding: 0 0 0.5rem; }
th, td { text-align: left; vertical-align: middle; padding: 0.5rem 0.75rem; border-top: 1px solid var(--border); }
thead th { color: var(--muted); font-weight: 600; font-size: 0.9375rem; border-top: 0; white-space: nowrap; }
tbody th { font-weight: 600; overflow-wrap: break-word; }
td code, td .button { white-space: nowrap; }
td:last-child { text-align: right; }
`;
