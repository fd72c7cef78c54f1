/** The cloud's one migration set, for SQLite and PostgreSQL alike. */
import { columns, type MigrationSet } from '@rgbx/store';
import { type Kysely, sql } from 'kysely';

export const cloudMigrations: MigrationSet = (dialect) => {
  const ts = sql.raw(columns.timestamp(dialect));
  const serial = sql.raw(columns.serial(dialect));
  return {
    '0001_cloud': {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('accounts')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('name', 'text', (c) => c.notNull().unique())
          .addColumn('created_at', ts, (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('api_tokens')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('secret_hash', 'text', (c) => c.notNull())
          .addColumn('created_at', ts, (c) => c.notNull())
          .addColumn('last_used_at', ts)
          .addColumn('revoked_at', ts)
          .execute();
        await db.schema
          .createTable('signing_keys')
          .addColumn('kid', 'text', (c) => c.primaryKey())
          .addColumn('private_pem', 'text', (c) => c.notNull())
          .addColumn('public_pem', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('created_at', ts, (c) => c.notNull())
          .addColumn('activated_at', ts)
          .addColumn('retired_at', ts)
          .execute();
        // At most one signing key is current.
        await sql`create unique index signing_keys_one_current on signing_keys (status) where status = 'current'`.execute(
          db,
        );
        await db.schema
          .createTable('nodes')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('network', 'text', (c) => c.notNull())
          .addColumn('webhook_url', 'text')
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('desired', 'text', (c) => c.notNull())
          .addColumn('pending_op', 'text')
          .addColumn('port', 'integer')
          .addColumn('pid', 'integer')
          .addColumn('started_at', ts)
          .addColumn('data_dir', 'text', (c) => c.notNull())
          .addColumn('restart_count', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('restart_window_start', ts)
          .addColumn('next_restart_at', ts)
          .addColumn('last_error', 'text')
          .addColumn('webhook_failing_since', ts)
          .addColumn('created_at', ts, (c) => c.notNull())
          .addColumn('updated_at', ts, (c) => c.notNull())
          .addColumn('deleted_at', ts)
          .execute();
        await sql`create unique index nodes_account_name on nodes (account_id, name) where deleted_at is null`.execute(
          db,
        );
        await db.schema
          .createTable('webhook_events')
          .addColumn('seq', serial, (c) => c.primaryKey())
          .addColumn('event_id', 'text', (c) => c.notNull().unique())
          .addColumn('account_id', 'text', (c) => c.notNull())
          .addColumn('node_id', 'text', (c) => c.notNull().references('nodes.id'))
          .addColumn('event_type', 'text', (c) => c.notNull())
          .addColumn('node_status', 'text', (c) => c.notNull())
          .addColumn('url', 'text', (c) => c.notNull())
          .addColumn('body', 'text', (c) => c.notNull())
          .addColumn('state', 'text', (c) => c.notNull())
          .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('next_attempt_at', ts, (c) => c.notNull())
          .addColumn('lease_until', ts)
          .addColumn('first_attempt_at', ts)
          .addColumn('delivered_at', ts)
          .addColumn('last_error', 'text')
          .addColumn('last_status_code', 'integer')
          .addColumn('created_at', ts, (c) => c.notNull())
          .execute();
        await db.schema
          .createIndex('webhook_events_node_state')
          .on('webhook_events')
          .columns(['node_id', 'state', 'seq'])
          .execute();
        await db.schema
          .createIndex('webhook_events_state_due')
          .on('webhook_events')
          .columns(['state', 'next_attempt_at'])
          .execute();
        await db.schema
          .createTable('webhook_attempts')
          .addColumn('id', serial, (c) => c.primaryKey())
          .addColumn('event_seq', 'bigint', (c) => c.notNull().references('webhook_events.seq'))
          .addColumn('attempt', 'integer', (c) => c.notNull())
          .addColumn('key_id', 'text', (c) => c.notNull())
          .addColumn('started_at', ts, (c) => c.notNull())
          .addColumn('finished_at', ts)
          .addColumn('duration_ms', 'integer')
          .addColumn('outcome', 'text', (c) => c.notNull())
          .addColumn('status_code', 'integer')
          .addColumn('error', 'text')
          .addColumn('response_snippet', 'text')
          .execute();
        await db.schema
          .createIndex('webhook_attempts_event')
          .on('webhook_attempts')
          .columns(['event_seq', 'attempt'])
          .execute();
      },
    },
    // The private part of a signing key is stored sealed (AES-256-GCM, see webhooks/key-vault.ts).
    // Rows written before are sealed by the service at its next start (`sealSigningKeys`).
    '0002_sealed_signing_keys': {
      async up(db: Kysely<unknown>) {
        await db.schema
          .alterTable('signing_keys')
          .renameColumn('private_pem', 'private_key_sealed')
          .execute();
      },
    },
    // The dispatcher's claim walks the pending events in sequence order and stops at its batch
    // size, instead of sorting all pending events each time. Additive: an index, nothing else.
    '0003_webhook_events_state_seq': {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createIndex('webhook_events_state_seq')
          .ifNotExists()
          .on('webhook_events')
          .columns(['state', 'seq'])
          .execute();
      },
    },
    // Several cloud instances on one PostgreSQL: the live instances (each renews its lease) and the
    // owner of each node (the one instance that reconciles it). Additive: a table and a column;
    // nodes without an owner are claimed by a live instance.
    '0004_cloud_instances': {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('cloud_instances')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('host_key', 'text', (c) => c.notNull())
          .addColumn('pid', 'integer', (c) => c.notNull())
          .addColumn('pid_start', 'text', (c) => c.notNull())
          .addColumn('driver', 'text', (c) => c.notNull())
          .addColumn('started_at', ts, (c) => c.notNull())
          .addColumn('heartbeat_at', ts, (c) => c.notNull())
          .addColumn('lease_until', ts, (c) => c.notNull())
          .execute();
        await db.schema.alterTable('nodes').addColumn('owner_id', 'text').execute();
        await db.schema.createIndex('nodes_owner').on('nodes').columns(['owner_id']).execute();
      },
    },
    // Every status a node took, written by `changeNode` in the status change's transaction (the
    // console's status chart, `GET …/status-history`), webhooks or not. Additive: a table.
    '0005_node_status_changes': {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('node_status_changes')
          .addColumn('id', serial, (c) => c.primaryKey())
          .addColumn('node_id', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('at', ts, (c) => c.notNull())
          .execute();
        await db.schema
          .createIndex('node_status_changes_node')
          .on('node_status_changes')
          .columns(['node_id', 'id'])
          .execute();
        await db.schema
          .createIndex('node_status_changes_at')
          .on('node_status_changes')
          .columns(['at'])
          .execute();
      },
    },
  };
};
