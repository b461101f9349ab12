// Real Codex behind the model gateway on a cluster (issue 29): the controller on the real kube-apiserver builds
// an openai task's episode pod, and the in-pod runner is started with that pod's env and command, as the
// container would start (its /home/episodic and /workspace mapped to scratch directories). The runner writes
// codex's config.toml into the pod's CODEX_HOME from the gateway URL the pod was given, so `codex exec` goes
// through the gateway: the model server sees the real key, the pod and the config hold only the token and URL.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  EPISODE_CONFIG_ENV,
  EPISODE_PROMPT_ENV,
  POD_HOME,
  POD_WORKSPACE,
} from '../../controller/api/episode-config.ts';
import type { ClusterController } from '../../controller/cluster/controller.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import { freePort } from '../support/cluster-gateway.ts';
import { FakeKubelet, clusterWithCrd, createNamespace, startController, testClient } from '../support/kubelet.ts';
import { waitForPod, waitForTask } from '../support/kubelet.ts';
import { startModelServer, type ModelServer } from '../model-server/server.ts';
import { agentRun, baseEnv } from './agents.ts';
import { assertEnded, episodeRunner, ensureClis, RUNNER_HANG_GUARD_MS, scratchDir, skipRealAgents } from './support.ts';
import type { RunnerRun } from './support.ts';

const REAL_KEY = 'sk-proj-cluster-codex-real-key-DO-NOT-LEAK-5c1d';
const SCENARIO = 'ok.gw-codex-cluster';
const PRICE = { inputPerMTok: 3, outputPerMTok: 20, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 };

