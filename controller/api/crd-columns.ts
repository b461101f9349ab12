// The columns `kubectl get` shows for each kind (additionalPrinterColumns of the CRDs in crd.ts).

export const triggerPrinterColumns = [
  { name: 'Active', type: 'integer', jsonPath: '.status.tasksActive' },
  { name: 'Created', type: 'integer', jsonPath: '.status.tasksCreated' },
  { name: 'Last Poll', type: 'date', jsonPath: '.status.lastPollAt' },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  { name: 'Next Poll', type: 'string', jsonPath: '.status.nextPollAt', priority: 1 },
  { name: 'Error', type: 'string', jsonPath: '.status.lastError', priority: 1 },
];

export const budgetPrinterColumns = [
  { name: 'Window', type: 'string', jsonPath: '.spec.window' },
  { name: 'Spent', type: 'number', jsonPath: '.status.spentUSD' },
  { name: 'Limit', type: 'number', jsonPath: '.spec.limitUSD' },
  { name: 'Remaining', type: 'number', jsonPath: '.status.remainingUSD' },
  { name: 'Held', type: 'integer', jsonPath: '.status.tasksHeld' },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  { name: 'Frees At', type: 'string', jsonPath: '.status.windowFreesAt', priority: 1 },
];

export const printerColumns = [
  { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
  { name: 'Episodes', type: 'integer', jsonPath: '.status.episodes' },
  { name: 'Cost', type: 'number', jsonPath: '.status.costUSD' },
  { name: 'Reason', type: 'string', jsonPath: '.status.reason' },
  { name: 'Step', type: 'string', jsonPath: '.status.step.summary' },
  { name: 'Progress', type: 'string', jsonPath: '.status.progress.summary' },
  // A spawned child names its parent (the label the controller sets with the ownerReference).
  { name: 'Parent', type: 'string', jsonPath: String.raw`.metadata.labels.episodic\.dev/parent` },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  // priority 1: only with `kubectl get -o wide`.
  { name: 'Last Outcome', type: 'string', jsonPath: '.status.lastEpisode.outcome', priority: 1 },
  // A string, not a date: kubectl renders future dates as "<invalid>".
  { name: 'Next Episode', type: 'string', jsonPath: '.status.nextEpisodeAt', priority: 1 },
];

export const episodePrinterColumns = [
  { name: 'Task', type: 'string', jsonPath: '.record.task' },
  { name: 'Episode', type: 'integer', jsonPath: '.record.number' },
  { name: 'Outcome', type: 'string', jsonPath: '.record.outcome' },
  { name: 'Cost', type: 'number', jsonPath: '.record.costUSD' },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  { name: 'Score', type: 'integer', jsonPath: '.record.completionScore', priority: 1 },
  { name: 'Exit', type: 'integer', jsonPath: '.record.exitCode', priority: 1 },
  { name: 'Reason', type: 'string', jsonPath: '.record.reason', priority: 1 },
  { name: 'Commit', type: 'string', jsonPath: '.record.evidence.workspace.commit', priority: 1 },
  { name: 'Message', type: 'string', jsonPath: '.record.message', priority: 1 },
  { name: 'Step', type: 'string', jsonPath: '.record.step', priority: 1 },
];

export const credentialsPrinterColumns = [
  { name: 'Provider', type: 'string', jsonPath: '.spec.provider' },
  { name: 'Default', type: 'boolean', jsonPath: '.spec.default' },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
];
