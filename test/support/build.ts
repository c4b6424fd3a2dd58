// Builds the test files and the `assay` command into plain JavaScript before a run (test/run.ts), so that no test
// process and no process a test starts pays for tsx. Loading the test system through tsx's loader hooks costs about
// 3.5 s of CPU per process (some 1,600 modules, each resolved and transformed through a hook thread); the same code as
// a few bundled chunks loads in about 1 s, and a run starts several hundred such processes on two cores
// (docs/deploy.md, How the suite runs).
//
// Every file keeps the `import.meta.url` of its source, so paths it finds from there (docs, migrations, fonts,
// fixtures) are the checkout's, not the build folder's. The packages loaded on every start that are plain
// JavaScript are bundled too (loading typebox, the NATS client, the MCP SDK and stripe file by file costs about
// 0.8 s more per process); the others stay outside and load from node_modules as they do under tsx: native addons,
// and packages that find their own files beside them (fonts, worker scripts, browsers).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';

export interface TestBuild {
  /** The built `assay` command (cli/assay.ts). */
  cli: string;
  /** The built file of a source file given from the checkout's root (test/x.test.ts → <outdir>/test/x.test.mjs). */
  outputOf: (source: string) => string;
}

/** Each source file's own `import.meta.url`, written in as a string before esbuild bundles it. */
const sourceUrls: Plugin = {
  name: 'source-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (args.path.includes('/node_modules/')) return undefined;
      const text = await readFile(args.path, 'utf8');
      return {
        contents: text.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)),
        loader: 'ts',
      };
    });
  },
};

/** The packages bundled with the code; every other package is loaded from node_modules. */
const bundledPackages = new Set([
  'typebox',
  '@nats-io/nats-core',
  '@nats-io/jetstream',
  '@nats-io/kv',
  '@nats-io/transport-node',
  '@modelcontextprotocol/sdk',
  'stripe',
  'jose',
  'postgres',
  'prom-client',
  'canonicalize',
  'openai',
  'oauth4webapi',
  '@x402/core',
  'viem',
]);

const packageOf = (specifier: string) =>
  specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;

/** Our code's imports of packages outside `bundledPackages` stay imports; a bundled package's own are bundled. */
const externalPackages: Plugin = {
  name: 'external-packages',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('node:') || args.importer.includes('/node_modules/')) return undefined;
      return bundledPackages.has(packageOf(args.path)) ? undefined : { path: args.path, external: true };
    });
  },
};

/** Build `sources` (paths from `root`) and the `assay` command into `outdir`, a folder inside `root` (so that the
 * built files find node_modules as the sources do). */
export async function buildTests(root: string, sources: string[], outdir: string): Promise<TestBuild> {
  const outputOf = (source: string) => join(outdir, source.replace(/\.ts$/, '.mjs'));
  await build({
    absWorkingDir: root,
    entryPoints: [...new Set(['cli/assay.ts', ...sources])],
    outdir,
    outbase: root,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // A bundled CommonJS package calls require: give the bundle one.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
    // Error names and the names a test prints stay the sources'.
    keepNames: true,
    sourcemap: 'linked',
    chunkNames: 'chunks/[name]-[hash]',
    plugins: [externalPackages, sourceUrls],
    logLevel: 'warning',
  });
  return { cli: outputOf('cli/assay.ts'), outputOf };
}
