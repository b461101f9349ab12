// The one line a spare relay (relay.ts) accepts as its task: `listen PORT=SOCKET…`, each a port on its own
// loopback and a socket under SANDBOX_RUN_DIR it forwards to. Pure; bundled into the relay (no imports but this
// directory's constants). Anything else is refused whole, so a relay never listens on half an assignment.
import { SANDBOX_RUN_DIR } from './bwrap-argv.ts';

export interface RelayListen {
  port: number;
  socket: string;
}

/** More is not a gateway's: a task's endpoints and its proxy. */
export const MAX_LISTEN = 16;
export const MAX_ASSIGNMENT_BYTES = 4096;
const SOCKET_NAME = /^[a-z0-9-]{1,32}\.sock$/;
const PAIR = /^([0-9]{1,5})=(.+)$/;

export function assignmentLine(listen: readonly RelayListen[]): string {
  return `listen ${listen.map((l) => `${l.port}=${l.socket}`).join(' ')}`;
}

/** The pairs of an assignment line, or throws naming what is wrong with it. */
export function parseAssignment(line: string): RelayListen[] {
  if (line.length > MAX_ASSIGNMENT_BYTES) throw new Error('assignment longer than its bound');
  const [word, ...pairs] = line.split(' ');
  if (word !== 'listen') throw new Error('assignment: not a listen line');
  if (pairs.length === 0 || pairs.length > MAX_LISTEN) throw new Error(`assignment: 1 to ${MAX_LISTEN} pairs`);
  const listen = pairs.map(parsePair);
  if (new Set(listen.map((l) => l.port)).size !== listen.length) throw new Error('assignment: a port twice');
  return listen;
}

function parsePair(pair: string): RelayListen {
  const m = PAIR.exec(pair);
  if (!m) throw new Error('assignment: a pair is not PORT=SOCKET');
  const port = Number(m[1]);
  if (port < 1024 || port > 65_535) throw new Error('assignment: a port outside 1024–65535');
  const name = m[2].startsWith(`${SANDBOX_RUN_DIR}/`) ? m[2].slice(SANDBOX_RUN_DIR.length + 1) : '';
  if (!SOCKET_NAME.test(name)) throw new Error(`assignment: a socket not directly under ${SANDBOX_RUN_DIR}`);
  return { port, socket: m[2] };
}
