// Enqueueing commands as a client must while the service's dependencies fail (the database-fault suites, and the
// chaos suite's traffic process, so nothing here needs vitest): an answer of SERVICE_UNAVAILABLE, or none at
// all, leaves a command's fate unknown until a retry with the same commandId settles it. What each command
// came to is kept, for the check that the ledger agrees (databaseFaultSuite.ts).

/** What the client was told of its commands. */
export interface CommandsTold {
  accepted: string[];
  refused: string[];
  /** Still of unknown fate after every retry allowed. */
  unsettled: string[];
  /** Answers no client should get: an error other than SERVICE_UNAVAILABLE, a 5xx other than 503. */
  problems: string[];
  retries: number;
}

export function commandsTold(): CommandsTold {
  return { accepted: [], refused: [], unsettled: [], problems: [], retries: 0 };
}

export interface CommandInput {
  tenantId: string;
  commandId: string;
  deviceId: string;
  payload: Record<string, unknown>;
}

type EnqueueAnswer = { data?: { enqueueCommand?: { __typename: string } }; errors?: Array<{ extensions?: { code?: string } }> };

const ENQUEUE = 'mutation ($input: EnqueueCommandInput!) { enqueueCommand(input: $input) { __typename } }';
/** The pause before a retry: the service answers SERVICE_UNAVAILABLE at once while its database is away. */
const RETRY_PAUSE_MS = 100;

/**
 * Enqueues the command on the service at `baseUrl` (an OPERATOR or SERVICE `token`) until an answer settles it,
 * retrying at most `maxRetries` times, and no more once `giveUp(attempt)` says so; records what it came to in
 * `told` and returns it.
 */
export async function enqueueUntilSettled(
  baseUrl: string,
  token: string,
  input: CommandInput,
  told: CommandsTold,
  maxRetries: number,
  giveUp: (attempt: number) => boolean = () => false,
): Promise<'accepted' | 'refused' | 'unsettled' | 'problem'> {
  for (let attempt = 0; ; attempt++) {
    let body: EnqueueAnswer | undefined;
    try {
      const response = await fetch(`${baseUrl}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query: ENQUEUE, variables: { input } }),
      });
      body = (await response.json()) as EnqueueAnswer;
      if (response.status >= 500 && response.status !== 503) told.problems.push(`enqueue: ${response.status} ${JSON.stringify(body)}`);
    } catch {
      body = undefined;
    }
    const outcome = body?.data?.enqueueCommand?.__typename;
    if (outcome === 'CommandAccepted') {
      told.accepted.push(input.commandId);
      return 'accepted';
    }
    if (outcome === 'CommandRejected') {
      told.refused.push(input.commandId);
      return 'refused';
    }
    if (body?.errors?.some((error) => error.extensions?.code !== 'SERVICE_UNAVAILABLE')) {
      told.problems.push(`enqueue: ${JSON.stringify(body)}`);
      return 'problem';
    }
    told.retries++;
    if (attempt >= maxRetries || giveUp(attempt)) {
      told.unsettled.push(input.commandId);
      return 'unsettled';
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS));
  }
}

/**
 * Enqueues acme's commands `<prefix>0`, `<prefix>1`, ... one after another until `stopped()`, each until an
 * answer settles it (enqueueUntilSettled), and calls `answered` with what each came to.
 */
export async function enqueueCommandsUntil(
  stopped: () => boolean,
  options: {
    baseUrl: string;
    token: string;
    prefix: string;
    told: CommandsTold;
    maxRetries: number;
    giveUp?: (attempt: number) => boolean;
    answered: (outcome: 'accepted' | 'refused' | 'unsettled' | 'problem') => void;
  },
): Promise<void> {
  for (let n = 0; !stopped(); n++) {
    const input = { tenantId: 'acme', commandId: `${options.prefix}${n}`, deviceId: `pump-${n % 7}`, payload: { reboot: n } };
    options.answered(await enqueueUntilSettled(options.baseUrl, options.token, input, options.told, options.maxRetries, options.giveUp));
  }
}
