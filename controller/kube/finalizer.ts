// A finalizer on objects of one kind: while it is on an object, deleting the object only marks it, so a
// controller gets to clean up after it (ownerReferences alone need a garbage collector, which a bare
// control plane does not run). Metadata only: the spec is never written.
//
// Server-side apply, with our field manager owning just this one list item: no resourceVersion
// precondition to lose against status writes racing it, and other finalizers are never touched.
import { FIELD_MANAGER, isStatus } from './kube-client.ts';
import type { KubeClient } from './kube-client.ts';
import type { KubeObject } from './objects.ts';
import type { Lane } from './rate-limiter.ts';

const APPLY_PATCH = 'application/apply-patch+yaml';

export interface FinalizerOptions {
  /** The finalizer's name, e.g. "example.dev/cleanup". */
  name: string;
  apiVersion: string;
  kind: string;
  /** The API path of one object of the kind. */
  path(namespace: string, name: string): string;
}

export class Finalizer {
  private readonly opts: FinalizerOptions;

  constructor(opts: FinalizerOptions) {
    this.opts = opts;
  }

  isOn(obj: KubeObject): boolean {
    return (obj.metadata.finalizers ?? []).includes(this.opts.name);
  }

  add(client: KubeClient, obj: KubeObject, lane: Lane = 'bookkeeping'): Promise<KubeObject | undefined> {
    return this.apply(client, obj, [this.opts.name], lane);
  }

  /**
   * Applying without the item drops it when we alone own it. If someone else also claims it (it was
   * written by hand, say), fall back to rewriting the list under a resourceVersion precondition.
   */
  async remove(client: KubeClient, obj: KubeObject, lane: Lane = 'work'): Promise<KubeObject | undefined> {
    const applied = await this.apply(client, obj, [], lane);
    if (!applied || !this.isOn(applied)) return applied;
    const finalizers = (applied.metadata.finalizers ?? []).filter((f) => f !== this.opts.name);
    const { namespace, name, resourceVersion } = applied.metadata;
    return client.mergePatch(
      this.opts.path(namespace as string, name),
      { metadata: { finalizers, resourceVersion } },
      lane,
    );
  }

  private async apply(
    client: KubeClient,
    obj: KubeObject,
    finalizers: string[],
    lane: Lane,
  ): Promise<KubeObject | undefined> {
    const { name, namespace, uid } = obj.metadata;
    // uid: never apply to a newer object that reuses the name.
    const body = {
      apiVersion: this.opts.apiVersion,
      kind: this.opts.kind,
      metadata: { name, namespace, uid, finalizers },
    };
    try {
      return await client.request('PATCH', this.opts.path(namespace as string, name), {
        body,
        lane,
        contentType: APPLY_PATCH,
        query: { fieldManager: FIELD_MANAGER, force: true },
      });
    } catch (err) {
      if (isStatus(err, 404) || isStatus(err, 409)) return undefined;
      throw err;
    }
  }
}
