import { Placeholder } from "drizzle-orm";

/**
 * Drizzle's SQL for a query built with placeholders, checked to bind them in `names` order, so
 * a driver can run the text with positional parameters (either engine: `?` or `$n`, numbered
 * in the order of Drizzle's params).
 */
export function positional(query: { toSQL(): { sql: string; params: unknown[] } }, names: string[]): string {
  const { sql: text, params } = query.toSQL();
  // A value for a column comes as a Param around the placeholder; a condition's, bare.
  const order = params.map((param) => {
    const held = (param as { value?: unknown }).value;
    return ((held instanceof Placeholder ? held : param) as Placeholder).name;
  });
  if (order.join() !== names.join()) throw new Error(`the query binds ${order.join()}, not ${names.join()}`);
  return text;
}
