// The bench's agent: notes when its episode started (the controller launched it), leaves a change in its
// workspace (progress, so no circuit breaker opens) and ends at once without finishing the task, so a
// wake: onMessage task waits for the next message.
import { appendFileSync } from 'node:fs';

appendFileSync(process.env.BENCH_STARTS, `${Date.now()}\n`);
appendFileSync('notes.txt', `read a message at ${new Date().toISOString()}\n`);
process.stdout.write('done for now; waiting for the next message\n');
