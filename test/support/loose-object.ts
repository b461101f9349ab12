// Tests assert on whatever field of an object they fetch; the controller's own types are strict
// (controller/kube/objects.ts), so the test helpers hand out this loose view of the same objects.
import type { KubeObject } from '../../controller/kube/objects.ts';

export type LooseObject = KubeObject & Record<string, any>;
