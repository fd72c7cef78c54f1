/**
 * Wallet node request/response schemas of the backup and restore routes (re-exported by `wallet-node.ts`).
 * `RestoreRequest` describes the multipart/form-data body: its text fields are read like a JSON body, its file
 * part is uploaded to the node and handed to rgb-lib by path.
 */
import { type Static, Type } from 'typebox';

const Binary = (description: string) => Type.String({ format: 'binary', description });

// ---------- backup / restore ----------

export const BackupRequest = Type.Object(
  {
    password: Type.String({
      minLength: 8,
      maxLength: 1024,
      description:
        'encrypts the backup (rgb-lib: scrypt key derivation, XChaCha20-Poly1305); at least 8 characters. ' +
        'The node never stores it: a backup whose password is lost cannot be restored.',
    }),
  },
  { $id: 'BackupRequest' },
);

export const WalletBackupResponse = Type.Object(
  {
    message: Type.String({ description: '"Backup created successfully"' }),
    backup_id: Type.String({ description: 'random, unguessable id of this backup' }),
    download_url: Type.String({
      description:
        'path of the download on this node, `/wallet/backup/<backup_id>` (GET with the same headers)',
    }),
    expires_at: Type.Integer({ description: 'unix seconds; the file is deleted then (or when replaced)' }),
    size: Type.Integer({ minimum: 0, description: 'bytes of the backup file' }),
  },
  { $id: 'WalletBackupResponse' },
);

export const RestoreRequest = Type.Object(
  {
    file: Binary('the encrypted rgb-lib backup file (as downloaded from GET /wallet/backup/{backup_id})'),
    password: Type.String({
      minLength: 1,
      maxLength: 1024,
      description: 'the password the backup was made with',
    }),
    xpub_van: Type.Optional(
      Type.String({ maxLength: 200, description: 'vanilla account xpub (default: the xpub-van header)' }),
    ),
    xpub_col: Type.Optional(
      Type.String({ maxLength: 200, description: 'colored account xpub (default: the xpub-col header)' }),
    ),
    master_fingerprint: Type.Optional(
      Type.String({
        maxLength: 200,
        description: 'master fingerprint (default: the master-fingerprint header)',
      }),
    ),
  },
  { $id: 'RestoreRequest' },
);

export const WalletRestoreResponse = Type.Object(
  {
    message: Type.String({ description: '"Wallet restored successfully"' }),
    master_fingerprint: Type.String({ description: 'the restored wallet (lowercase)' }),
  },
  { $id: 'WalletRestoreResponse' },
);

/** Named schemas of these routes, added to WALLET_NODE_SCHEMAS (OpenAPI components). */
export const BACKUP_SCHEMAS = [
  BackupRequest,
  WalletBackupResponse,
  RestoreRequest,
  WalletRestoreResponse,
] as const;

export type BackupRequestT = Static<typeof BackupRequest>;
export type WalletBackupResponseT = Static<typeof WalletBackupResponse>;
export type RestoreRequestT = Static<typeof RestoreRequest>;
export type WalletRestoreResponseT = Static<typeof WalletRestoreResponse>;
