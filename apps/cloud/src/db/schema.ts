/**
 * Table types. Times are milliseconds since the epoch (`bigint` columns: PostgreSQL returns them as
 * strings, so reads go through `@rgbx/store`'s `bigintNumber()`).
 */
import type { Generated, Kysely } from 'kysely';

export type NodeStatus = 'RUNNING' | 'STARTING' | 'PAUSED' | 'FAILED' | 'IN_PROGRESS';
export type DesiredState = 'running' | 'paused' | 'deleted';
export type EventState = 'pending' | 'delivered' | 'abandoned';
export type AttemptOutcome =
  | 'in_flight'
  | 'success'
  | 'http_error'
  | 'network_error'
  | 'timeout'
  | 'blocked'
  | 'interrupted';
export type KeyStatus = 'published' | 'current' | 'retired';

type Ms = number | string;

export interface AccountsTable {
  id: string;
  name: string;
  created_at: Ms;
}

export interface ApiTokensTable {
  id: string;
  account_id: string;
  name: string;
  /** SHA-256 (hex) of the token's secret part; the token itself is never stored. */
  secret_hash: string;
  created_at: Ms;
  last_used_at: Ms | null;
  revoked_at: Ms | null;
}

export interface SigningKeysTable {
  kid: string;
  /**
   * The PKCS#8 PEM sealed with AES-256-GCM (`rgbxc-sk1.…`, webhooks/key-vault.ts); `''` once retired.
   * A plain PEM here (written before 0002) is sealed at the next start.
   */
  private_key_sealed: string;
  public_pem: string;
  status: KeyStatus;
  created_at: Ms;
  activated_at: Ms | null;
  retired_at: Ms | null;
}

export interface NodesTable {
  id: string;
  account_id: string;
  name: string;
  network: string;
  webhook_url: string | null;
  status: NodeStatus;
  desired: DesiredState;
  /** `restart` while a restart operation is pending. */
  pending_op: string | null;
  port: number | null;
  pid: number | null;
  started_at: Ms | null;
  data_dir: string;
  restart_count: number;
  restart_window_start: Ms | null;
  next_restart_at: Ms | null;
  last_error: string | null;
  webhook_failing_since: Ms | null;
  created_at: Ms;
  updated_at: Ms;
  deleted_at: Ms | null;
  /** The cloud instance that reconciles this node (`cloud_instances.id`); null: to be claimed. */
  owner_id: string | null;
}

/** A running cloud instance; it renews `lease_until` (database clock) while it lives. */
export interface CloudInstancesTable {
  id: string;
  /** A label for logs and errors (hostname:pid). */
  name: string;
  /** Machine and pid namespace (`<boot id>/<pid namespace>`): where `pid` means something. */
  host_key: string;
  pid: number;
  /** The process's start time (`/proc/<pid>/stat` field 22): a recycled pid is not the instance. */
  pid_start: string;
  /** `local` or `kubernetes`. */
  driver: string;
  started_at: Ms;
  heartbeat_at: Ms;
  lease_until: Ms;
}

export interface WebhookEventsTable {
  seq: Generated<number | string>;
  event_id: string;
  account_id: string;
  node_id: string;
  event_type: string;
  node_status: string;
  url: string;
  /** The exact JSON bytes (UTF-8) sent on every attempt. */
  body: string;
  state: EventState;
  attempts: number;
  next_attempt_at: Ms;
  lease_until: Ms | null;
  first_attempt_at: Ms | null;
  delivered_at: Ms | null;
  last_error: string | null;
  last_status_code: number | null;
  created_at: Ms;
}

export interface WebhookAttemptsTable {
  id: Generated<number | string>;
  event_seq: number | string;
  attempt: number;
  key_id: string;
  started_at: Ms;
  finished_at: Ms | null;
  duration_ms: number | null;
  outcome: AttemptOutcome;
  status_code: number | null;
  error: string | null;
  response_snippet: string | null;
}

/** One status a node took (written with the change, by `changeNode`). */
export interface NodeStatusChangesTable {
  id: Generated<number | string>;
  node_id: string;
  status: NodeStatus;
  at: Ms;
}

export interface CloudDatabase {
  accounts: AccountsTable;
  api_tokens: ApiTokensTable;
  signing_keys: SigningKeysTable;
  nodes: NodesTable;
  cloud_instances: CloudInstancesTable;
  webhook_events: WebhookEventsTable;
  webhook_attempts: WebhookAttemptsTable;
  node_status_changes: NodeStatusChangesTable;
}

export type CloudDb = Kysely<CloudDatabase>;
