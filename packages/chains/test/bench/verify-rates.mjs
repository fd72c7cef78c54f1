// Raw verification rates of the swap approval crypto, single-threaded, in this process.
// Run after `npx tsc -b packages/chains`:  node packages/chains/test/bench/verify-rates.mjs [seconds-per-case]
// Prints one JSON object: ops/s for each case (median of 3 timed runs).
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { buildHtlc, buildHtlcFundingPsbt, secretHashOf, verifySignedFundingPsbt } from '@rgbx/chains/btc';
import { buildPermit2TypedData, buildSwapIntentWitness, verifyPermit2Signature } from '@rgbx/chains/evm';
import { buildCosignTransaction, verifyCosignTransaction } from '@rgbx/chains/sol';
import {
  buildTronPermit2TypedData,
  tronAddressFromHex,
  tronAddressFromPublicKey,
  verifyTronPermit2Signature,
} from '@rgbx/chains/tron';
import { p2tr, p2wpkh, Transaction } from '@scure/btc-signer';
import {
  createKeyPairSignerFromPrivateKeyBytes,
  getTransactionDecoder,
  getTransactionEncoder,
  partiallySignTransaction,
  verifySignature,
} from '@solana/kit';
import { recoverTypedDataAddress } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

const SECONDS = Number(process.argv[2] ?? 1);

async function rate(fn) {
  for (let i = 0; i < 20; i++) await fn(); // warm-up
  const runs = [];
  for (let r = 0; r < 3; r++) {
    let n = 0;
    const t0 = process.hrtime.bigint();
    const end = t0 + BigInt(Math.round((SECONDS / 3) * 1e9));
    let now = t0;
    while (now < end) {
      await fn();
      n++;
      if ((n & 7) === 0) now = process.hrtime.bigint();
    }
    now = process.hrtime.bigint();
    runs.push((n * 1e9) / Number(now - t0));
  }
  runs.sort((a, b) => a - b);
  return Math.round(runs[1]);
}

const key = '0x' + '11'.repeat(32);
const account = privateKeyToAccount(key);
const witness = buildSwapIntentWitness({
  intentId: '00000000-0000-4000-8000-000000000001',
  resolver: '0x' + '33'.repeat(20),
  secretHash: '0x' + 'ab'.repeat(32),
  destChainId: 3n,
  destToken: 'btc',
  destAddress: 'bcrt1qexample',
  minAmountOut: 1n,
  maxAmountOut: 1n,
  deadline: 1_900_000_000n,
});
const td = buildPermit2TypedData({
  chainId: 1n,
  token: '0x' + '22'.repeat(20),
  amount: 10n ** 18n,
  spender: '0x' + '44'.repeat(20),
  nonce: 1n,
  deadline: 1_900_000_000n,
  witness,
});
const sig = await account.signTypedData({
  domain: td.domain,
  types: td.types,
  primaryType: td.primaryType,
  message: td.message,
});

const tronTd = buildTronPermit2TypedData({
  chainId: 728126428n,
  permit2Address: tronAddressFromHex('41' + '22'.repeat(20)),
  token: tronAddressFromHex('41' + '55'.repeat(20)),
  amount: 5_000_000n,
  spender: tronAddressFromHex('41' + '11'.repeat(20)),
  nonce: 1n,
  deadline: 1_900_000_000n,
  witness: {
    intentId: '00000000-0000-4000-8000-000000000001',
    resolver: tronAddressFromHex('41' + '33'.repeat(20)),
    secretHash: '0x' + 'ab'.repeat(32),
    destChainId: 3n,
    destToken: 'btc',
    destAddress: 'bcrt1qexample',
    minAmountOut: 1n,
    maxAmountOut: 1n,
    deadline: 1_900_000_000n,
  },
});
const tronSig = await account.signTypedData({
  domain: tronTd.domain,
  types: tronTd.types,
  primaryType: tronTd.primaryType,
  message: tronTd.message,
});
const tronOwner = tronAddressFromPublicKey(
  secp256k1.getPublicKey(Buffer.from('11'.repeat(32), 'hex'), false),
);

