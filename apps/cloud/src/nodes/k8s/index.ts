/** Builds the Kubernetes driver from the configuration (`[backend] driver = "kubernetes"`, `[kubernetes]`). */
import { KubeConfig } from '@kubernetes/client-node';
import { ConfigError, type Logger } from '@rgbx/service-kit';
import type { CloudConfig } from '../../config.ts';
import type { NodeBackend } from '../driver.ts';
import { KubernetesDriver } from './driver.ts';
import type { K8sSettings } from './manifests.ts';

export { classifyPod, KubernetesDriver, toClientModel } from './driver.ts';
export * from './manifests.ts';

export function k8sSettings(cfg: Pick<CloudConfig, 'kubernetes' | 'nodes'>): K8sSettings {
  const k = cfg.kubernetes;
  return {
    image: k.image,
    imagePullPolicy: k.image_pull_policy,
    cloudNamespace: k.cloud_namespace,
    cloudPodLabels: k.cloud_pod_labels,
    namespacePrefix: k.namespace_prefix,
    port: k.port,
    ...(k.metrics_port > 0
      ? {
          metrics: {
            port: k.metrics_port,
            scrapeNamespace: k.metrics_scrape_namespace,
            scrapePodLabels: k.metrics_scrape_pod_labels,
          },
        }
      : {}),
    storageSize: k.storage_size,
    ...(k.storage_class ? { storageClass: k.storage_class } : {}),
    stopGraceSeconds: Math.max(1, Math.ceil(cfg.nodes.stop_grace_ms / 1000)),
    resources: {
      requests: { cpu: k.cpu_request, memory: k.memory_request },
      limits: { cpu: k.cpu_limit, memory: k.memory_limit },
    },
  };
}

/** In-cluster credentials when running in a pod, else the kubeconfig (file, $KUBECONFIG, ~/.kube/config). */
export function loadKubeConfig(cfg: Pick<CloudConfig, 'kubernetes'>): KubeConfig {
  const kc = new KubeConfig();
  const k = cfg.kubernetes;
  try {
    if (k.kubeconfig) kc.loadFromFile(k.kubeconfig);
    else kc.loadFromDefault();
    if (k.context) kc.setCurrentContext(k.context);
  } catch (err) {
    throw new ConfigError([
      {
        path: 'kubernetes.kubeconfig',
        message: `cannot load Kubernetes credentials: ${(err as Error).message}`,
      },
    ]);
  }
  if (!kc.getCurrentCluster())
    throw new ConfigError([
      {
        path: 'kubernetes.kubeconfig',
        message:
          'no Kubernetes cluster: run in a pod (in-cluster credentials) or set "kubernetes.kubeconfig"',
      },
    ]);
  return kc;
}

export function createKubernetesDriver(
  cfg: Pick<CloudConfig, 'kubernetes' | 'nodes'>,
  backend: () => NodeBackend,
  logger: Logger,
): KubernetesDriver {
  return new KubernetesDriver({
    kubeConfig: loadKubeConfig(cfg),
    settings: k8sSettings(cfg),
    backend,
    logger,
  });
}
