// A small list+watch cache (client-go's Reflector + Indexer), written here because client-node's
// makeInformer/ListWatch stops for good on most watch errors (it only reports them) and has no watchdog
// for a connection that stays open but goes silent. Behaviour:
//   * paginated list, then watch from the list's resourceVersion with allowWatchBookmarks;
//   * 410 Gone (HTTP status or an ERROR event) → relist;
//   * any other error → re-watch from the last resourceVersion after exponential backoff;
//   * no event and no bookmark for watchdogMs → abort the stream and re-watch;
//   * a normal end (server-side timeoutSeconds) → re-watch at once.
// Every restart is reported through onRestart(cause) so it can be counted.
import { API_RETRY, retryDelayMs } from '../util/retry-delay.ts';
import { KubeError } from './kube-client.ts';
import type { KubeClient, WatchHandle } from './kube-client.ts';
import type { KubeList, KubeObject } from './objects.ts';

/** The server-side watch timeout when none is given (each watch picks a value in [t, 2t)). */
export const WATCH_TIMEOUT_SECONDS = 300;

export type WatchRestartCause = 'gone' | 'error' | 'silent';

export interface InformerHandlers<T> {
  add?(obj: T): void;
  update?(old: T, obj: T): void;
  delete?(obj: T): void;
}

export interface InformerOptions {
  client: KubeClient;
  /** For metrics and logs, e.g. "agenttasks". */
  resource: string;
  /** Collection path, e.g. /api/v1/pods or /api/v1/namespaces/ns/pods. */
  path: string;
  labelSelector?: string;
  pageSize?: number;
  /** Server-side watch timeout; each watch picks a random value in [t, 2t) so watches don't restart in step. */
  watchTimeoutSeconds?: number;
  /** Silence (no event, no bookmark) longer than this restarts the watch. */
  watchdogMs?: number;
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  onRestart?(cause: WatchRestartCause, err: unknown): void;
}

class WatchdogError extends Error {}

export function objectKey(obj: KubeObject): string {
  return obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name;
}

/** resourceVersions are opaque, but in practice etcd revisions: compare numerically when both are. */
function isNewer(candidate: string | undefined, current: string | undefined): boolean {
  if (!candidate || !current) return true;
  if (/^\d+$/.test(candidate) && /^\d+$/.test(current)) return BigInt(candidate) > BigInt(current);
  return candidate !== current;
}

export class Informer<T extends KubeObject> {
  private readonly store = new Map<string, T>();
  private readonly indexers = new Map<string, (obj: T) => string[]>();
  private readonly indexes = new Map<string, Map<string, Set<string>>>();
  private readonly handlers: InformerHandlers<T>[] = [];
  private resourceVersion = '';
  private synced = false;
  private syncWaiters: Array<() => void> = [];
  private stopped = true;
  private current: WatchHandle | undefined;
  private wakeSleep: (() => void) | undefined;
  private failures = 0;
  private readonly opts: InformerOptions;

  constructor(opts: InformerOptions) {
    this.opts = opts;
  }

  on(handlers: InformerHandlers<T>): void {
    this.handlers.push(handlers);
  }

  addIndex(name: string, fn: (obj: T) => string[]): void {
    this.indexers.set(name, fn);
    this.indexes.set(name, new Map());
    for (const [key, obj] of this.store) this.index(key, undefined, obj);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    this.current?.abort(new Error('informer stopped'));
    this.wakeSleep?.();
  }

  hasSynced(): boolean {
    return this.synced;
  }

  waitForSync(): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  get(key: string): T | undefined {
    return this.store.get(key);
  }

  list(): IterableIterator<T> {
    return this.store.values();
  }

  get size(): number {
    return this.store.size;
  }

  byIndex(name: string, value: string): T[] {
    const keys = this.indexes.get(name)?.get(value);
    if (!keys) return [];
    return [...keys].map((k) => this.store.get(k) as T);
  }

  /** Read-your-writes: put an object the API just returned into the cache unless the cache is newer. */
  upsert(obj: T): void {
    this.apply('MODIFIED', this.transform(obj));
  }

  /** Abort the current watch as if it failed (tests and diagnostics). */
  restartWatch(reason = 'restart requested'): void {
    this.current?.abort(new KubeError(0, 'Restart', reason));
  }

