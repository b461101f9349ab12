// Set-up shared by the cluster tests of the model gateway: a free port for the gateway to listen on, one
// Messages request made as the agent makes it, and the literal (non-Secret) env of an episode pod.
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';

/** A port free on 127.0.0.1 now: the controller's gateway is told to listen on it. */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise((resolve) => s.close(resolve));
  return port;
}

/** One streaming Messages request as Claude Code makes it behind ANTHROPIC_BASE_URL. */
export async function ask(env: Record<string, string>): Promise<{ status: number; body: string }> {
  const res = await fetch(`${env.ANTHROPIC_BASE_URL}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': env.ANTHROPIC_API_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', stream: true, max_tokens: 10, messages: [] }),
  });
  return { status: res.status, body: await res.text() };
}

/** The pod's env given as values (what the agent sees), leaving out any valueFrom entries. */
export const literalEnv = (pod: any): Record<string, string> =>
  Object.fromEntries(
    pod.spec.containers[0].env.filter((e: any) => e.value !== undefined).map((e: any) => [e.name, e.value]),
  );
