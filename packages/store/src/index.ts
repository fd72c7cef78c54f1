export { bigintNumber } from './bigint-column.ts';
export type { DatabaseLogger, Dialect, MigrationSet, OpenedDatabase } from './database.ts';
export {
  columns,
  isUniqueViolation,
  migrateToLatest,
  openDatabase,
  openMigratedDatabase,
  ping,
  redactUrl,
} from './database.ts';
export { createTestPgDatabase, TEST_PG_URL } from './testing.ts';
