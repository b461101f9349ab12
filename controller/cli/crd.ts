// `episodic crd`: print the AgentTask CustomResourceDefinition, e.g. `episodic crd | kubectl apply -f -`.
import type { Command } from 'commander';
import { agentTaskCrdYaml } from '../api/crd.ts';

export function registerCrd(program: Command): void {
  program
    .command('crd')
    .description('print the AgentTask CustomResourceDefinition (YAML), generated from the schema')
    .action(() => {
      process.stdout.write(agentTaskCrdYaml());
    });
}
