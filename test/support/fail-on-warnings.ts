// Loaded into every test process (test/run.ts): a process warning (a listener leak, a deprecation, an unhandled
// rejection turned warning) fails the test that was running, instead of scrolling past in the output.
process.on('warning', (warning) => {
  setImmediate(() => {
    throw new Error(`process warning: ${warning.name}: ${warning.message}`);
  });
});