  /** Forget the resourceVersion so the next watch starts from an old one (tests: provoke a 410). */
  setResourceVersion(rv: string): void {
    this.resourceVersion = rv;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        if (!this.resourceVersion) await this.relist();
        await this.watchOnce();
      } catch (err) {
        if (this.stopped) break;
        const cause = classify(err);
        this.opts.onRestart?.(cause, err);
        if (cause === 'gone') this.resourceVersion = '';
        // The first 410 or silent stream re-lists/re-watches at once; repeats back off like errors.
        if (cause !== 'error' && this.failures === 0) {
          this.failures++;
          continue;
        }
        const backoff = {
          initialMs: this.opts.backoffInitialMs ?? API_RETRY.initialMs,
          factor: API_RETRY.factor,
          maxMs: this.opts.backoffMaxMs ?? API_RETRY.maxMs,
        };
        await this.sleep(retryDelayMs(backoff, ++this.failures, Math.random()));
      }
    }
  }

  private async relist(): Promise<void> {
    const items: T[] = [];
    let cont: string | undefined;
    let listRv = '';
    do {
      const page = await this.opts.client.get<KubeList<T>>(this.opts.path, {
        limit: this.opts.pageSize ?? 500,
        continue: cont,
        labelSelector: this.opts.labelSelector,
      });
      if (!listRv) listRv = page.metadata?.resourceVersion ?? '';
      for (const item of page.items ?? []) items.push(this.transform(item));
      cont = page.metadata?.continue || undefined;
    } while (cont && !this.stopped);
    const seen = new Set<string>();
    for (const item of items) {
      seen.add(objectKey(item));
      this.apply('MODIFIED', item);
    }
    for (const [key, obj] of [...this.store]) if (!seen.has(key)) this.apply('DELETED', obj);
    this.resourceVersion = listRv;
    if (!this.synced) {
      this.synced = true;
      for (const waiter of this.syncWaiters.splice(0)) waiter();
    }
  }

  private async watchOnce(): Promise<void> {
    const base = this.opts.watchTimeoutSeconds ?? WATCH_TIMEOUT_SECONDS;
    const watchdogMs = this.opts.watchdogMs ?? (2 * base + 30) * 1000;
    let watchdog: NodeJS.Timeout | undefined;
    let handle: WatchHandle | undefined;
    const arm = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(
        () => handle?.abort(new WatchdogError(`no event or bookmark for ${watchdogMs} ms`)),
        watchdogMs,
      );
    };
    handle = await this.opts.client.watch<T>(
      this.opts.path,
      {
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: Math.floor(base + Math.random() * base),
        labelSelector: this.opts.labelSelector,
      },
      (event) => {
        arm();
        if (event.type === 'ERROR') {
          const status = event.object ?? {};
          handle?.abort(
            new KubeError(Number(status.code) || 500, status.reason, `watch error: ${status.message ?? 'unknown'}`),
          );
          return;
        }
        this.failures = 0;
        const rv = event.object?.metadata?.resourceVersion;
        if (event.type !== 'BOOKMARK') this.apply(event.type, this.transform(event.object));
        if (rv) this.resourceVersion = rv;
      },
    );
    this.current = handle;
    if (this.stopped) handle.abort(new Error('informer stopped'));
    arm();
    try {
      await handle.done;
    } finally {
      clearTimeout(watchdog);
      this.current = undefined;
    }
  }

  private apply(type: string, obj: T): void {
    const key = objectKey(obj);
    const old = this.store.get(key);
    if (type === 'DELETED') {
      if (!old) return;
      this.store.delete(key);
      this.index(key, old, undefined);
      for (const h of this.handlers) h.delete?.(old);
      return;
    }
    if (old && !isNewer(obj.metadata.resourceVersion, old.metadata.resourceVersion)) return;
    this.store.set(key, obj);
    this.index(key, old, obj);
    for (const h of this.handlers) old ? h.update?.(old, obj) : h.add?.(obj);
  }

  private index(key: string, old: T | undefined, obj: T | undefined): void {
    for (const [name, fn] of this.indexers) {
      const byValue = this.indexes.get(name) as Map<string, Set<string>>;
      for (const value of old ? fn(old) : []) {
        const keys = byValue.get(value);
        keys?.delete(key);
        if (keys?.size === 0) byValue.delete(value);
      }
      for (const value of obj ? fn(obj) : []) {
        let keys = byValue.get(value);
        if (!keys) byValue.set(value, (keys = new Set()));
        keys.add(key);
      }
    }
  }

  /** managedFields are often half of an object's size and we never read them. */
  private transform(obj: T): T {
    if (obj?.metadata?.managedFields) delete obj.metadata.managedFields;
    return obj;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wakeSleep = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

function classify(err: unknown): WatchRestartCause {
  if (err instanceof WatchdogError) return 'silent';
  if (err instanceof KubeError && (err.status === 410 || err.reason === 'Expired' || err.reason === 'Gone'))
    return 'gone';
  return 'error';
}
