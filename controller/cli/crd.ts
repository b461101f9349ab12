// `episodic crd`: print the AgentTask CustomResourceDefinition, e.g. `episodic crd | kubectl apply -f -`.
import type { Command } from 'commander';

export function registerCrd(program: Command): void {
  program
    .command('crd')
    .description('print the AgentTask CustomResourceDefinition (YAML), generated from the schema')
    .action(async () => {
      const { agentTaskCrdYaml } = await import('../api/crd.ts'); // yaml and JSON Schema generation: only here
      process.stdout.write(agentTaskCrdYaml());
    });
}
