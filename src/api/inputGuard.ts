// One place where every field's arguments are held to what storage can keep (src/db/storableValues.ts),
// before any resolver, scope check or command sees them: text and IDs without U+0000 or lone surrogates,
// JSON that is storable exactly and at most MAX_JSON_DEPTH deep, DateTimes within years 1 to 9999. A
// field whose payload union lists InvalidInput (every mutation) answers it there, naming the field; any
// other field (queries, subscriptions) answers a GraphQL error with code BAD_USER_INPUT and the field in
// its extensions. Either way nothing was appended. Without it, such a value failed deep in a transaction
// and reached the client as "Unexpected error." (INTERNAL_SERVER_ERROR).
import SchemaBuilder, { BasePlugin, type PothosOutputFieldConfig, type SchemaTypes } from '@pothos/core';
import {
  getNullableType,
  isInputObjectType,
  isListType,
  isScalarType,
  type GraphQLArgument,
  type GraphQLFieldResolver,
  type GraphQLInputType,
  type GraphQLResolveInfo,
} from './graphql.ts';
import { instantProblem, jsonProblem, textProblem } from '../db/storableValues.ts';
import { InvalidInput } from './schema/errorClasses.ts';
import { badInput } from './queryErrors.ts';

const pluginName = 'inputGuard';

// Pothos plugins name themselves in this global namespace (as @pothos/plugin-errors does).
declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  export namespace PothosSchemaTypes {
    interface Plugins<Types extends SchemaTypes> {
      inputGuard: InputGuardPlugin<Types>;
    }
  }
}

export interface InputProblem {
  /** The input field at fault, as mutations name fields (without the `input.` of the argument). */
  field: string;
  message: string;
}

/** The first argument value that storage could not keep as sent, or undefined. */
export function findInputProblem(args: Record<string, unknown>, definitions: readonly GraphQLArgument[]): InputProblem | undefined {
  for (const definition of definitions) {
    const problem = valueProblem(args[definition.name], definition.type, definition.name === 'input' ? '' : definition.name);
    if (problem) return problem;
  }
  return undefined;
}

function valueProblem(value: unknown, type: GraphQLInputType, path: string): InputProblem | undefined {
  if (value === null || value === undefined) return undefined;
  const nullable = getNullableType(type);
  if (isListType(nullable)) {
    if (!Array.isArray(value)) return valueProblem(value, nullable.ofType, path);
    for (let i = 0; i < value.length; i++) {
      const problem = valueProblem(value[i], nullable.ofType, `${path}[${i}]`);
      if (problem) return problem;
    }
    return undefined;
  }
  if (isInputObjectType(nullable)) {
    const fields = nullable.getFields();
    for (const name of Object.keys(fields)) {
      const problem = valueProblem((value as Record<string, unknown>)[name], fields[name]!.type, path === '' ? name : `${path}.${name}`);
      if (problem) return problem;
    }
    return undefined;
  }
  if (!isScalarType(nullable)) return undefined;
  const field = path === '' ? 'input' : path;
  let message: string | undefined;
  if (nullable.name === 'JSON') message = jsonProblem(value, field);
  else if (typeof value === 'string') message = textProblem(value, field);
  else if (value instanceof Date) message = instantProblem(value, field);
  return message ? { field, message } : undefined;
}

export class InputGuardPlugin<Types extends SchemaTypes> extends BasePlugin<Types> {
  override wrapResolve(resolver: GraphQLFieldResolver<unknown, Types['Context'], object>, fieldConfig: PothosOutputFieldConfig<Types>) {
    const answersInvalidInput = listsInvalidInput(fieldConfig);
    return (parent: unknown, args: object, context: Types['Context'], info: GraphQLResolveInfo) => {
      const problem = findInputProblem(args as Record<string, unknown>, info.parentType.getFields()[info.fieldName]?.args ?? []);
      if (problem) throw answersInvalidInput ? new InvalidInput(problem.message, problem.field) : badInput(problem.field, problem.message);
      return resolver(parent, args, context, info);
    };
  }

  override wrapSubscribe(subscribe: GraphQLFieldResolver<unknown, Types['Context'], object> | undefined, _fieldConfig: PothosOutputFieldConfig<Types>) {
    if (!subscribe) return subscribe;
    return (parent: unknown, args: object, context: Types['Context'], info: GraphQLResolveInfo) => {
      const problem = findInputProblem(args as Record<string, unknown>, info.parentType.getFields()[info.fieldName]?.args ?? []);
      if (problem) throw badInput(problem.field, problem.message);
      return subscribe(parent, args, context, info);
    };
  }
}

// The errors plugin records the typed errors a field answers in its extensions (for `errors: {...}` fields
// and for fields returning an errorUnion alike); it catches what is thrown only when it is one of them.
function listsInvalidInput(fieldConfig: { extensions?: Record<string, unknown> | null }): boolean {
  const errors = fieldConfig.extensions?.pothosErrors;
  return Array.isArray(errors) && errors.includes(InvalidInput);
}

SchemaBuilder.registerPlugin(pluginName, InputGuardPlugin);

export default pluginName;