describe('codex behind the gateway in a cluster episode pod', {
  skip: skipRealAgents || skipCluster,
  timeout: RUNNER_HANG_GUARD_MS + 120_000,
}, () => {
  let client: KubeClient;
  let controller: ClusterController | undefined;
  let server: ModelServer;
  let scratch: ReturnType<typeof scratchDir>;
  let ns: string;
  let pod: any;
  let podEnv: Record<string, string>;
  let home: string;
  let run: RunnerRun;
  let ended: any;

  before(async () => {
    await ensureClis();
    const cluster = await clusterWithCrd();
    ns = await createNamespace('codex-gateway');
    client = await testClient(cluster);
    server = await startModelServer();
    scratch = scratchDir('codex-cluster-gw');
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'openai-keys', namespace: ns } };
    const credentials = {
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentCredentials',
      metadata: { name: 'openai', namespace: ns },
      spec: {
        provider: 'openai',
        upstream: `${server.url}/s/${SCENARIO}`,
        credentials: [{ name: 'main', secretRef: { name: 'openai-keys', key: 'openai' } }],
        pricing: { '*': PRICE },
      },
    };
    // The CLI's usual command; its own CODEX_HOME (agents.ts) is not the pod's and goes unused.
    const codex = agentRun('codex', 'json', {
      serverUrl: 'http://127.0.0.1:1',
      scenarioName: 'unused',
      home: path.join(scratch.dir, 'unused'),
    });
    const task = {
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentTask',
      metadata: { name: 'codex', namespace: ns },
      spec: {
        prompt: 'Do the next step of the plan.',
        agent: {
          image: 'ghcr.io/example/agent:1',
          command: codex.command,
          promptVia: 'stdin',
          output: 'codex',
          credentials: 'openai',
        },
        completion: { promise: 'DONE' },
        limits: { maxEpisodes: 1, episodeTimeoutSeconds: 120 },
      },
    };
    const docs = [{ ...secret, data: { openai: Buffer.from(REAL_KEY).toString('base64') } }, credentials, task];
    const listen = `127.0.0.1:${await freePort()}`;
    controller = await startController(cluster, { namespace: ns, gateway: { listen } });
    await kubectl(['apply', '-f', '-'], { input: docs.map((d) => JSON.stringify(d)).join('\n') });
    pod = await waitForPod(client, ns, 'codex-ep-1');
    const container = pod.spec.containers[0];
    assert.deepEqual(container.command.slice(0, 3), ['episodic', 'episode', '--']);
    // The container's filesystem: its volumes here are scratch directories, its paths mapped onto them.
    home = path.join(scratch.dir, 'home');
    const ws = path.join(scratch.dir, 'workspace');
    for (const d of [home, ws, path.join(scratch.dir, 'tmp')]) mkdirSync(d, { recursive: true });
    const mapped = (v: string) => v.replaceAll(POD_HOME, home).replaceAll(`"${POD_WORKSPACE}"`, JSON.stringify(ws));
    podEnv = Object.fromEntries(container.env.map((e: any) => [e.name, e.value]));
    const inPod = Object.fromEntries(Object.entries(podEnv).map(([k, v]) => [k, mapped(v)]));
    const kubelet = new FakeKubelet(client);
    const running = await kubelet.setRunning(pod);
    const { [EPISODE_CONFIG_ENV]: config, [EPISODE_PROMPT_ENV]: prompt, ...env } = inPod;
    run = await episodeRunner({
      argv: container.command.slice(3),
      config: JSON.parse(config),
      prompt,
      env: { ...baseEnv({ TZ: 'UTC', TMPDIR: path.join(scratch.dir, 'tmp') }), ...env },
      dir: path.join(scratch.dir, 'runner'),
    });
    const message = readFileSync(path.join(scratch.dir, 'runner', 'termination-log'), 'utf8');
    await kubelet.terminate(running, { exitCode: run.code ?? 1, message });
    ended = await waitForTask(client, ns, 'codex', (s) => s.lastEpisode?.number === 1 && !s.currentEpisode);
  });
  after(async () => {
    await controller?.stop();
    client?.close();
    await server?.close();
    scratch?.remove();
  });

  it('codex reached the model server through the gateway, on the real key only', () => {
    assertEnded(run);
    assert.equal(run.result?.completion, 'promise', `${run.result?.message}\n${run.stderr.slice(-2000)}`);
    const requests = server.requestsFor(SCENARIO);
    assert.ok(
      requests.some((r) => r.path === '/v1/responses'),
      run.stderr.slice(-2000),
    );
    for (const r of requests) assert.equal(r.credential, REAL_KEY, `${r.method} ${r.path}`);
    // Metered at the gateway: the status's cost is what the gateway counted, not zero.
    assert.equal(ended.status.phase, 'Succeeded', ended.status.message);
    assert.ok(ended.status.costUSD > 0, JSON.stringify(ended.status));
  });

  it('the pod and the config.toml the runner wrote hold the token and the URL, never the key', () => {
    assert.ok(!JSON.stringify(pod).includes(REAL_KEY), 'the key is in the pod');
    assert.match(podEnv.OPENAI_API_KEY, /^episodic-gw-[A-Za-z0-9_-]{43}$/);
    assert.equal(podEnv.CODEX_HOME, `${POD_HOME}/.codex`);
    const config = readFileSync(path.join(home, '.codex', 'config.toml'), 'utf8');
    assert.ok(!config.includes(REAL_KEY) && !config.includes(podEnv.OPENAI_API_KEY), config);
    assert.match(config, /^model_provider = "episodic-gateway"$/m);
    assert.match(config, new RegExp(`^base_url = "http://127\\.0\\.0\\.1:\\d+/t/${ns}/codex/v1"$`, 'm'));
    assert.match(config, /^env_key = "OPENAI_API_KEY"$/m);
    // Codex kept its own state beside the config: CODEX_HOME must be writable (why no read-only ConfigMap).
    const state = readdirSync(path.join(home, '.codex'));
    assert.ok(state.includes('sessions'), state.join(' '));
    assert.ok(!run.stdout.includes(REAL_KEY) && !run.stderr.includes(REAL_KEY), 'the key is in the pod log');
  });
});
