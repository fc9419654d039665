// Steady client traffic for the chaos suite, from a process of its own: one loop posting ingest readings, one
// posting them for a tenant with a low limit (so some are refused with 429), one enqueueing commands. It keeps
// what each client was told. An enqueue answered SERVICE_UNAVAILABLE (or not answered) is retried with the same
// commandId until it gets an answer that settles it, as a client must (../support/commandClient.ts).
// Prints `progress <answers>` as it goes; on a line "stop" on stdin it finishes and prints one JSON line.
import { commandsTold, enqueueCommandsUntil } from '../support/commandClient.ts';

const BASE_URL = process.env.BASE_URL!;
const INGEST_KEY = process.env.INGEST_KEY!;
const TOKEN = process.env.TOKEN!;
const LIMITED_KEY = process.env.LIMITED_KEY!;
/** The limited tenant's posts are paced, so its refusals do not crowd out the other loops on a busy machine. */
const LIMITED_EVERY_MS = 20;

const told = {
  ingest: { acceptedReadings: 0, unavailableReadings: 0, refusedReadings: 0, statuses: {} as Record<string, number> },
  limited: { acceptedReadings: 0, unavailableReadings: 0, refusedReadings: 0, statuses: {} as Record<string, number> },
  commands: commandsTold(),
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

// Once told to stop, a command of unknown fate is retried a little longer only: the service is up again by then.
const enqueueLoop = () =>
  enqueueCommandsUntil(() => stopping, {
    baseUrl: BASE_URL,
    token: TOKEN,
    prefix: 'chaos-',
    told: told.commands,
    maxRetries: 100,
    giveUp: (attempt) => stopping && attempt > 20,
    answered,
  });

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
