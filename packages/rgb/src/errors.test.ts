import { describe, expect, it } from 'vitest';
import { classifyErrorMessage, parseDebugFields, RgbLibError } from './errors.ts';

describe('rgb-lib error parsing', () => {
  it('classifies RgbLib, c-ffi, binding and unknown messages', () => {
    expect(classifyErrorMessage('RgbLib(AssetNotFound { asset_id: "rgb:abc" })')).toEqual({
      kind: 'rgb-lib',
      variant: 'AssetNotFound',
      message: 'RgbLib(AssetNotFound { asset_id: "rgb:abc" })',
    });
    expect(classifyErrorMessage('RgbLib(Offline)').variant).toBe('Offline');
    expect(
      classifyErrorMessage('JSONConversion(Error("missing field `x`", line: 1, column: 5))'),
    ).toMatchObject({
      kind: 'ffi',
      variant: 'JSONConversion',
    });
    expect(classifyErrorMessage('StringToNumberConversion')).toMatchObject({
      kind: 'ffi',
      variant: 'StringToNumberConversion',
    });
    expect(
      classifyErrorMessage('Illegal number of arguments for _wrap_rgblib_get_btc_balance.'),
    ).toMatchObject({
      kind: 'binding',
    });
    expect(classifyErrorMessage("in method 'rgblib_get_btc_balance', argument 3 of type 'bool'").kind).toBe(
      'binding',
    );
    expect(classifyErrorMessage('weird').variant).toBe('Unknown');
  });

  it('parses Debug struct fields, including escapes and nested values', () => {
    expect(parseDebugFields('RgbLib(AssetNotFound { asset_id: "rgb:abc" })')).toEqual({
      asset_id: 'rgb:abc',
    });
    expect(
      parseDebugFields(
        'RgbLib(WalletSettingMismatch { setting: "witness_version", expected: "SegWitV0", provided: "Taproot" })',
      ),
    ).toEqual({ setting: 'witness_version', expected: 'SegWitV0', provided: 'Taproot' });
    expect(
      parseDebugFields(
        'RgbLib(FailedBroadcast { details: "Electrum error: {\\"code\\":-26,\\"message\\":\\"x, y\\"}" })',
      ),
    ).toEqual({ details: 'Electrum error: {"code":-26,"message":"x, y"}' });
    expect(parseDebugFields('RgbLib(Foo { n: 5, inner: Some(Bar { a: 1 }), s: "z" })')).toEqual({
      n: '5',
      inner: 'Some(Bar { a: 1 })',
      s: 'z',
    });
    expect(parseDebugFields('RgbLib(Offline)')).toEqual({});
  });

  it('builds a typed RgbLibError', () => {
    const e = new RgbLibError(
      classifyErrorMessage('RgbLib(InvalidIndexer { details: "down" })'),
      'rgblib_go_online',
    );
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('RgbLibError');
    expect(e.variant).toBe('InvalidIndexer');
    expect(e.details).toEqual({ details: 'down' });
    expect(e.op).toBe('rgblib_go_online');
  });
});
