import type { RgbWallet } from '@rgbx/rgb';

/**
 * Every transfer of the wallet. rgb-lib's `list_transfers(None)` lists only transfers bound to no asset yet
 * (an any-asset invoice), so "all" is those plus each known asset's.
 */
export async function listAllTransfers(w: RgbWallet) {
  const assets = await w.listAssets([]);
  const ids = [
    ...(assets.nia ?? []),
    ...(assets.cfa ?? []),
    ...(assets.uda ?? []),
    ...(assets.ifa ?? []),
  ].map((a) => a.assetId);
  const lists = [await w.listTransfers(null)];
  for (const id of ids) lists.push(await w.listTransfers(id));
  return lists.flat();
}
