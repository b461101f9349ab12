// A resume request on a cluster (api/resume.ts): the resume annotations set by a merge patch of metadata only,
// so nothing else of the object changes (spec never). `episodic resume --kubeconfig`, the console and a
// trigger's `/episodic resume` comment all write it here; agent-task-source.ts reads it back.
import { API_VERSION } from '../../api/agent-task.ts';
import { resumeAnnotations } from '../../api/resume.ts';
import type { NewResumeRequest } from '../../api/resume.ts';
import type { KubeClient } from '../../kube/kube-client.ts';
import { taskPath } from '../../kube/names.ts';

/** Sets the task's resume annotations; throws what the apiserver answered (a KubeError 404: no such task). */
export async function requestClusterResume(
  client: KubeClient,
  namespace: string,
  name: string,
  request: NewResumeRequest,
): Promise<void> {
  await client.mergePatch(taskPath(namespace, name), {
    apiVersion: API_VERSION,
    metadata: { annotations: resumeAnnotations(request) },
  });
}
