// The loader hook of module-trace.mjs. It runs on the loader thread, which has its own copy of the environment.
import { appendFileSync } from 'node:fs';

const traceFile = process.env.ASSAY_MODULE_TRACE;

export async function load(url, context, nextLoad) {
  if (traceFile && url.startsWith('file:')) appendFileSync(traceFile, `${url}\n`);
  return nextLoad(url, context);
}
