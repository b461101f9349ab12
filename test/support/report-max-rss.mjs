// Preloaded into a CLI under test (NODE_OPTIONS=--import): on exit it prints the process's peak resident set
// size, so a test can bound the memory of a real `episodic` process (Linux and macOS report it).
process.on('exit', () => process.stderr.write(`\nmaxRSS ${process.resourceUsage().maxRSS} KiB\n`));
