// `npm run schema:print`: writes the schema as Pothos builds it, sorted, to schema/schema.graphql. The file is
// checked in; test/unit/api/schemaDrift.test.ts fails when it differs from what the code builds.
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { printSchema } from './graphql.ts';
import { schema } from './schema/index.ts';
import { packagePath } from '../packageRoot.ts';

export const SCHEMA_FILE = packagePath('schema', 'schema.graphql');

export function printedSchema(): string {
  return `${printSchema(schema)}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await writeFile(SCHEMA_FILE, printedSchema());
  console.log(`wrote ${SCHEMA_FILE}`);
}
