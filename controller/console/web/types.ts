// The shapes the console API serves (controller/console/views.ts), as the page uses them.
export type { BudgetView, ConsoleEvent, TaskDetail, TaskRow } from '../views.ts';
