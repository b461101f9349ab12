// Installs the pinned agent CLIs (claude, codex, gemini) for test/real-agents/, each into its own cache
// directory outside the repo; an existing complete install is reused, so CI pays once per machine.
//   node scripts/agent-clis/install.ts [claude|codex|gemini ...]
// Installs go to a temporary sibling first and are renamed into place: a killed install leaves no
// directory that looks complete.
import { spawn } from 'node:child_process';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AGENT_CLIS, COMPLETE_MARKER, cacheRoot, installDir, installedBin, type AgentCli } from './clis.ts';

function npm(args: string[], cwd: string): Promise<void> {
  // npm from the PATH's Node: the checkout's node_modules/.bin puts Node 24's npm first.
  return new Promise((resolve, reject) => {
    const child = spawn('npm', args, {
      cwd,
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, npm_config_update_notifier: 'false' },
    });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`npm ${args.join(' ')} exited ${code}`))));
  });
}

async function install(cli: AgentCli, root: string): Promise<{ bin: string; seconds: number; cached: boolean }> {
  const existing = installedBin(cli, root);
  if (existing) return { bin: existing, seconds: 0, cached: true };
  const started = Date.now();
  const dir = installDir(cli, root);
  const staging = `${dir}.tmp-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  await writeFile(path.join(staging, 'package.json'), JSON.stringify({ name: 'episodic-agent-cli', private: true }));
  // Exact version, and the lockfile-less install of just this package (plus its optional native parts).
  await npm(
    ['install', '--no-audit', '--no-fund', '--save-exact', '--loglevel=error', `${cli.pkg}@${cli.version}`],
    staging,
  );
  await writeFile(path.join(staging, COMPLETE_MARKER), `${cli.pkg}@${cli.version}\n`);
  await rm(dir, { recursive: true, force: true });
  await mkdir(path.dirname(dir), { recursive: true });
  await rename(staging, dir);
  const bin = installedBin(cli, root);
  if (!bin) throw new Error(`${cli.pkg}@${cli.version} installed, but ${cli.bin} is missing`);
  return { bin, seconds: (Date.now() - started) / 1000, cached: false };
}

const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !AGENT_CLIS.some((c) => c.name === w));
if (unknown.length > 0) {
  console.error(`unknown CLI ${unknown.join(', ')}; known: ${AGENT_CLIS.map((c) => c.name).join(', ')}`);
  process.exit(2);
}
const root = cacheRoot();
const chosen = AGENT_CLIS.filter((c) => wanted.length === 0 || wanted.includes(c.name));
// One at a time: three parallel npm installs on a 2-core CI machine are slower, not faster.
for (const cli of chosen) {
  const done = await install(cli, root);
  const how = done.cached ? 'cached' : `installed in ${done.seconds.toFixed(1)} s`;
  console.log(`${cli.pkg}@${cli.version}: ${how}: ${done.bin}`);
}
