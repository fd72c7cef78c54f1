/**
 * How the cloud runs nodes. The supervisor only talks to a `NodeDriver`; the local process driver
 * runs each node as a wallet-node process on this machine, and `docs/kubernetes-driver.md`
 * describes a Kubernetes implementation of the same interface.
 */

/** What to run: one wallet node. */
export interface NodeSpec {
  nodeId: string;
  /** The node's account (the Kubernetes driver runs each account's nodes in a namespace of its own). */
  accountId: string;
  network: string;
  /** Directory owned by this node (its wallet data, config and logs for the local driver). */
  dataDir: string;
  /** A port the previous incarnation used, reused when free so clients keep their address. */
  preferredPort?: number;
}

/** Where a started node runs: persisted in the node's row, used to re-adopt after a restart. */
export interface NodeRuntime {
  pid: number;
  port: number;
}

/** What a probe found. */
export type Probe = 'healthy' | 'unhealthy' | 'gone';

export interface NodeDriver {
  /** Starts the node; resolves once it is launched (not yet healthy). Never starts a second copy of a live one. */
  start(spec: NodeSpec): Promise<NodeRuntime>;
  /** Liveness + health: `gone` when the process no longer exists (or is not ours), `unhealthy` when its health check fails. */
  probe(spec: NodeSpec, runtime: NodeRuntime): Promise<Probe>;
  /** Graceful stop (then forced after `graceMs`); data stays. Idempotent. */
  stop(spec: NodeSpec, runtime: NodeRuntime | undefined, graceMs: number): Promise<void>;
  /** Deletes the node's data (after `stop`). */
  destroy(spec: NodeSpec): Promise<void>;
  /** Called when the process exits while this driver instance watches it (faster than polling). */
  onExit?(listener: (nodeId: string, pid: number) => void): void;
  /** The node's wallet API as reported to users (default `http://127.0.0.1:<port>`). */
  apiUrl?(spec: NodeSpec, runtime: NodeRuntime): string;
  /** Releases what the driver holds (a watch). */
  close?(): Promise<void>;
}

/**
 * The backends a node points at (the devnet's by default). There is deliberately no bitcoind RPC
 * password: the wallet node never reads it, so hosted nodes' configs do not carry it.
 */
export interface NodeBackend {
  btcRpcAddress: string;
  btcRpcUser: string;
  indexerAddress: string;
  proxyAddress: string[];
}
