// `episodic controller` as a command: flag validation (exit 2 naming the flag), a kubeconfig that does not
// load (exit 1), and the health endpoints of a running process.
import { CLI_HANG_GUARD_MS, SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { formatDuration, parseDuration } from '../../controller/cli/controller.ts';
import { CLUSTER_DEFAULTS } from '../../controller/kube/cluster-defaults.ts';
import { repoRoot, skipCluster } from '../support/cluster.ts';
import type { Cluster } from '../support/cluster.ts';
import { NODE, clusterWithCrd, createNamespace, startControllerProcess } from '../support/kubelet.ts';
import type { ControllerProcess } from '../support/kubelet.ts';
import { waitFor } from '../support/wait.ts';
import { cliEntry } from '../support/cli-entry.ts';

const skip = skipCluster;

async function cli(args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    await promisify(execFile)(NODE, [cliEntry(), 'controller', ...args], { cwd: repoRoot, timeout: CLI_HANG_GUARD_MS });
    return { code: 0, stderr: '' };
  } catch (err) {
    const e = err as { code?: number; stderr?: string };
    return { code: e.code ?? -1, stderr: e.stderr ?? '' };
  }
}

describe('episodic controller (CLI)', () => {
  it('parses durations', () => {
    assert.equal(parseDuration('--x', '15s'), 15_000);
    assert.equal(parseDuration('--x', '2m'), 120_000);
    assert.equal(parseDuration('--x', '500ms'), 500);
    assert.equal(parseDuration('--x', '4'), 4_000);
    assert.throws(() => parseDuration('--lease-duration', 'soon'), /--lease-duration: "soon" is not a duration/);
  });

  it('shows each default as a duration that parses back to the default', () => {
    assert.deepEqual([120_000, 15_000, 500, 7_200_000, 90_000].map(formatDuration), [
      '2m',
      '15s',
      '500ms',
      '2h',
      '90s',
    ]);
    for (const ms of [CLUSTER_DEFAULTS.leaseDurationMs, CLUSTER_DEFAULTS.imagePullGraceMs])
      assert.equal(parseDuration('--x', formatDuration(ms)), ms);
  });

  it("the Helm chart's values state the controller's own defaults", async () => {
    const values = parseYaml(await readFile(path.join(repoRoot, 'charts/episodic/values.yaml'), 'utf8'));
    const c = values.controller;
    assert.deepEqual(
      [c.maxConcurrent, c.workers, c.kubeApiQPS, c.kubeApiBurst, parseDuration('imagePullGrace', c.imagePullGrace)],
      [
        CLUSTER_DEFAULTS.maxConcurrent,
        CLUSTER_DEFAULTS.workers,
        CLUSTER_DEFAULTS.qps,
        CLUSTER_DEFAULTS.burst,
        CLUSTER_DEFAULTS.imagePullGraceMs,
      ],
    );
    assert.equal(values.episodes.podRetention, CLUSTER_DEFAULTS.podRetention);
  });

  it('rejects bad flags with exit code 2, naming the flag', async () => {
    const zero = await cli(['--max-concurrent', '0']);
    assert.equal(zero.code, 2);
    assert.match(zero.stderr, /--max-concurrent: must be at least 1/);
    const deadline = await cli(['--lease-duration', '4s', '--renew-deadline', '5s']);
    assert.equal(deadline.code, 2);
    assert.match(deadline.stderr, /--renew-deadline: must be shorter than --lease-duration/);
  });

  it('rejects a bad --gateway-addr or --gateway-url with exit code 2, naming the flag', async () => {
    const addr = await cli(['--gateway-addr', 'http://0.0.0.0:8070']);
    assert.equal(addr.code, 2);
    assert.match(addr.stderr, /--gateway-addr: "http:\/\/0\.0\.0\.0:8070" is not HOST:PORT, :PORT or PORT/);
    const url = await cli(['--gateway-addr', '0.0.0.0:8070', '--gateway-url', 'ftp://gw?x=1']);
    assert.equal(url.code, 2);
    assert.match(url.stderr, /--gateway-url: "ftp:\/\/gw\?x=1" is not a plain http\(s\) URL/);
    const alone = await cli(['--gateway-url', 'http://gw:8070']);
    assert.equal(alone.code, 2);
    assert.match(alone.stderr, /--gateway-url: needs --gateway-addr/);
  });

  it('rejects a bad --episode-defaults file with exit code 2, naming the file and the field', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'episodic-defaults-'));
    try {
      const file = path.join(dir, 'episode-defaults.yaml');
      await writeFile(file, 'image: agents/claude:1\ntolerations: { key: agents }\n');
      const bad = await cli(['--episode-defaults', file, '--kubeconfig', '/nonexistent/kubeconfig']);
      assert.equal(bad.code, 2, bad.stderr);
      assert.match(bad.stderr, new RegExp(`--episode-defaults ${file}: tolerations: .*expected array`));
      const missing = await cli(['--episode-defaults', path.join(dir, 'nope.yaml')]);
      assert.equal(missing.code, 2);
      assert.match(missing.stderr, /nope\.yaml: cannot read: ENOENT/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('exits 1 when the kubeconfig cannot be loaded', async () => {
    const missing = await cli(['--kubeconfig', '/nonexistent/kubeconfig', '--metrics-addr', '', '--health-addr', '']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /cannot load a kubeconfig/);
  });
});

describe('episodic controller (process): health endpoints and hooks', { skip, timeout: SUITE_HANG_GUARD_MS }, () => {
  let cluster: Cluster;
  let proc: ControllerProcess;

  before(
    async () => {
      cluster = await clusterWithCrd();
    },
    { timeout: 90 * 60_000 },
  );

  after(async () => proc?.kill('SIGTERM'));

  it('serves /healthz, /readyz (after the caches synced) and /metrics on their addresses', async () => {
    const ns = await createNamespace('ctl-cli');
    proc = await startControllerProcess(cluster, [
      '--namespace',
      ns,
      '--metrics-addr',
      '127.0.0.1:0',
      '--health-addr',
      '127.0.0.1:0',
    ]);
    const started = proc.logs.find((l) => l.msg === 'episodic controller started');
    const [metricsUrl, healthUrl] = (started?.servers ?? []) as string[];
    assert.notEqual(metricsUrl, healthUrl);
    assert.equal((await fetch(`${healthUrl}/healthz`)).status, 200);
    await waitFor('ready', async () => (await fetch(`${healthUrl}/readyz`)).status === 200);
    const metrics = await (await fetch(`${metricsUrl}/metrics`)).text();
    assert.match(metrics, /# TYPE episodic_watch_restarts_total counter/);
    assert.match(metrics, /process_resident_memory_bytes/);
    assert.equal(await proc.kill('SIGTERM'), 0);
  });

  it('--hooks-addr PORT serves POST /hooks/NAMESPACE/TRIGGER on the loopback', async () => {
    const ns = await createNamespace('ctl-hooks');
    const port = await freePort();
    proc = await startControllerProcess(cluster, ['--namespace', ns, '--hooks-addr', String(port)]);
    const serving = await waitFor('the hooks', () => proc.logs.find((l) => l.msg === 'serving webhooks'));
    assert.equal(serving.url, `http://127.0.0.1:${port}/hooks/NAMESPACE/TRIGGER`);
    const post = () => fetch(`http://127.0.0.1:${port}/hooks/${ns}/nothing`, { method: 'POST', body: '{}' });
    // 500 until this replica leads (the forge redelivers); then an unknown trigger is 404.
    await waitFor('leading', async () => (await post()).status === 404);
    assert.equal(await (await post()).text(), 'no such webhook trigger\n');
    assert.equal(await proc.kill('SIGTERM'), 0);
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
