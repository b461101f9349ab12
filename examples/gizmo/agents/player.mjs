#!/usr/bin/env node
// The ping-pong example's agent. Its prompt says who it is, who its partner is, at which ball the rally
// ends and whether it serves; {{messages}} brings the partner's last ball. It hits the ball back with a send
// op and, unless the rally is over, ends without its promise: wake: onMessage keeps it waiting for the next.
import { appendFileSync } from 'node:fs';
import { answer, op, readPrompt } from './lib.mjs';

const prompt = readPrompt();
const me = /^You are (\S+), playing ping-pong with (\S+)\./m.exec(prompt);
const last = Number(/The rally ends at ball (\d+)\./.exec(prompt)?.[1]);
if (!me || !last) {
  answer('The prompt names no player, partner and last ball.');
  process.exit(1);
}
const [, self, partner] = me;
const balls = [...prompt.matchAll(/^from (\S+) at \S+:\nball (\d+)$/gm)].filter((m) => m[1] === partner);
const got = balls.length > 0 ? Number(balls.at(-1)[2]) : 0;
const log = (line) => appendFileSync('RALLY.log', `${line}\n`);

const hit = (ball) => {
  op({ op: 'send', to: partner, message: `ball ${ball}` });
  log(`${self} hits ball ${ball} to ${partner}`);
};
if (got === 0 && /^You serve\.$/m.test(prompt)) hit(1);
else if (got > 0) log(`${self} got ball ${got} from ${partner}`);
if (got > 0 && got < last) hit(got + 1);
// Over when the last ball is hit or caught.
const over = got >= last - 1 && got > 0;
answer(over ? `Rally over at ball ${last}. <promise>RALLY_OVER</promise>` : `Waiting for ${partner}.`);
