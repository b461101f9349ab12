// The same suite as process-episode.test.ts, with every process started through the spawn helper (the local
// controller's way) instead of directly from the test process.
process.env.EPISODIC_TEST_SPAWNER = 'helper';
await import('./process-episode.test.ts');
