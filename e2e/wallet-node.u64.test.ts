/**
 * u64 values reach clients exact (issue 25): NIA, CFA and IFA assets issued with supplies of 2^63 and 2^64−1
 * on a real wallet node (rgb-lib in its children) on the devnet, read back from every route that returns them:
 * the issue replies, listassets, assetbalance, listunspents and listtransfers (both record formats). Once
 * through the SDK (bigint, compared exactly), once through raw HTTP with the amounts sent as JSON integers and as
 * decimal strings (the reply's digits compared as text, so no client parser stands between). Every reply is
 * also checked against its route's response schema.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import { generateKeys, type Keys } from '@rgbx/rgb';
import { signPsbt, type WalletNodeClient } from '@rgbx/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkReply, watchReplies } from './helpers/reply-schemas.ts';
import {
  type NodeProcess,
  startNode,
  stopWalletNodeSuite,
  walletClient,
  writeNodeConfig,
} from './helpers/wallet-node.ts';

const T = 300_000;
const P63 = 2n ** 63n; // 9223372036854775808: above 2^53, so a double rounds it
const MAX = 2n ** 64n - 1n; // 18446744073709551615
let devnet: Devnet;
let dir: string;
let node: NodeProcess;
let keys: Keys;
let A: WalletNodeClient;
let replies: ReturnType<typeof watchReplies>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'wallet-node-u64-'));
  devnet = await startDevnet({ dir: join(dir, 'devnet') });
  node = await startNode(
    writeNodeConfig(dir, devnet.info, { workers: 1, issue_schemas: ['nia', 'cfa', 'ifa'] }),
  );
  replies = watchReplies((u) => u.origin === new URL(node.url).origin);
  keys = await generateKeys('Regtest', 'Taproot');
  A = walletClient(node.url, keys);
  await A.register();
  await devnet.fund(await A.address(), '0.01', { confirm: true });
  const psbt = await A.createUtxosBegin({ num: 12, size: 1000, fee_rate: 2 });
  await A.createUtxosEnd(signPsbt(psbt, keys.mnemonic));
  await devnet.mine(1);
}, T);

afterAll(async () => {
  replies?.restore();
  await stopWalletNodeSuite({ nodes: [node], devnet, root: dir });
});

/** A POST with the wallet's headers; the reply's raw text, checked against its route's schema. */
async function raw(path: string, body?: string): Promise<{ status: number; text: string }> {
  const res = await fetch(node.url + path, {
    method: 'POST',
    headers: {
      'xpub-van': keys.accountXpubVanilla,
      'xpub-col': keys.accountXpubColored,
      'master-fingerprint': keys.masterFingerprint,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body }),
  });
  const text = await res.text();
  expect(checkReply('POST', path, res.status, text), path).toEqual([]);
  expect(res.status, text).toBe(200);
  return { status: res.status, text };
}

/** `"key":digits` in a JSON text, exactly (the whole number: no digit before or after). */
const has = (text: string, key: string, v: bigint) => new RegExp(`"${key}":${v}(?![0-9.eE])`).test(text);

