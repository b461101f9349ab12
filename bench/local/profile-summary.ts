// Summarises a V8 .cpuprofile (from `node --cpu-prof`): self time per function and per file, top N.
// Usage: node bench/local/profile-summary.ts FILE.cpuprofile [N]
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export function summarise(profile: Profile, top = 25): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const fn = new Map<string, number>();
  const file = new Map<string, number>();
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id)?.callFrame ?? { functionName: '?', url: '', lineNumber: 0 };
    const short = url
      .replace(/^file:\/\//, '')
      .replace(/.*\/node_modules\//, 'nm:')
      .replace(/.*\/controller\//, 'controller/');
    const f = `${functionName || '(anonymous)'} ${short}:${lineNumber + 1}`;
    fn.set(f, (fn.get(f) ?? 0) + us);
    const mod = short.startsWith('nm:')
      ? short
          .split('/')
          .slice(0, short.startsWith('nm:@') ? 2 : 1)
          .join('/')
      : short || '(native/gc/idle)';
    file.set(mod, (file.get(mod) ?? 0) + us);
  }
  const fmt = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(
        ([k, us]) => `${(us / 1000).toFixed(0).padStart(8)} ms ${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`,
      )
      .join('\n');
  return `total ${(total / 1000).toFixed(0)} ms sampled\n-- self time by function --\n${fmt(fn)}\n-- self time by file/package --\n${fmt(file)}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [path, n] = process.argv.slice(2);
  if (!path) {
    console.error('usage: node bench/local/profile-summary.ts FILE.cpuprofile [N]');
    process.exit(2);
  }
  console.log(summarise(JSON.parse(readFileSync(path, 'utf8')) as Profile, n ? Number(n) : 25));
}
