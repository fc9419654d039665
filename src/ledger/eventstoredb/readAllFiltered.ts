// A read of $all that the server filters by event type. The client's readAll always asks for "no filter"
// (its ReadReq sets NoFilter), although the server has supported filtered reads of $all since 20.6 (the
// same ReadAllEventsForwardFiltered it runs for a filtered subscription's catch-up). So this builds the
// same ReadReq with an event-type filter and reads it through the client's own stream machinery. Without
// the filter a projection of the control plane would receive and drop every admission summary.
import type { AllStreamResolvedEvent, Position, StreamingRead } from '@eventstore/db-client';
import sharedPb from '@eventstore/db-client/generated/shared_pb.js';
import streamsGrpcPb from '@eventstore/db-client/generated/streams_grpc_pb.js';
import streamsPb from '@eventstore/db-client/generated/streams_pb.js';
import readStreamModule from '@eventstore/db-client/dist/streams/utils/ReadStream.js';
import utils from '@eventstore/db-client/dist/utils/index.js';
import type { EsdbClient } from './client.ts';

interface ClientInternals {
  GRPCStreamCreator: (client: unknown, name: string, creator: (grpc: { read: (...args: unknown[]) => unknown }) => unknown) => () => Promise<unknown>;
  callArguments: (options: object, callOptions: object) => unknown[];
}

/** A regular expression that matches exactly these types (none: nothing). */
function exactlyOneOf(types: readonly string[]): string {
  const escaped = types.map((type) => type.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  // No types: a pattern nothing matches (an empty alternation would match the empty type).
  return escaped.length === 0 ? '(?!)' : `^(?:${escaped.join('|')})$`;
}

/** True when `client` is the real client, whose stream machinery readAllFiltered uses. */
export function canFilterOnServer(client: EsdbClient): boolean {
  const internals = client as unknown as Partial<ClientInternals>;
  return typeof internals.GRPCStreamCreator === 'function' && typeof internals.callArguments === 'function';
}

/** Up to maxCount events of `types` from `from` (inclusive, like the client's readAll), forwards. */
export function readAllFiltered(
  client: EsdbClient,
  from: Position | 'start',
  maxCount: number,
  types: readonly string[],
): StreamingRead<AllStreamResolvedEvent> {
  const { ReadReq } = streamsPb;
  const options = new ReadReq.Options();
  const all = new ReadReq.Options.AllOptions();
  if (from === 'start') all.setStart(new sharedPb.Empty());
  else {
    const position = new ReadReq.Options.Position();
    position.setCommitPosition(from.commit.toString(10));
    position.setPreparePosition(from.prepare.toString(10));
    all.setPosition(position);
  }
  options.setAll(all);
  options.setResolveLinks(false);
  options.setCount(String(maxCount));
  const uuid = new ReadReq.Options.UUIDOption();
  uuid.setString(new sharedPb.Empty());
  options.setUuidOption(uuid);
  const expression = new ReadReq.Options.FilterOptions.Expression();
  expression.setRegex(exactlyOneOf(types));
  const filter = new ReadReq.Options.FilterOptions();
  filter.setEventType(expression);
  // No search window: the server scans until it has maxCount matches or reaches the end of $all.
  filter.setCount(new sharedPb.Empty());
  filter.setCheckpointintervalmultiplier(1);
  options.setFilter(filter);
  options.setReadDirection(0);
  const request = new ReadReq();
  request.setOptions(options);
  const internals = client as unknown as ClientInternals;
  const createStream = internals.GRPCStreamCreator(streamsGrpcPb.StreamsClient, 'readAllFiltered', (grpc) =>
    grpc.read(request, ...internals.callArguments({}, { deadline: Infinity })),
  );
  return new readStreamModule.ReadStream<AllStreamResolvedEvent>(createStream as never, utils.convertGrpcEvent, {});
}