describe('u64 values above 2^53 on every route that returns them', () => {
  it(
    'through the SDK: NIA, CFA and IFA supplies of 2^63 and 2^64−1 come back as exact bigints',
    async () => {
      const nia = await A.issueAssetNia({ ticker: 'NBIG', name: 'nia big', amounts: [P63] });
      expect(nia.issued_supply).toBe(P63);
      expect(nia.balance).toEqual({ settled: P63, future: P63, spendable: P63 });

      const cfa = await A.issueAssetCfa({ name: 'cfa max', amounts: [MAX] });
      expect(cfa.issued_supply).toBe(MAX);
      expect(cfa.balance).toEqual({ settled: MAX, future: MAX, spendable: MAX });

      // max_supply = amounts + inflation amounts = 2^63 + (2^63 − 1) = 2^64 − 1
      const ifa = await A.issueAssetIfa({
        ticker: 'IBIG',
        name: 'ifa big',
        amounts: [P63],
        inflation_amounts: [P63 - 1n],
      });
      expect([ifa.initial_supply, ifa.max_supply, ifa.known_circulating_supply]).toEqual([P63, MAX, P63]);
      expect(ifa.balance.settled).toBe(P63);

      const assets = await A.listAssets();
      expect(assets.nia?.find((a) => a.asset_id === nia.asset_id)?.issued_supply).toBe(P63);
      expect(assets.cfa?.find((a) => a.asset_id === cfa.asset_id)?.issued_supply).toBe(MAX);
      const listedIfa = assets.ifa?.find((a) => a.asset_id === ifa.asset_id);
      expect([listedIfa?.initial_supply, listedIfa?.max_supply, listedIfa?.known_circulating_supply]).toEqual(
        [P63, MAX, P63],
      );

      expect(await A.assetBalance(nia.asset_id)).toEqual({ settled: P63, future: P63, spendable: P63 });
      expect(await A.assetBalance(cfa.asset_id)).toEqual({ settled: MAX, future: MAX, spendable: MAX });
      expect((await A.assetBalance(ifa.asset_id)).settled).toBe(P63);

      // The allocations and transfers carry the same amounts (rgb-lib's shapes, which the SDK asks for).
      const allocations = (await A.listUnspents()).flatMap((u) => u.rgb_allocations);
      const fungible = (id: string) =>
        allocations
          .filter((a) => a.asset_id === id)
          .map((a) => a.assignment)
          .filter((x): x is { Fungible: bigint } => typeof x === 'object' && 'Fungible' in x);
      expect(fungible(nia.asset_id)).toEqual([{ Fungible: P63 }]);
      expect(fungible(cfa.asset_id)).toEqual([{ Fungible: MAX }]);
      expect(fungible(ifa.asset_id)).toEqual([{ Fungible: P63 }]);
      const rights = allocations.filter((a) => a.asset_id === ifa.asset_id).map((a) => a.assignment);
      expect(rights).toContainEqual({ InflationRight: P63 - 1n });
      const issuance = (await A.listTransfers(cfa.asset_id)).find((t) => t.kind === 'Issuance');
      expect(issuance?.assignments).toEqual([{ Fungible: MAX }]);
    },
    T,
  );

  it(
    'through raw HTTP: amounts as JSON integers and as decimal strings, the reply digits exact on every route',
    async () => {
      const asInteger = await raw(
        '/wallet/issueassetifa',
        `{"ticker":"IRAW","name":"ifa raw","amounts":[${P63}],"inflation_amounts":[${P63 - 1n}]}`,
      );
      expect(has(asInteger.text, 'initial_supply', P63)).toBe(true);
      expect(has(asInteger.text, 'max_supply', MAX)).toBe(true);
      expect(has(asInteger.text, 'known_circulating_supply', P63)).toBe(true);
      const ifaId = /"asset_id":"([^"]+)"/.exec(asInteger.text)![1]!;

      const asString = await raw('/wallet/issueassetcfa', `{"name":"cfa raw","amounts":["${MAX}"]}`);
      expect(has(asString.text, 'issued_supply', MAX)).toBe(true);
      expect(has(asString.text, 'settled', MAX)).toBe(true);
      const cfaId = /"asset_id":"([^"]+)"/.exec(asString.text)![1]!;

      const niaString = await raw(
        '/wallet/issueassetnia',
        `{"ticker":"NRAW","name":"nia raw","amounts":["${P63}"]}`,
      );
      expect(has(niaString.text, 'issued_supply', P63)).toBe(true);

      const listed = (await raw('/wallet/listassets')).text;
      expect(has(listed, 'max_supply', MAX)).toBe(true);
      expect(has(listed, 'issued_supply', MAX)).toBe(true);
      expect(has(listed, 'issued_supply', P63)).toBe(true);

      const balance = (await raw('/wallet/assetbalance', `{"asset_id":"${cfaId}"}`)).text;
      expect(balance).toBe(`{"settled":${MAX},"future":${MAX},"spendable":${MAX}}`);
      const ifaBalance = (await raw('/wallet/assetbalance', `{"assetId":"${ifaId}"}`)).text;
      expect(ifaBalance).toBe(`{"settled":${P63},"future":${P63},"spendable":${P63}}`);

      // Both record formats: the field clients' flat amounts, rgb-lib's tagged assignments.
      const unspents = (await raw('/wallet/listunspents')).text;
      expect(has(unspents, 'amount', MAX)).toBe(true);
      const rgbLibUnspents = (await raw('/wallet/listunspents?format=rgb-lib')).text;
      expect(has(rgbLibUnspents, 'Fungible', MAX)).toBe(true);
      expect(has(rgbLibUnspents, 'InflationRight', P63 - 1n)).toBe(true);
      const transfers = (await raw('/wallet/listtransfers', `{"asset_id":"${cfaId}"}`)).text;
      expect(has(transfers, 'amount', MAX)).toBe(true);
      const rgbLibTransfers = (await raw('/wallet/listtransfers?format=rgb-lib', `{"asset_id":"${cfaId}"}`))
        .text;
      expect(has(rgbLibTransfers, 'Fungible', MAX)).toBe(true);

      // Above 2^64−1 is refused by name, as an integer and as a string.
      for (const body of [`{"name":"x","amounts":[${MAX + 1n}]}`, `{"name":"x","amounts":["${MAX + 1n}"]}`]) {
        const res = await fetch(`${node.url}/wallet/issueassetcfa`, {
          method: 'POST',
          headers: {
            'xpub-van': keys.accountXpubVanilla,
            'xpub-col': keys.accountXpubColored,
            'master-fingerprint': keys.masterFingerprint,
            'content-type': 'application/json',
          },
          body,
        });
        const text = await res.text();
        expect(res.status, text).toBe(422);
        expect(text).toContain('amounts[0] must be at most 18446744073709551615');
      }
    },
    T,
  );

  it('every reply matched its route’s response schema', () => {
    expect(replies.count()).toBeGreaterThan(15);
    expect(replies.problems()).toEqual([]);
  });
});
