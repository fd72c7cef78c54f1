/**
 * The two bodies `sendbegin` accepts, turned into rgb-lib's recipient map and expiry:
 * - the spec's `recipient_map` form (recipients per asset id);
 * - the invoice form the field's clients send (`{invoice, asset_id?, amount?, witness_data?, …}`): the invoice
 *   is decoded by rgb-lib (`invoice_data`) and states the recipient, asset, amount, transport and expiry;
 *   the body only fills what the invoice leaves open, and must agree with what it states.
 */
import type * as C from '@rgbx/contracts/wallet-node';
import { type AssignmentInput, invoiceData, type RecipientMap, type RgbHost, RgbLibError } from '@rgbx/rgb';
import { NETWORKS, type NetworkName } from './config.ts';
import { E } from './errors.ts';
import { requestU64 } from './json.ts';
import type { WalletContext } from './wallets.ts';

export interface SendForm {
  recipients: RecipientMap;
  /** Unix seconds (rgb-lib 0.3 requires one). */
  expiry: number;
}

type MapForm = C.Static<typeof C.SendBeginRecipientMapForm>;
type InvoiceForm = C.Static<typeof C.SendBeginInvoiceForm>;

const defaultExpiry = () => Math.floor(Date.now() / 1000) + 3600;

export function recipientMapForm(b: MapForm, endpoints: string[]): SendForm {
  const map = b.recipient_map;
  if (Object.keys(map).length === 0) throw E.BAD_INPUT.create('recipient_map must name at least one asset');
  const recipients: RecipientMap = {};
  for (const [assetId, list] of Object.entries(map)) {
    recipients[assetId] = list.map((r, i) => ({
      recipientId: r.recipient_id,
      assignment: { Fungible: requestU64(r.amount, `recipient_map.${assetId}[${i}].amount`) },
      transportEndpoints: r.transport_endpoints ?? endpoints,
      witnessData: r.witness_data
        ? {
            amountSat: requestU64(r.witness_data.amount_sat, 'witness_data.amount_sat'),
            blinding:
              r.witness_data.blinding == null
                ? null
                : requestU64(r.witness_data.blinding, 'witness_data.blinding'),
          }
        : null,
    }));
  }
  return { recipients, expiry: b.expiration_timestamp ?? defaultExpiry() };
}

/** rgb-lib's `InvoiceData` (camelCase, parsed losslessly). */
interface Decoded {
  recipientId: string;
  assetId: string | null;
  assignment: unknown;
  network: string;
  expirationTimestamp: number | null;
  transportEndpoints: string[];
}

/**
 * Witness recipients (`bcrt:wvout:…`, network-prefixed in rgb-lib 0.3) are paid with sats to a script;
 * blinded ones (`bcrt:utxob:…`) are not.
 */
export const isWitnessRecipient = (recipientId: string) => /(^|:)wvout:/.test(recipientId);

function invoiceAssignment(decoded: Decoded, amount: bigint | undefined): AssignmentInput {
  const a = decoded.assignment;
  if (a && typeof a === 'object' && 'Fungible' in a) {
    const stated = BigInt((a as { Fungible: bigint | number }).Fungible);
    if (stated > 0n) {
      if (amount !== undefined && amount !== stated) {
        throw E.INVALID_RECIPIENT.create(`the invoice asks for ${stated}, the body says amount ${amount}`);
      }
      return { Fungible: stated };
    }
  }
  if (a === 'NonFungible') return 'NonFungible';
  // "Any" (or a zero amount): the payer chooses the amount.
  if (amount === undefined || amount === 0n) {
    throw E.INVALID_RECIPIENT.create('the invoice names no amount: `amount` is required');
  }
  return { Fungible: amount };
}

/** rgb-lib's `invoice_data`; an invoice rgb-lib cannot read is the client's 400 (1008), a dead child stays a 500. */
export async function decodeInvoice(invoice: string, host: RgbHost): Promise<Record<string, unknown>> {
  try {
    return await invoiceData(invoice, host);
  } catch (err) {
    if (!(err instanceof RgbLibError) || err.kind === 'host') throw err;
    throw E.INVALID_RECIPIENT.createWith(
      { cause: err },
      `cannot decode the invoice: ${(err as Error).message}`,
    );
  }
}

export async function invoiceForm(
  ctx: WalletContext,
  b: InvoiceForm,
  endpoints: string[],
  network: NetworkName,
): Promise<SendForm> {
  const decoded = (await decodeInvoice(b.invoice, ctx.slot.host)) as unknown as Decoded;
  if (decoded.network !== NETWORKS[network]) {
    throw E.INVALID_RECIPIENT.create(
      `the invoice is for ${decoded.network}, this node serves ${NETWORKS[network]}`,
    );
  }
  const bodyAsset = b.asset_id ?? undefined;
  if (bodyAsset !== undefined && decoded.assetId && bodyAsset !== decoded.assetId) {
    throw E.INVALID_RECIPIENT.create(
      `the invoice is for asset ${decoded.assetId}, the body says ${bodyAsset}`,
    );
  }
  const assetId = decoded.assetId ?? bodyAsset;
  if (!assetId) throw E.INVALID_RECIPIENT.create('the invoice names no asset: `asset_id` is required');
  const amount = b.amount == null ? undefined : requestU64(b.amount, 'amount');
  const witness = b.witness_data ?? null;
  if (isWitnessRecipient(decoded.recipientId) && !witness) {
    throw E.INVALID_RECIPIENT.create(
      'a witness invoice needs `witness_data` with `amount_sat` (sats sent along)',
    );
  }
  // An expired invoice: its recipient may fail the transfer (rgb-lib lets it once the expiry has passed), and
  // the assets sent with it would be lost. rgb-lib does not check at begin.
  if (decoded.expirationTimestamp != null && Number(decoded.expirationTimestamp) * 1000 <= Date.now()) {
    throw E.INVALID_RECIPIENT.createWith(
      { details: { expiration_timestamp: Number(decoded.expirationTimestamp) } },
      `the invoice expired at ${new Date(Number(decoded.expirationTimestamp) * 1000).toISOString()}: ask the recipient for a new one`,
    );
  }
  const expiry = decoded.expirationTimestamp ?? defaultExpiry();
  return {
    recipients: {
      [assetId]: [
        {
          recipientId: decoded.recipientId,
          assignment: invoiceAssignment(decoded, amount),
          transportEndpoints: decoded.transportEndpoints.length > 0 ? decoded.transportEndpoints : endpoints,
          witnessData: witness
            ? {
                amountSat: requestU64(witness.amount_sat, 'witness_data.amount_sat'),
                blinding:
                  witness.blinding == null ? null : requestU64(witness.blinding, 'witness_data.blinding'),
              }
            : null,
        },
      ],
    },
    expiry: Number(expiry),
  };
}
