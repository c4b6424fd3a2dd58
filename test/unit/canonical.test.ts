// Canonical JSON (RFC 8785), the bytes request hashes and signatures are computed over. The oracle is independent of
// any implementation: the examples published in the RFC, typed in from it; properties checked on generated values;
// and the digests the previous implementation gave, which stored request hashes and signed reports depend on.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { canonicalBytes, canonicalJson, sha256Digest, verifyBundle, verifyReport } from '../../contracts/index.ts';
import { requestHash } from '../../gateway/pipeline.ts';

test('[SPINE-CANONICAL] the RFC 8785 sample object (§3.2.2) gives the canonical text of §3.2.3 and the UTF-8 of §3.2.4', () => {
  const input = JSON.parse(String.raw`{
    "numbers": [333333333.33333329, 1E30, 4.50,
                2e-3, 0.000000000000000000000000001],
    "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
    "literals": [null, true, false]
  }`);
  const expected = String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`;
  assert.equal(canonicalJson(input), expected);
  const utf8 = `
    7b 22 6c 69 74 65 72 61 6c 73 22 3a 5b 6e 75 6c 6c 2c 74 72
    75 65 2c 66 61 6c 73 65 5d 2c 22 6e 75 6d 62 65 72 73 22 3a
    5b 33 33 33 33 33 33 33 33 33 2e 33 33 33 33 33 33 33 2c 31
    65 2b 33 30 2c 34 2e 35 2c 30 2e 30 30 32 2c 31 65 2d 32 37
    5d 2c 22 73 74 72 69 6e 67 22 3a 22 e2 82 ac 24 5c 75 30 30
    30 66 5c 6e 41 27 42 5c 22 5c 5c 5c 5c 5c 22 2f 22 7d`;
  assert.equal(canonicalBytes(input).toString('hex'), utf8.replace(/\s+/g, ''));
});

test('[SPINE-CANONICAL] properties sort by UTF-16 code units: the RFC 8785 §3.2.3 example, surrogate pair before U+FB33', () => {
  const input = JSON.parse(String.raw`{
    "\u20ac": "Euro Sign",
    "\r": "Carriage Return",
    "\ufb33": "Hebrew Letter Dalet With Dagesh",
    "1": "One",
    "\ud83d\ude00": "Emoji: Grinning Face",
    "\u0080": "Control",
    "\u00f6": "Latin Small Letter O With Diaeresis"
  }`);
  assert.equal(
    canonicalJson(input),
    '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
      '"\u20ac":"Euro Sign","\u{1f600}":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
  );
});

test('[SPINE-CANONICAL] numbers serialise as RFC 8785 §3.2.2.3 and Appendix B say', () => {
  const written: [number, string][] = [
    [1e30, '1e+30'],
    [4.5, '4.5'],
    [0.002, '0.002'],
    [1e-7, '1e-7'],
    [1e-27, '1e-27'],
    [333333333.3333333, '333333333.3333333'],
    [-0, '0'],
    [1e21, '1e+21'],
    [1e20, '100000000000000000000'],
  ];
  for (const [n, text] of written) assert.equal(canonicalJson(n), text, `${n}`);
  // Appendix B: IEEE 754 bit patterns and their canonical text.
  const appendixB: [string, string][] = [
    ['0000000000000000', '0'],
    ['8000000000000000', '0'],
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2'],
  ];
  for (const [bits, text] of appendixB) assert.equal(canonicalJson(double(bits)), text, bits);
  // Appendix B's NaN and Infinity rows are errors.
  for (const bits of ['7fffffffffffffff', '7ff0000000000000'])
    assert.throws(() => canonicalJson(double(bits)), TypeError);
});

function double(bits: string): number {
  return Buffer.from(bits, 'hex').readDoubleBE(0);
}

// Generated values: a small seeded generator (mulberry32), so a failure names a seed that reproduces it.
function generator(seed: number) {
  let s = seed >>> 0;
  const random = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  // Control characters, escapes, non-ASCII, U+2028, private use, the top of the BMP and astral characters.
  const chars = [
    'a',
    'Z',
    '7',
    ' ',
    '"',
    '\\',
    '/',
    '\b',
    '\t',
    '\n',
    '\u0000',
    '\u001f',
    '\u007f',
    '\u0080',
    'é',
    '€',
  ];
  chars.push('\u2028', '\ue000', '\ufb33', '\uffff', '日', '\u{1f600}', '\u{1f601}', '\u{10000}', '\u{10ffff}');
  // Keys that order differently by code unit, by code point and by number: the astral ones sort before U+E000.
  const keys = [
    'a',
    'b',
    'B',
    'aa',
    '',
    '1',
    '2',
    '10',
    '-1',
    '__proto__',
    'toString',
    '\ue000',
    '\ufb33',
    '\u{1f600}',
  ];
  const text = () => {
    let out = '';
    for (let i = int(8); i > 0; i--) out += int(3) === 0 ? String.fromCharCode(32 + int(95)) : pick(chars);
    return out;
  };
  const number = () =>
    pick([
      () => int(2001) - 1000,
      () => (int(2) === 0 ? -1 : 1) * int(2 ** 30) * 2 ** 23,
      () => Math.round((random() - 0.5) * 1e6) / 1000,
      () => (random() - 0.5) * 10 ** (int(80) - 40),
      () => pick([1e21, 1e-7, 5e-324, Number.MAX_VALUE, Number.MAX_SAFE_INTEGER, 0.1 + 0.2]),
    ])();
  const value = (depth: number): unknown => {
    switch (int(depth > 3 ? 4 : 7)) {
      case 0:
        return pick([null, true, false]);
      case 1: {
        const n = number();
        return n === 0 ? 0 : n; // -0 is written 0, so it cannot parse back as itself
      }
      case 2:
      case 3:
        return text();
      case 4:
        return Array.from({ length: int(5) }, () => value(depth + 1));
      default: {
        const o: Record<string, unknown> = {};
        for (let i = int(6); i > 0; i--) {
          // defineProperty, so `__proto__` is an own key (as JSON.parse makes it), not the prototype.
          const v = value(depth + 1);
          Object.defineProperty(o, int(2) === 0 ? pick(keys) : text(), {
            value: v,
            enumerable: true,
            writable: true,
            configurable: true,
          });
        }
        return o;
      }
    }
  };
  return () => value(0);
}

function codeUnitsBefore(a: string, b: string): boolean {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a.charCodeAt(i) !== b.charCodeAt(i)) return a.charCodeAt(i) < b.charCodeAt(i);
  }
  return a.length < b.length;
}

/**
 * Scan canonical text: whitespace outside strings is a failure, and each object's keys are returned in the order
 * they are written. (JSON.parse cannot tell that order: it lists integer-like keys first, in numeric order.)
 */
function writtenKeys(json: string): string[][] {
  const objects: string[][] = [];
  const open: { keys: string[] | null; expectKey: boolean }[] = [];
  for (let i = 0; i < json.length; i++) {
    const c = json[i]!;
    if (c === '"') {
      let j = i + 1;
      while (json[j] !== '"') j += json[j] === '\\' ? 2 : 1;
      const top = open.at(-1);
      if (top?.keys && top.expectKey) {
        top.keys.push(JSON.parse(json.slice(i, j + 1)));
        top.expectKey = false;
      }
      i = j;
    } else if (c === '{') {
      const keys: string[] = [];
      objects.push(keys);
      open.push({ keys, expectKey: true });
    } else if (c === '[') open.push({ keys: null, expectKey: false });
    else if (c === '}' || c === ']') open.pop();
    else if (c === ',') {
      const top = open.at(-1)!;
      top.expectKey = top.keys !== null;
    } else if (!/[:\-+.0-9aeflnrstu]/.test(c)) assert.fail(`insignificant character ${JSON.stringify(c)} at ${i}`);
  }
  return objects;
}

test('[SPINE-CANONICAL] on generated values: parses back equal, no whitespace, keys in code-unit order, stable', () => {
  for (const seed of [1, 2, 3, 4]) {
    const next = generator(seed);
    for (let i = 0; i < 500; i++) {
      const value = next();
      const where = `seed ${seed}, value ${i}`;
      const json = canonicalJson(value);
      const parsed = JSON.parse(json);
      assert.deepEqual(parsed, value, where);
      for (const keys of writtenKeys(json)) {
        for (let k = 1; k < keys.length; k++) {
          assert.ok(codeUnitsBefore(keys[k - 1]!, keys[k]!), `${where}: ${JSON.stringify(keys)}`);
        }
      }
      assert.equal(canonicalJson(parsed), json, where);
    }
  }
});

test('[SPINE-CANONICAL] shared (not cyclic) containers, null-prototype objects and a "toJSON" data member are JSON', () => {
  const shared = { n: 1 };
  const bare = Object.create(null);
  bare.b = 2;
  bare.a = [shared];
  assert.equal(
    canonicalJson({ x: shared, y: [shared], z: bare }),
    '{"x":{"n":1},"y":[{"n":1}],"z":{"a":[{"n":1}],"b":2}}',
  );
  assert.equal(canonicalJson({ toJSON: 'data' }), '{"toJSON":"data"}');
});

class Point {
  x = 1;
}
const cycle: { list: unknown[] } = { list: [] };
cycle.list.push(cycle);
const holey: unknown[] = [1];
holey[2] = 3;
let deep: unknown = { at: new Date(0) };
for (let i = 0; i < 100_000; i++) deep = [deep];

/** Non-JSON values, where each sits, and the path the refusal names. */
const refusals: [string, unknown, string][] = [
  ['undefined property', { a: 1, b: undefined }, '$.b'],
  ['undefined element', [1, undefined], '$[1]'],
  ['array hole', holey, '$[1]'],
  ['undefined', undefined, '$'],
  ['function', { f: () => 1 }, '$.f'],
  ['symbol', { s: Symbol('s') }, '$.s'],
  ['bigint', { n: 10n }, '$.n'],
  ['Date', { report: { createdAt: new Date(0) } }, '$.report.createdAt'],
  ['Map', { m: new Map([['a', 1]]) }, '$.m'],
  ['Set', [new Set([1])], '$[0]'],
  ['class instance', { p: new Point() }, '$.p'],
  ['boxed string', { s: Object('text') }, '$.s'],
  ['boxed number', { n: Object(1) }, '$.n'],
  ['Buffer', { bytes: Buffer.from('x') }, '$.bytes'],
  ['Uint8Array', { bytes: new Uint8Array(1) }, '$.bytes'],
  ['toJSON method', { t: { toJSON: () => 'x' } }, '$.t'],
  ['cycle', cycle, '$.list[0]'],
  ['NaN', { n: Number.NaN }, '$.n'],
  ['Infinity', [Number.POSITIVE_INFINITY], '$[0]'],
  ['-Infinity', { n: Number.NEGATIVE_INFINITY }, '$.n'],
  ['lone high surrogate', { s: 'a\ud800' }, '$.s'],
  ['lone low surrogate', ['\udc00b'], '$[0]'],
  ['lone surrogate in a property name', { o: { '\ud800': 1 } }, '$.o["\\ud800"]'],
  ['non-identifier keys in the path', { 'a b': { 'c-d': [new Date(0)] } }, '$["a b"]["c-d"][0]'],
  ['a Date 100,000 levels down', deep, `$${'[0]'.repeat(100_000)}.at`],
];

test('[SPINE-CANONICAL] a value that is not JSON is refused with a TypeError naming its path', async (t) => {
  for (const [name, value, path] of refusals) {
    await t.test(name, () => {
      assert.throws(
        () => canonicalJson(value),
        (err: unknown) => err instanceof TypeError && err.message.startsWith(`canonical JSON: ${path} `),
      );
    });
  }
});

test('[SPINE-CANONICAL] 100,000 levels of nesting canonicalise without overflowing the stack', () => {
  let nested: unknown = 'x';
  for (let i = 0; i < 100_000; i++) nested = i % 2 === 0 ? [nested] : { k: nested };
  const json = canonicalJson(nested);
  assert.equal(json.length, 50_000 * '[]{"k":}'.length + 3);
});

test('[SPINE-CANONICAL] request hashes and report digests are the ones the previous implementation stored', () => {
  // Computed with the hand-written canonicalJson this replaced; stored Idempotency-Key records and signed reports
  // carry these, so they must not change.
  const purchase = { listing_id: '0b6f3c2e-8d4a-4f1e-9c7b-2a5d8e1f0c3b', formats: ['md'], max_price_cents: 500 };
  assert.equal(
    requestHash('purchaseArtifact', {}, purchase),
    'd66dcde20dca328000cbc8b12854d7bccf37f11d1bdcd5ca1c8c0eca3ff2fe30',
  );
  assert.equal(
    requestHash('repriceListing', { id: '7d1e5a90-3c4b-4e2f-8a6d-1b9c0f2e4d7a' }, { price_cents: 700 }),
    '80f24ff2f69dbb91ac9ec029a4c9feec9540bb90aa9f4ecebf4c7cfe14f203b6',
  );
  const report = {
    pipelineVersion: 'assay-verify/1.0.0',
    subject: {
      artifactId: '0b6f3c2e-8d4a-4f1e-9c7b-2a5d8e1f0c3b',
      editionId: '7d1e5a90-3c4b-4e2f-8a6d-1b9c0f2e4d7a',
      contentHash: `sha256:${'0'.repeat(64)}`,
    },
    claims: [
      {
        id: 'c1',
        text: 'Die Größe ist 2 MiB — 😀 «ok»',
        sourceId: 's1',
        locator: 'notes',
        entailment: 0.8333,
        state: 'verified',
      },
      {
        id: 'c2',
        text: 'Line\nbreak "quoted" \\ back',
        sourceId: 's1',
        locator: '',
        entailment: 0.1,
        state: 'contradicted',
      },
    ],
    summary: { claimsTotal: 2, verified: 1, floor: 0.7, meanEntailment: 0.4667, humanReviewed: false },
    judgeModel: 'assay-judge-rules',
    judgePromptVersion: '1.2.0',
    judgePromptHash: `sha256:${'f'.repeat(64)}`,
    createdAt: '2026-11-23T11:25:56.000Z',
    signingKeyId: 'report-2026-11',
  };
  assert.equal(
    sha256Digest(canonicalBytes(report)),
    'sha256:2ad8d163592fb0222f12209ab0fb08b9678695394d24afda28a1606a4035e3b5',
  );
  assert.equal(
    `sha256:${createHash('sha256').update(canonicalJson(report), 'utf8').digest('hex')}`,
    sha256Digest(canonicalBytes(report)),
  );
});

test('[SPINE-CANONICAL] a report or bundle holding what canonical JSON refuses fails verification, without throwing', () => {
  const keys = { keys: [] };
  const report = {
    digest: `sha256:${'0'.repeat(64)}`,
    signature: 'AA',
    signingKeyId: 'k1',
    claims: [{ text: 'x\ud800' }],
  };
  const r = verifyReport(report, keys);
  assert.equal(r.ok, false);
  assert.match(
    !r.ok ? r.reason : '',
    /cannot canonicalise the signed content: \$\.claims\[0\]\.text is a string that is not well-formed/,
  );
  const bundle = {
    digest: report.digest,
    body: { '\udc00': 1 },
    signature: { keyId: 'k1', alg: 'ES256', value: 'AA' },
  };
  const b = verifyBundle(bundle, keys);
  assert.equal(b.ok, false);
  assert.match(!b.ok ? b.reason : '', /cannot canonicalise the signed content: \$\["\\udc00"\] is a property name/);
});
