// Steady client traffic for the chaos suite, from a process of its own: one loop posting ingest readings, one
// posting them for a tenant with a low limit (so some are refused with 429), one enqueueing commands. It keeps what each client was told. An enqueue answered SERVICE_UNAVAILABLE (or not
// answered) is retried with the same commandId until it gets an answer that settles it, as a client must.
// Prints `progress <answers>` as it goes; on a line "stop" on stdin it finishes and prints one JSON line.
const BASE_URL = process.env.BASE_URL!;
const INGEST_KEY = process.env.INGEST_KEY!;
const TOKEN = process.env.TOKEN!;
const LIMITED_KEY = process.env.LIMITED_KEY!;
/** The limited tenant's posts are paced, so its refusals do not crowd out the other loops on a busy machine. */
const LIMITED_EVERY_MS = 20;

const told = {
  ingest: { acceptedReadings: 0, unavailableReadings: 0, refusedReadings: 0, statuses: {} as Record<string, number> },
  limited: { acceptedReadings: 0, unavailableReadings: 0, refusedReadings: 0, statuses: {} as Record<string, number> },
  commands: { accepted: [] as string[], refused: [] as string[], unsettled: [] as string[], retries: 0 },
  problems: [] as string[],
};
let answers = 0;
let stopping = false;

const answered = () => {
  answers++;
  if (answers % 10 === 0) process.stdout.write(`progress ${answers}\n`);
};

async function ingestLoop(tenant: string, key: string, tally: typeof told.ingest, pauseMs: number): Promise<void> {
  for (let n = 0; !stopping; n++) {
    if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    let response: Response;
    try {
      response = await fetch(`${BASE_URL}/v1/ingest/${tenant}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-device-key': key },
        body: JSON.stringify({ readings: [{ deviceId: `pump-${n % 7}`, measurements: { temperature: 20, pressure: 1 } }] }),
      });
    } catch (error) {
      told.problems.push(`ingest ${tenant}: no answer: ${String(error)}`);
      continue;
    }
    const text = await response.text();
    tally.statuses[response.status] = (tally.statuses[response.status] ?? 0) + 1;
    if (response.status === 202) tally.acceptedReadings += 2;
    else if (response.status === 503 && response.headers.get('retry-after')) tally.unavailableReadings += 2;
    else if (response.status === 429) tally.refusedReadings += 2;
    else told.problems.push(`ingest ${tenant}: ${response.status} ${text}`);
    answered();
  }
}

type EnqueueAnswer = { data?: { enqueueCommand?: { __typename: string } }; errors?: Array<{ extensions?: { code?: string } }> };

async function enqueueLoop(): Promise<void> {
  for (let n = 0; !stopping; n++) {
    const commandId = `chaos-${n}`;
    const input = { tenantId: 'acme', commandId, deviceId: `pump-${n % 7}`, payload: { reboot: n } };
    for (let attempt = 0; ; attempt++) {
      let body: EnqueueAnswer | undefined;
      try {
        const response = await fetch(`${BASE_URL}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
          body: JSON.stringify({ query: 'mutation ($input: EnqueueCommandInput!) { enqueueCommand(input: $input) { __typename } }', variables: { input } }),
        });
        body = (await response.json()) as EnqueueAnswer;
        if (response.status >= 500 && response.status !== 503) told.problems.push(`enqueue: ${response.status} ${JSON.stringify(body)}`);
      } catch {
        body = undefined;
      }
      const outcome = body?.data?.enqueueCommand?.__typename;
      if (outcome === 'CommandAccepted') told.commands.accepted.push(commandId);
      else if (outcome === 'CommandRejected') told.commands.refused.push(commandId);
      else if (body?.errors?.some((error) => error.extensions?.code !== 'SERVICE_UNAVAILABLE')) {
        told.problems.push(`enqueue: ${JSON.stringify(body)}`);
      } else {
        // Unavailable or unanswered: its fate is unknown until a retry with the same id settles it.
        told.commands.retries++;
        if (attempt < 100 && !(stopping && attempt > 20)) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          continue;
        }
        told.commands.unsettled.push(commandId);
      }
      answered();
      break;
    }
  }
}

const loops = [ingestLoop('acme', INGEST_KEY, told.ingest, 0), ingestLoop('limited', LIMITED_KEY, told.limited, LIMITED_EVERY_MS), enqueueLoop()];
process.stdin.setEncoding('utf8');
process.stdin.on('data', (text: string) => {
  if (!text.includes('stop')) return;
  stopping = true;
  void Promise.all(loops).then(() => {
    process.stdout.write(`${JSON.stringify(told)}\n`);
    process.exit(0);
  });
});
