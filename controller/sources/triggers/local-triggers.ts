// Local mode's triggers: their status in STATE/triggers/NAMESPACE/NAME.json (written whole by a rename, so a
// kill never leaves half a file), tokens from the environment variable the spec names, and a timer per
// trigger while `run --watch` follows the spec directory. Plain `run` makes one pass of each trigger first.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentTriggerStatus } from '../../api/agent-trigger.ts';
import { AgentTriggerStatusSchema, TRIGGER_KIND } from '../../api/agent-trigger.ts';
import type { Clock, Timer } from '../../core/clock.ts';
import { nextTimerDelay } from '../../reconciler/trigger-timing.ts';
import type { SpecTrigger } from '../local/spec-files.ts';
import type { RunnableTrigger, TriggerRunner, TriggerStatusStore } from './trigger-runner.ts';

export class LocalTriggerStatus implements TriggerStatusStore {
  private readonly dir: string;

  constructor(stateDir: string) {
    this.dir = join(stateDir, 'triggers');
  }

  private file(key: string): string {
    const [namespace, name] = key.split('/');
    return join(this.dir, namespace, `${name}.json`);
  }

  read(key: string): AgentTriggerStatus | undefined {
    try {
      const parsed = AgentTriggerStatusSchema.safeParse(JSON.parse(readFileSync(this.file(key), 'utf8')));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined; // none yet; a broken file starts over (names keep tasks from being created twice)
    }
  }

  async write(key: string, status: AgentTriggerStatus): Promise<void> {
    const file = this.file(key);
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(`${file}.tmp`, `${JSON.stringify(status, null, 2)}\n`);
    renameSync(`${file}.tmp`, file);
  }
}

/** The valid triggers of a spec directory as the runner takes them. */
export function runnableTriggers(triggers: Iterable<SpecTrigger>): RunnableTrigger[] {
  return [...triggers].flatMap((t) =>
    t.spec
      ? [
          {
            key: t.key,
            namespace: t.namespace,
            name: t.name,
            spec: t.spec,
            owner: { kind: TRIGGER_KIND, namespace: t.namespace, name: t.name, file: t.file },
          },
        ]
      : [],
  );
}

/** Local tokens: the environment variable the spec names, and nothing else. */
export async function envSecret(source: { tokenEnv?: string }): Promise<string | undefined> {
  return source.tokenEnv ? process.env[source.tokenEnv] || undefined : undefined;
}

interface TimerEntry {
  trigger: RunnableTrigger;
  timer?: Timer;
  hash: string;
  /** A pass is under way: a wake then asks for one more pass right after it. */
  running?: boolean;
  wokenWhileRunning?: boolean;
  /** The pass a delivery woke is followed by one more: a delivery can outrun the forge's own issue index. */
  followUp?: boolean;
}

/** Runs each trigger's passes on its own timer; set() follows spec changes, stop() ends them all. */
export class TriggerTimers {
  private readonly runner: TriggerRunner;
  private readonly clock: Clock;
  private readonly timers = new Map<string, TimerEntry>();
  private stopped = false;

  constructor(runner: TriggerRunner, clock: Clock) {
    this.runner = runner;
    this.clock = clock;
  }

  set(triggers: RunnableTrigger[]): void {
    const wanted = new Map(triggers.map((t) => [t.key, t]));
    for (const [key, entry] of this.timers) {
      const next = wanted.get(key);
      if (next && JSON.stringify(next.spec) === entry.hash) continue;
      entry.timer?.cancel();
      this.timers.delete(key);
    }
    for (const t of triggers) {
      if (this.timers.has(t.key)) continue;
      const entry = { trigger: t, hash: JSON.stringify(t.spec) } as {
        trigger: RunnableTrigger;
        timer?: Timer;
        hash: string;
      };
      this.timers.set(t.key, entry);
      this.arm(entry, 0);
    }
  }

  private arm(entry: TimerEntry, delayMs: number): void {
    entry.timer = this.clock.setTimer(async () => {
      if (this.stopped || this.timers.get(entry.trigger.key) !== entry) return;
      entry.running = true;
      const next = await this.runner.pass(entry.trigger).finally(() => (entry.running = false));
      if (this.stopped || this.timers.get(entry.trigger.key) !== entry) return;
      const wake = { wokenWhileRunning: entry.wokenWhileRunning === true, followUp: entry.followUp === true };
      const { delayMs, followUp } = nextTimerDelay(next, this.clock.now(), wake);
      entry.wokenWhileRunning = false;
      entry.followUp = followUp;
      this.arm(entry, delayMs);
    }, delayMs);
  }

  /** Every trigger as last set. */
  all(): RunnableTrigger[] {
    return [...this.timers.values()].map((e) => e.trigger);
  }

  /** The trigger of that key, as last set. */
  trigger(key: string): RunnableTrigger | undefined {
    return this.timers.get(key)?.trigger;
  }

  /** A webhook said something changed: the trigger's next pass is now (or right after the one under way). */
  wake(key: string): void {
    const entry = this.timers.get(key);
    if (!entry || this.stopped) return;
    if (entry.running) {
      entry.wokenWhileRunning = true;
      return;
    }
    entry.timer?.cancel();
    entry.followUp = true;
    this.arm(entry, 0);
  }

  stop(): void {
    this.stopped = true;
    for (const entry of this.timers.values()) entry.timer?.cancel();
    this.timers.clear();
  }
}
