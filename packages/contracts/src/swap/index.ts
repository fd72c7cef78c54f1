/**
 * Wire schemas of the swap service, defined once: the service validates, serializes and documents
 * its three APIs with them (apps/swap), and the SDK's swap types are their `Static<>`.
 *
 * - `A`: Surface A (root paths, camelCase), the canonical shapes.
 * - `B`: Surface B (`/affiliate/v1`, Hotpot's snake_case), Surface A under field maps.
 * - `Resolver`: the resolver API (`/resolver/v1`).
 * - `Rfq`: the request for quote sent to a remote resolver's `quote_url` (signed both ways).
 */
export type { Static } from 'typebox';
export * from './common.ts';
export { type FieldMap, type FieldOverrides, fieldMap, type Renamed, snakeCase } from './field-map.ts';
export * as Resolver from './resolver.ts';
export * as Rfq from './rfq.ts';
export * as A from './surface-a.ts';
export * as B from './surface-b.ts';
