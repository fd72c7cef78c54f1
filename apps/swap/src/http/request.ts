/** Request conventions shared by every swap route. */
/** Keys where `""` means absent (see `OptEnum` in the contracts). */
const EMPTY_MEANS_ABSENT = new Set(['swap_type', 'deposit_type', 'swapType', 'depositType']);

/**
 * preHandler: top-level `null` values (and `""` of enum keys) of a body are absent values (Go SDKs
 * marshal nil pointers and maps as `null`; the Hotpot widget sends `null`), so defaults apply.
 */
export async function dropAbsent(request: { body: unknown }): Promise<void> {
  const b = request.body;
  if (b === null || typeof b !== 'object' || Array.isArray(b)) return;
  const o = b as Record<string, unknown>;
  for (const [k, v] of Object.entries(o)) {
    if (v === null || (v === '' && EMPTY_MEANS_ABSENT.has(k))) delete o[k];
  }
}
