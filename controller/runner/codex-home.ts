// Codex behind the gateway in a pod: the controller's config names the gateway's URL (never a key), and the
// runner writes the one config.toml codex-config.ts builds into the pod's writable CODEX_HOME before the agent
// starts, so `codex exec` uses the gateway's provider as it does locally. The token stays in OPENAI_API_KEY.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { EpisodeConfig } from '../api/episode-config.ts';
import { codexGatewayConfig } from '../gateway/codex-config.ts';

/** Writes `home/config.toml` for the episode; the home is an emptyDir, so no user config is there to keep. */
export async function writeCodexGatewayHome(codex: NonNullable<EpisodeConfig['codexGateway']>): Promise<void> {
  await mkdir(codex.home, { recursive: true, mode: 0o700 });
  await writeFile(path.join(codex.home, 'config.toml'), codexGatewayConfig(codex.baseUrl), { mode: 0o600 });
}
