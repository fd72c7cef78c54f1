/**
 * Issuance of CFA, UDA and IFA assets (NIA is in wallet.ts). Issuing is offline and needs no signature, so a
 * watch-only wallet can do it; each amount (and each IFA inflation right) takes one free colored UTXO.
 *
 * CFA and UDA take a JSON body, or multipart/form-data with the same fields as text plus their files (`file`:
 * the media; UDA also `attachments`, repeated, at most 20): the files are stored in a scratch directory, passed
 * to rgb-lib by path (it copies them into the wallet's media store) and deleted when the request ends. IFA is
 * JSON only (rgb-lib takes no media for it).
 */
import multipart from '@fastify/multipart';
import * as C from '@rgbx/contracts/wallet-node';
import { RgbLibError } from '@rgbx/rgb';
import type { ServiceApp } from '@rgbx/service-kit';
import { ServiceError, Type } from '@rgbx/service-kit';
import { E } from '../errors.ts';
import { requestU64 } from '../json.ts';
import {
  field,
  fileField,
  fileFields,
  intField,
  multipartLimits,
  optionalField,
  UploadArea,
  Uploads,
  u64List,
} from '../uploads.ts';
import { type RouteDeps, routeKit } from './kit.ts';

/** Issuance errors of rgb-lib a client can fix that the shared table does not name (or names less clearly). */
const ISSUE_VARIANTS: Record<string, (d: Record<string, string>) => string> = {
  InvalidName: (d) => `invalid name: ${d.details ?? 'rgb-lib refused it'}`,
  InvalidTicker: (d) => `invalid ticker: ${d.details ?? 'rgb-lib refused it'}`,
  InvalidDetails: (d) => `invalid details: ${d.details ?? 'rgb-lib refused them'}`,
  InvalidPrecision: (d) => `invalid precision: ${d.details ?? 'rgb-lib refused it'}`,
  InvalidAttachments: (d) => `invalid attachments: ${d.details ?? 'rgb-lib refused them'}`,
  EmptyFile: () => 'a media or attachment file is empty',
  InvalidAmountZero: () => 'amounts must be greater than 0',
  NoIssuanceAmounts: () => 'at least one amount is needed',
  TooHighIssuanceAmounts: () => 'the amounts add up to more than 2^64-1',
  TooHighInflationAmounts: () => 'the amounts and inflation amounts add up to more than 2^64-1',
};

/** Maps the variants above to 400 (code 1010) with details.kind; file paths never reach the client. */
export function issueError(err: unknown): unknown {
  if (!(err instanceof RgbLibError)) return err;
  const message = ISSUE_VARIANTS[err.variant];
  if (!message) return err;
  const details: Record<string, unknown> = { kind: err.variant };
  if (err.details.details !== undefined) details.details = err.details.details;
  return new ServiceError(E.INVALID_REQUEST.code, E.INVALID_REQUEST.status, message(err.details), {
    details,
  });
}

const u64s = (list: ReadonlyArray<bigint | number | string>, name: string) =>
  list.map((a, i) => requestU64(a, `${name}[${i}]`));

