// Markup for the web pages, built only by the `html` tag: every interpolated value is escaped unless it is markup the
// tag built itself, so a page cannot carry text it did not mean as markup.

// Not exported: only this module can build a SafeHtml.
const minted = Symbol('SafeHtml');

/** Markup built by `html`. */
export class SafeHtml {
  readonly #markup: string;

  constructor(token: typeof minted, markup: string) {
    if (token !== minted) throw new TypeError('SafeHtml is built only by the html tag');
    this.#markup = markup;
  }

  /** True for a SafeHtml this module built (the private field cannot be faked with a prototype). */
  static is(value: unknown): value is SafeHtml {
    return typeof value === 'object' && value !== null && #markup in value;
  }

  toString(): string {
    return this.#markup;
  }
}

/**
 * What a template may interpolate. Text and numbers are escaped; SafeHtml goes in as it is; an array is its elements
 * in order; `null`, `undefined` and `false` are nothing (so `${cond && html`...`}` reads naturally).
 */
export type HtmlValue = SafeHtml | string | number | null | undefined | false | readonly HtmlValue[];

const escapes: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text made safe for element content and for quoted attribute values. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => escapes[c]!);
}

/** Where each interpolation of a template sits: in text, inside a quoted attribute value, or bare inside a tag. */
type Slot = 'text' | 'quoted' | 'tag';

// Template strings arrays are the same object at each call site, so each template is read once.
const slotsByTemplate = new WeakMap<TemplateStringsArray, Slot[]>();

/**
 * Reads the static parts of a template as HTML to find each interpolation's slot. Escaping keeps text and quoted
 * values safe, but a value bare inside a tag (`<a ${x}>`, `<a href=${x}>`) could add attributes, so only markup
 * built by `html` (or nothing) may go there; a template that puts text there is a programmer error.
 */
function slotsOf(strings: TemplateStringsArray): Slot[] {
  const cached = slotsByTemplate.get(strings);
  if (cached) return cached;
  const slots: Slot[] = [];
  let state: 'text' | 'tag' | '"' | "'" = 'text';
  for (let i = 0; i < strings.length - 1; i++) {
    for (const c of strings[i]!) {
      if (state === 'text') {
        if (c === '<') state = 'tag';
      } else if (state === 'tag') {
        if (c === '>') state = 'text';
        else if (c === '"' || c === "'") state = c;
      } else if (c === state) {
        state = 'tag';
      }
    }
    slots.push(state === 'text' ? 'text' : state === 'tag' ? 'tag' : 'quoted');
  }
  slotsByTemplate.set(strings, slots);
  return slots;
}

function append(out: string[], value: HtmlValue, slot: Slot): void {
  if (value === null || value === undefined || value === false) return;
  if (SafeHtml.is(value)) {
    out.push(value.toString());
  } else if (Array.isArray(value)) {
    for (const v of value) append(out, v, slot);
  } else if (typeof value === 'string' || typeof value === 'number') {
    if (slot === 'tag') throw new TypeError('html: text inside a tag must be in a quoted attribute value');
    out.push(escapeHtml(String(value)));
  } else {
    throw new TypeError(`html: cannot interpolate a ${typeof value}`);
  }
}

/** The tagged template that builds markup: `html`<p>${text}</p>``. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  const slots = slotsOf(strings);
  const out: string[] = [strings[0]!];
  for (let i = 0; i < values.length; i++) {
    append(out, values[i], slots[i]!);
    out.push(strings[i + 1]!);
  }
  return new SafeHtml(minted, out.join(''));
}
