// Supervised resume's metrics: resumes by the policy and by a person, and tasks needing review by reason.
// Read off the statuses the loop records (before → after), so local and cluster mode count the same way.
import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import type { AgentTaskStatus } from '../api/agent-task.ts';

export class ResumeMetrics {
  readonly autoResumes: Counter;
  readonly manualResumes: Counter;
  readonly needingReview: Gauge;
  /** Per task: the namespace and reason it is counted under while in NeedsReview. */
  private readonly reviewTasks = new Map<string, { namespace: string; reason: string }>();

  constructor(registry: Registry) {
    this.autoResumes = new Counter({
      name: 'episodic_auto_resumes_total',
      help: 'NeedsReview tasks resumed by their spec.resume policy',
      labelNames: ['namespace', 'policy'],
      registers: [registry],
    });
    this.manualResumes = new Counter({
      name: 'episodic_manual_resumes_total',
      help: 'NeedsReview tasks resumed by a person (episodic resume, the episodic.dev/resume annotation)',
      labelNames: ['namespace'],
      registers: [registry],
    });
    this.needingReview = new Gauge({
      name: 'episodic_tasks_needing_review',
      help: 'Tasks in NeedsReview, by reason (CircuitOpen, MaxEpisodesReached, BudgetExceeded…)',
      labelNames: ['namespace', 'reason'],
      registers: [registry],
    });
  }

  observeResume(namespace: string, before: AgentTaskStatus | undefined, after: AgentTaskStatus): void {
    const resumedAt = after.resume?.lastResumeAt;
    if (!resumedAt || resumedAt === before?.resume?.lastResumeAt) return;
    const by = after.resume?.lastResumeBy ?? '';
    if (by.startsWith('policy:')) this.autoResumes.inc({ namespace, policy: by.slice('policy:'.length) });
    else this.manualResumes.inc({ namespace });
  }

  /** The task's current status (undefined: it is gone); moves it between the review reasons. */
  trackReview(key: string, namespace: string, status: AgentTaskStatus | undefined): void {
    const was = this.reviewTasks.get(key);
    const now = status?.phase === 'NeedsReview' ? { namespace, reason: status.reason ?? 'Unknown' } : undefined;
    if (was?.namespace === now?.namespace && was?.reason === now?.reason) return;
    if (was) this.needingReview.dec(was);
    if (now) this.needingReview.inc(now);
    if (now) this.reviewTasks.set(key, now);
    else this.reviewTasks.delete(key);
  }
}
