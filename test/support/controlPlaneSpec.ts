// Given/when/then for control-plane deciders: given events already in the ledger, when a command is
// decided, then the events it would append (and to which stream) or the typed error. The decider sees only
// the streams it plans to read, exactly as in production.
import type { ControlPlaneEvent } from '../../src/ledger/catalog/controlPlane.ts';
import type { ControlPlaneCommand, ControlPlaneError } from '../../src/control-plane/controlPlaneCommand.ts';
import { isControlPlaneError } from '../../src/control-plane/validation.ts';
import { viewOf, type StreamEvent } from '../../src/control-plane/view.ts';

export type GivenEvent = ControlPlaneEvent & { stream: string; occurredAt?: string };

export type Outcome = { stream: string; events: ControlPlaneEvent[]; reason?: string } | { error: ControlPlaneError };

export const SPEC_NOW = new Date('2026-03-01T12:00:00.000Z');

export function given(...events: GivenEvent[]) {
  return {
    when<Input>(definition: ControlPlaneCommand<Input>, input: Input, now: Date = SPEC_NOW): Outcome {
      const plan = definition.plan(input);
      if (isControlPlaneError(plan)) return { error: plan };
      const streams = new Map<string, StreamEvent[]>();
      for (const stream of [plan.target, ...plan.reads]) {
        streams.set(
          stream,
          events
            .filter((event) => event.stream === stream)
            .map((event) => ({
              stream,
              type: event.type,
              data: event.data,
              metadata: event.occurredAt ? { occurredAt: event.occurredAt } : {},
              recordedAt: now,
            })),
        );
      }
      const decided = definition.decide(input, viewOf(streams), now);
      if (isControlPlaneError(decided)) return { error: decided };
      return { stream: plan.target, events: [decided.event], ...(decided.reason ? { reason: decided.reason } : {}) };
    },
  };
}
