/**
 * Types of rgb-lib 0.3.0-beta.7 values as returned by the (camelCase) c-ffi after lossless parsing
 * (see `json.ts`): u64 quantities are `bigint`, other integers `number`.
 */

export type BitcoinNetwork = 'Mainnet' | 'Testnet' | 'Testnet4' | 'Signet' | 'SignetCustom' | 'Regtest';
export type WitnessVersion = 'SegWitV0' | 'Taproot';
export type AssetSchema = 'Nia' | 'Cfa' | 'Uda' | 'Ifa';

/** Result of `generateKeys` / `restoreKeys`. Contains the mnemonic: keep it out of the service. */
export interface Keys {
  mnemonic: string;
  xpub: string;
  accountXpubVanilla: string;
  accountXpubColored: string;
  masterFingerprint: string;
  witnessVersion: WitnessVersion;
}

/** What a watch-only wallet needs: the two account xpubs, the master fingerprint and the witness version. */
export interface WatchOnlyKeys {
  accountXpubVanilla: string;
  accountXpubColored: string;
  masterFingerprint: string;
  /** Always explicit: rgb-lib silently defaults to Taproot and cannot infer it from an xpub. */
  witnessVersion: WitnessVersion;
}

export interface Online {
  /** rgb-lib's online id (a nanosecond timestamp, > 2^53). */
  id: bigint;
}

export interface Balance {
  settled: bigint;
  future: bigint;
  spendable: bigint;
}

export interface BtcBalance {
  vanilla: Balance;
  colored: Balance;
}

/** An RGB assignment as returned by rgb-lib. */
export type Assignment =
  | { Fungible: bigint }
  | { InflationRight: bigint }
  | 'NonFungible'
  | 'ReplaceRight'
  | 'Any';

export interface Outpoint {
  txid: string;
  vout: number;
}

export interface Utxo {
  outpoint: Outpoint;
  btcAmount: bigint;
  colorable: boolean;
  exists: boolean;
}

export interface RgbAllocation {
  assetId: string | null;
  assignment: Assignment;
  settled: boolean;
}

export interface Unspent {
  utxo: Utxo;
  rgbAllocations: RgbAllocation[];
  pendingBlinded: number;
}

export interface BlockTime {
  height: number;
  timestamp: number;
}

export type TransactionType = 'RgbSend' | 'Drain' | 'CreateUtxos' | 'User' | 'Incoming';

export interface Transaction {
  transactionType: TransactionType;
  txid: string;
  received: bigint;
  sent: bigint;
  fee: bigint;
  confirmationTime: BlockTime | null;
}

export interface Media {
  filePath: string;
  digest: string;
  mime: string;
}

export interface AssetNia {
  assetId: string;
  ticker: string;
  name: string;
  details: string | null;
  precision: number;
  issuedSupply: bigint;
  timestamp: number;
  addedAt: number;
  balance: Balance;
  media: Media | null;
}

/** A CFA asset (collectible fungible: name, no ticker, optional media). */
export interface AssetCfa {
  assetId: string;
  name: string;
  details: string | null;
  precision: number;
  issuedSupply: bigint;
  timestamp: number;
  addedAt: number;
  balance: Balance;
  media: Media | null;
}

/** A UDA token's data (index, media, attachments by index, reserves). */
export interface TokenLight {
  index: number;
  ticker: string | null;
  name: string | null;
  details: string | null;
  embeddedMedia: boolean;
  media: Media | null;
  attachments: Record<string, Media>;
  reserves: boolean;
}

/** A UDA asset (unique digital asset: one token). */
export interface AssetUda {
  assetId: string;
  ticker: string;
  name: string;
  details: string | null;
  precision: number;
  timestamp: number;
  addedAt: number;
  balance: Balance;
  token: TokenLight | null;
}

/** An IFA asset (inflatable fungible). */
export interface AssetIfa extends AssetNia {
  initialSupply: bigint;
  maxSupply: bigint;
  knownCirculatingSupply: bigint;
  rejectListUrl: string | null;
}

/** `listAssets` result: one list per schema (null when the schema was filtered out). */
export interface Assets {
  nia: AssetNia[] | null;
  uda: AssetUda[] | null;
  cfa: AssetCfa[] | null;
  ifa: AssetIfa[] | null;
}

export interface ReceiveData {
  invoice: string;
  recipientId: string;
  expirationTimestamp: number | null;
  batchTransferIdx: number;
}

export type TransferStatus =
  | 'Initiated'
  | 'WaitingCounterparty'
  | 'WaitingSafeHeight'
  | 'WaitingBroadcast'
  | 'WaitingConfirmations'
  | 'Settled'
  | 'Failed';

/** Statuses `refresh` can be filtered on. */
export type RefreshableStatus =
  | 'WaitingCounterparty'
  | 'WaitingSafeHeight'
  | 'WaitingBroadcast'
  | 'WaitingConfirmations';

export interface RefreshFilter {
  status: RefreshableStatus;
  incoming: boolean;
}

export interface RefreshedTransfer {
  updatedStatus: TransferStatus | null;
  failure: string | null;
}

export type TransferKind = 'Issuance' | 'ReceiveBlind' | 'ReceiveWitness' | 'Send' | 'Inflation' | 'Burn';

export interface TransferTransportEndpoint {
  endpoint: string;
  transportType: string;
  used: boolean;
}

export interface Transfer {
  idx: number;
  batchTransferIdx: number;
  createdAt: number;
  updatedAt: number;
  status: TransferStatus;
  requestedAssignment: Assignment | null;
  assignments: Assignment[];
  kind: TransferKind;
  txid: string | null;
  recipientId: string | null;
  receiveUtxo: Outpoint | null;
  changeUtxo: Outpoint | null;
  expirationTimestamp: number | null;
  transportEndpoints: TransferTransportEndpoint[];
  invoiceString: string | null;
  consignmentPath: string | null;
  psbtPath: string | null;
  [key: string]: unknown;
}

export interface SendDetails {
  fasciaPath: string;
  minConfirmations: number;
  /** u64 above 2^53: `wrapper.js` would round it; here it is exact. */
  entropy: bigint;
  isDonation: boolean;
}

export interface SendBeginResult {
  psbt: string;
  batchTransferIdx: number | null;
  details: SendDetails;
}

export interface OperationResult {
  txid: string;
  batchTransferIdx: number;
  entropy: bigint;
}

export type SyncStrategy = 'FullScan' | 'FullSync' | 'FastSync';

export interface SyncOptions {
  /** `'Colored'`, or the vanilla keychain with its lookback (plain `'Vanilla'` is rejected by rgb-lib). */
  keychain: 'Colored' | { Vanilla: { lookback: number } };
  strategy: SyncStrategy;
}

export interface AssetMetadata {
  assetSchema: AssetSchema;
  issuedSupply: bigint;
  timestamp: number;
  name: string;
  precision: number;
  ticker: string | null;
  details: string | null;
  [key: string]: unknown;
}
