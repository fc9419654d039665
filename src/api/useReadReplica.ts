// The GraphQL side of DATABASE_READ_URL (src/read-replica): a mutation reads only the primary and, once it has
// run, its caller's next stale reads see it; an answer that read the replica says how stale it may be, in the
// extension `readReplica: { reads, stalenessSeconds }` (an upper bound, seconds; src/read-replica/README.md).
import { getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Caller } from '../control-plane/index.ts';
import type { ReadRouting, ReadSourceRecord } from '../read-replica/index.ts';

interface ReadContext {
  reads?: ReadRouting;
  actor?: Caller;
  readSource?: ReadSourceRecord & { mutation: boolean };
}

export function useReadReplica(): Plugin<ReadContext> {
  return {
    onExecute({ args }) {
      const context = args.contextValue as ReadContext;
      const source = context.readSource;
      if (!source || !context.reads) return;
      const operation = getOperationAST(args.document, args.operationName ?? undefined);
      source.mutation = operation?.operation === 'mutation';
      return {
        onExecuteDone({ result, setResult }) {
          // Whatever the mutation's outcome: a write may have committed even when the answer is an error.
          if (source.mutation && context.actor) context.reads!.wrote(context.actor.id);
          if (source.replicaReads === 0 || !('data' in result)) return;
          const readReplica = { reads: source.replicaReads, stalenessSeconds: Math.round(source.stalenessSeconds * 1000) / 1000 };
          setResult({ ...result, extensions: { ...result.extensions, readReplica } });
        },
      };
    },
  };
}
