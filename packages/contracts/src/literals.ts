import { type TLiteral, type TUnion, Type } from 'typebox';

type Literals<T extends readonly string[]> = { -readonly [K in keyof T]: TLiteral<T[K]> };
/** A union of string literals, listed once as a tuple so the values are available at run time too. */
export function literalUnion<const T extends readonly string[]>(
  values: T,
  options?: { description?: string },
): TUnion<Literals<T>> {
  return Type.Union(
    values.map((v) => Type.Literal(v)),
    options,
  ) as TUnion<Literals<T>>;
}
