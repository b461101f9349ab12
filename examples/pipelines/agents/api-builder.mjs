#!/usr/bin/env node
// handoff: the api task writes a server and publishes where it listens (KEY=VALUE in $EPISODIC_OUTPUTS).
import { writeFileSync } from 'node:fs';
import { answer, publish, readPrompt } from './stream.mjs';

readPrompt();
writeFileSync('server.mjs', "import http from 'node:http';\nhttp.createServer((q, r) => r.end('ok')).listen(8080);\n");
publish({ URL: 'http://127.0.0.1:8080', ROUTES: '/health /items' });
answer('server.mjs listens on 8080. <promise>COMPLETE</promise>');
