// `episodic crd`: print the CustomResourceDefinitions (AgentTask, AgentEpisode), e.g. `episodic crd | kubectl apply -f -`.
import type { Command } from 'commander';

export function registerCrd(program: Command): void {
  program
    .command('crd')
    .description('print the AgentTask and AgentEpisode CustomResourceDefinitions (YAML), generated from the schema')
    .action(async () => {
      const { allCrdsYaml } = await import('../api/crd.ts'); // yaml and JSON Schema generation: only here
      process.stdout.write(allCrdsYaml());
    });
}
