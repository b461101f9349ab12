// The same suite as chatty-memory.test.ts, with every process started through the spawn helper (the local
// controller's way) instead of directly from the test process.
process.env.EPISODIC_TEST_SPAWNER = 'helper';
await import('./chatty-memory.test.ts');
