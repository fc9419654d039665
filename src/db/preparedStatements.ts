// Statements PostgreSQL parses (and, after a few runs, plans) once per connection instead of on every call.
// The hot, many-CTE statements of the ledger and the command backlog spend more time being planned than
// run; naming them lets the server keep the work. A statement is marked by passing its text through
// `prepared` where it is defined; the PostgreSQL driver (postgres.ts) then sends it as a named statement.
// PGlite runs in-process and has no round trip to save, so it ignores the mark.
//
// Named statements live on a server connection: behind a pooler in transaction mode (pgbouncer before
// 1.21, or without max_prepared_statements) they fail; the service connects to PostgreSQL directly.

const names = new Map<string, string>();

/** Marks `text` as a statement to prepare once per connection; returns it unchanged. */
export function prepared(text: string): string {
  if (!names.has(text)) names.set(text, `gl_prepared_${names.size + 1}`);
  return text;
}

/** The statement's name when `text` was marked with `prepared`, else undefined. */
export function preparedName(text: string): string | undefined {
  return names.get(text);
}
