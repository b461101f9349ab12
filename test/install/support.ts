// Shared by the install tests: the chart rendered by the real helm, parsed into objects.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { CHART_DIR, helmBinary } from '../../scripts/gen-manifests.ts';
import { repoRoot, skipCluster } from '../support/cluster.ts';
import { cliEntry } from '../support/cli-entry.ts';

const execFileAsync = promisify(execFile);

export { CHART_DIR, repoRoot, skipCluster };
export const RELEASE = 'episodic';
export const NAMESPACE = 'episodic-system';
export const SA_USER = `system:serviceaccount:${NAMESPACE}:episodic`;

export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: any;
};

let helm: string | undefined;

/** Runs the real helm (no cluster needed for lint/template); resolves to stdout, rejects with stderr. */
export async function helmCmd(args: string[]): Promise<string> {
  helm ??= helmBinary();
  try {
    const { stdout } = await execFileAsync(helm, args, { cwd: repoRoot, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (err) {
    const e = err as Error & { stderr?: string; stdout?: string };
    throw new Error(`helm ${args.join(' ')}: ${e.stderr || e.stdout || e.message}`, { cause: err });
  }
}

/** --set style values as helm args. Values are passed with --set-json so types are exact. */
export function valueArgs(values: Record<string, unknown> = {}): string[] {
  return Object.entries(values).flatMap(([key, value]) => ['--set-json', `${key}=${JSON.stringify(value)}`]);
}

export async function renderYaml(values: Record<string, unknown> = {}, extra: string[] = []): Promise<string> {
  return helmCmd(['template', RELEASE, CHART_DIR, '--namespace', NAMESPACE, ...valueArgs(values), ...extra]);
}

export async function render(values: Record<string, unknown> = {}, extra: string[] = []): Promise<K8sObject[]> {
  return parseObjects(await renderYaml(values, extra));
}

export function parseObjects(text: string): K8sObject[] {
  return parseAllDocuments(text)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`invalid YAML from helm: ${doc.errors[0].message}`);
      return doc.toJS() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null);
}

export function find(objects: K8sObject[], kind: string, name?: string): K8sObject | undefined {
  return objects.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
}

export function mustFind(objects: K8sObject[], kind: string, name?: string): K8sObject {
  const found = find(objects, kind, name);
  if (!found)
    throw new Error(
      `no ${kind}${name ? ` ${name}` : ''} in [${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}]`,
    );
  return found;
}

export function controllerContainer(objects: K8sObject[]): any {
  return mustFind(objects, 'Deployment').spec.template.spec.containers.find((c: any) => c.name === 'controller');
}

/** The `episodic controller` flags the real CLI accepts (from its --help). */
export async function controllerFlags(): Promise<Set<string>> {
  const { stdout } = await execFileAsync(process.execPath, [cliEntry(), 'controller', '--help'], { cwd: repoRoot });
  return new Set([...stdout.matchAll(/(?:^|\s)(--[a-z][a-z0-9-]*)/g)].map((m) => m[1]));
}