export function registerIssueRoutes(app: ServiceApp, deps: RouteDeps): void {
  const { cfg } = deps;
  // The spec's node issues NIA only: the other schemas are the operator's opt-in ([wallet] issue_schemas).
  const enabled = (schema: 'cfa' | 'uda' | 'ifa') => () => {
    if (!(cfg.wallet.issue_schemas ?? ['nia']).includes(schema)) throw E.ISSUANCE_DISABLED.create(schema);
  };
  const area = new UploadArea(cfg.wallet.data_dir, 'issue');
  app.addHook('onReady', async () => {
    area.clearLeftovers();
  });

  routeKit(app, deps).walletRoute<C.IssueAssetIfaRequestT>(
    '/wallet/issueassetifa',
    {
      summary: 'Issue an inflatable fungible asset (IFA)',
      description:
        "rgb-sdk's IssueAssetIfaRequestModel. `inflation_amounts` become inflation rights (one colored UTXO " +
        'each), `max_supply` = amounts + inflation amounts. rgb-lib 0.3.0-beta.7 issues no replace rights: ' +
        '`replace_rights_num` must be 0 or absent. Inflating later needs rgb-lib to sign, which a watch-only ' +
        'wallet cannot.',
      body: C.IssueAssetIfaRequest,
      response: Type.Ref('AssetIfa'),
      online: false,
      precondition: enabled('ifa'),
    },
    async (_ctx, w, b) => {
      if ((b.replace_rights_num ?? 0) > 0) {
        throw new ServiceError(
          E.INVALID_REQUEST.code,
          E.INVALID_REQUEST.status,
          'replace_rights_num: rgb-lib 0.3.0-beta.7 issues no replace rights; send 0 or leave it out',
          { details: { field: 'replace_rights_num' } },
        );
      }
      try {
        return await w.issueAssetIfa(
          b.ticker,
          b.name,
          b.precision ?? 0,
          u64s(b.amounts, 'amounts'),
          u64s(b.inflation_amounts ?? [], 'inflation_amounts'),
          b.reject_list_url ?? null,
        );
      } catch (err) {
        throw issueError(err);
      }
    },
  );

  app.register(async (scope) => {
    await scope.register(multipart, {
      limits: multipartLimits(cfg.api.body_limit_bytes, 1 + C.UDA_MAX_ATTACHMENTS),
      throwFileSizeLimit: true,
    });
    const uploads = new Uploads(area, cfg.api.body_limit_bytes, {
      '/wallet/issueassetcfa': {
        files: { file: 1 },
        jsonSchema: 'IssueAssetCfaRequest',
        toBody: (u) => ({
          name: field(u, 'name'),
          details: optionalField(u, 'details'),
          precision: intField(u, 'precision'),
          amounts: u64List(u, 'amounts'),
          file: fileField(u, 'file'),
        }),
      },
      '/wallet/issueassetuda': {
        files: { file: 1, attachments: C.UDA_MAX_ATTACHMENTS },
        jsonSchema: 'IssueAssetUdaRequest',
        toBody: (u) => ({
          ticker: field(u, 'ticker'),
          name: field(u, 'name'),
          details: optionalField(u, 'details'),
          precision: intField(u, 'precision'),
          file: fileField(u, 'file'),
          attachments: fileFields(u, 'attachments'),
        }),
      },
    });
    uploads.install(scope);
    const { walletRoute } = routeKit(scope, deps);
    const bothBodies = (json: string, form: string) =>
      ({
        content: {
          'application/json': { schema: Type.Ref(json) },
          'multipart/form-data': { schema: Type.Ref(form) },
        },
      }) as unknown;

    walletRoute<C.IssueAssetCfaRequestT>(
      '/wallet/issueassetcfa',
      {
        summary: 'Issue a collectible fungible asset (CFA), optionally with a media file',
        description:
          'JSON `{name, details?, precision?, amounts}`, or multipart/form-data with the same fields as text ' +
          '(`amounts` repeated, or one field holding a JSON array) and an optional `file` part: the media, ' +
          'at most api.body_limit_bytes (413). Each amount takes one free colored UTXO.',
        body: bothBodies('IssueAssetCfaRequest', 'IssueAssetCfaForm'),
        consumes: ['application/json', 'multipart/form-data'],
        response: Type.Ref('AssetCfa'),
        online: false,
        precondition: enabled('cfa'),
      },
      async (_ctx, w, b, req) => {
        const upload = uploads.claim(req);
        try {
          const media = upload?.files.find((f) => f.field === 'file')?.path ?? null;
          return await w.issueAssetCfa(
            b.name,
            b.details ?? null,
            b.precision ?? 0,
            u64s(b.amounts, 'amounts'),
            media,
          );
        } catch (err) {
          throw issueError(err);
        } finally {
          await uploads.release(req);
        }
      },
    );

    walletRoute<C.IssueAssetUdaRequestT>(
      '/wallet/issueassetuda',
      {
        summary: 'Issue a unique digital asset (UDA, one token), optionally with media and attachments',
        description:
          'JSON `{ticker, name, details?, precision?}`, or multipart/form-data with the same fields as text, ' +
          `an optional \`file\` part (the token's media) and up to ${C.UDA_MAX_ATTACHMENTS} \`attachments\` ` +
          'parts; each file at most api.body_limit_bytes (413). Takes one free colored UTXO.',
        body: bothBodies('IssueAssetUdaRequest', 'IssueAssetUdaForm'),
        consumes: ['application/json', 'multipart/form-data'],
        response: Type.Ref('AssetUda'),
        online: false,
        precondition: enabled('uda'),
      },
      async (_ctx, w, b, req) => {
        const upload = uploads.claim(req);
        try {
          const files = upload?.files ?? [];
          const media = files.find((f) => f.field === 'file')?.path ?? null;
          const attachments = files.filter((f) => f.field === 'attachments').map((f) => f.path);
          return await w.issueAssetUda(
            b.ticker,
            b.name,
            b.details ?? null,
            b.precision ?? 0,
            media,
            attachments,
          );
        } catch (err) {
          throw issueError(err);
        } finally {
          await uploads.release(req);
        }
      },
    );
  });
}