// Bitcoin: one HTLC funding PSBT with 2 P2TR inputs, one with 2 P2WPKH inputs
const userPriv = new Uint8Array(32).fill(0x41);
const userPub = secp256k1.getPublicKey(userPriv, true);
const net = { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef };
const htlc = buildHtlc({
  secretHash: secretHashOf(new Uint8Array(32)),
  resolverPubkey: secp256k1.getPublicKey(new Uint8Array(32).fill(2), true),
  userPubkey: userPub,
  locktime: 1000,
  network: 'regtest',
});
function psbtCase(script) {
  const utxos = [1, 2].map((n) => ({
    txid: Buffer.alloc(32, n).toString('hex'),
    vout: 0,
    value: 100_000n,
    script,
  }));
  const f = buildHtlcFundingPsbt({
    htlc,
    amount: 150_000n,
    utxos,
    userPubkey: userPub,
    changeAddress: p2tr(userPub.subarray(1), undefined, net).address,
    feeRate: 2n,
    coinSelection: 'all',
  });
  const tx = Transaction.fromPSBT(Buffer.from(f.psbtBase64, 'base64'));
  for (const i of f.inputsToSign) tx.signIdx(userPriv, i);
  const signed = Buffer.from(tx.toPSBT(0)).toString('base64');
  return {
    unsignedPsbtBase64: f.psbtBase64,
    signedPsbtBase64: signed,
    inputsToSign: f.inputsToSign,
    prevouts: f.prevouts,
    userPubkey: userPub,
  };
}
const trCase = psbtCase(p2tr(userPub.subarray(1), undefined, net).script);
const wpkhCase = psbtCase(p2wpkh(userPub, net).script);
const schnorrMsg = new Uint8Array(32).fill(9);
const schnorrSig = schnorr.sign(schnorrMsg, userPriv);
const schnorrPub = schnorr.getPublicKey(userPriv);
const ecdsaSig = secp256k1.sign(schnorrMsg, userPriv, { prehash: false });

// Solana
const seeds = [1, 2, 3].map((n) => new Uint8Array(32).fill(n));
const [resolver, user, backend] = await Promise.all(
  seeds.map((s) => createKeyPairSignerFromPrivateKeyBytes(s)),
);
const built = buildCosignTransaction({
  resolver: resolver.address,
  user: user.address,
  backend: backend.address,
  recentBlockhash: 'EETubP5AKHgjPAhzPAFcb8BAY1hMH639CWCFTqi3hq1k',
  lastValidBlockHeight: 1n,
  lamports: 1n,
  destination: 'BPFLoaderUpgradeab1e11111111111111111111111',
  memo: 'rgbx:intent:x',
});
const signedSol = Buffer.from(
  getTransactionEncoder().encode(
    await partiallySignTransaction(
      [user.keyPair],
      getTransactionDecoder().decode(Buffer.from(built.transactionHex, 'hex')),
    ),
  ),
).toString('hex');
const solMsg = Buffer.from(built.messageHex, 'hex');
const solSig = Buffer.from(signedSol, 'hex').subarray(65, 129);
const edPub = ed25519.getPublicKey(seeds[1]);

const out = {
  node: process.version,
  secondsPerCase: SECONDS,
  'permit2.verifyPermit2Signature': await rate(() => verifyPermit2Signature(td, sig, account.address)),
  'permit2.raw viem recoverTypedDataAddress': await rate(() =>
    recoverTypedDataAddress({
      domain: td.domain,
      types: td.types,
      primaryType: td.primaryType,
      message: td.message,
      signature: sig,
    }),
  ),
  'tron.verifyTronPermit2Signature': await rate(() => verifyTronPermit2Signature(tronTd, tronSig, tronOwner)),
  'btc.verifySignedFundingPsbt (2 x P2TR Schnorr)': await rate(() => verifySignedFundingPsbt(trCase)),
  'btc.verifySignedFundingPsbt (2 x P2WPKH ECDSA)': await rate(() => verifySignedFundingPsbt(wpkhCase)),
  'btc.raw @noble/curves schnorr.verify': await rate(() =>
    schnorr.verify(schnorrSig, schnorrMsg, schnorrPub),
  ),
  'btc.raw @noble/curves secp256k1.verify (ECDSA)': await rate(() =>
    secp256k1.verify(ecdsaSig, schnorrMsg, userPub, { prehash: false }),
  ),
  'sol.verifyCosignTransaction': await rate(() =>
    verifyCosignTransaction({
      unsignedTransactionHex: built.transactionHex,
      signedTransactionHex: signedSol,
      userAddress: user.address,
    }),
  ),
  'sol.raw @solana/kit verifySignature (WebCrypto Ed25519)': await rate(() =>
    verifySignature(user.keyPair.publicKey, solSig, solMsg),
  ),
  'sol.raw @noble/curves ed25519.verify': await rate(() => ed25519.verify(solSig, solMsg, edPub)),
};
console.info(JSON.stringify(out, null, 2));
