// Client traffic for the three-replica suite, from a process of its own, sent through the proxy:
// - ingest: INGEST_RATE requests per second in all, each of READINGS readings, from CONNECTIONS keep-alive
//   connections whose source addresses take turns over SOURCES (loopback addresses: the proxy forwards each
//   as the client's address, and the replicas' edge per-IP limit keys on it);
// - commands: ENQUEUE_LOOPS loops enqueueing one command after another over GraphQL; an enqueue that is not
//   settled (no answer, a proxy error, SERVICE_UNAVAILABLE) is sent again with the same commandId, as a client
//   must, until it is accepted or refused; ENQUEUE_PAUSE_MS between one loop's commands.
// Every answer that is not the service's own verdict (a proxy error, a 5xx, no answer at all) is a failure
// and kept. Prints `progress <answers>` as it goes; on a line "stop" on stdin it finishes the requests under
// way and prints one JSON line (TrafficReport).
import http from 'node:http';
import { postAnswer } from '../support/postAnswer.ts';

const BASE = new URL(process.env.BASE_URL!);
const TENANT = process.env.TENANT!;
const INGEST_KEY = process.env.INGEST_KEY ?? '';
const INGEST_RATE = Number(process.env.INGEST_RATE ?? '0');
const READINGS = Number(process.env.READINGS ?? '1');
const SOURCES = (process.env.SOURCES ?? '127.0.0.1').split(',');
const CONNECTIONS = Number(process.env.CONNECTIONS ?? '8');
const TOKEN = process.env.TOKEN ?? '';
const ENQUEUE_LOOPS = Number(process.env.ENQUEUE_LOOPS ?? '0');
const COMMAND_PREFIX = process.env.COMMAND_PREFIX ?? 'cmd';
/** A pause between one loop's commands, so the loops do not fill the ledger faster than the suite can read it. */
const ENQUEUE_PAUSE_MS = Number(process.env.ENQUEUE_PAUSE_MS ?? '50');
const ANSWER_WITHIN_MS = 20_000;

export interface TrafficReport {
  ingest: {
    statuses: Record<string, number>;
    acceptedReadings: number;
    /** Every 202: [answered at (ms since the epoch), the replica that answered (X-Served-By), readings]. */
    accepted: Array<[number, string, number]>;
    /** The first refusals (429), with the replica that answered: which limit said no. */
    refusals: string[];
  };
  commands: { accepted: string[]; refused: string[]; unsettled: string[]; retries: number };
  /** Answers served, by replica. */
  servedBy: Record<string, number>;
  failures: string[];
}

const report: TrafficReport = {
  ingest: { statuses: {}, acceptedReadings: 0, accepted: [], refusals: [] },
  commands: { accepted: [], refused: [], unsettled: [], retries: 0 },
  servedBy: {},
  failures: [],
};
let answers = 0;
let stopping = false;

const post = (agent: http.Agent, path: string, headers: Record<string, string>, body: string) =>
  postAnswer(BASE, path, headers, body, { agent, timeoutMs: ANSWER_WITHIN_MS });

const answered = (servedBy: string) => {
  report.servedBy[servedBy] = (report.servedBy[servedBy] ?? 0) + 1;
  if (++answers % 20 === 0) process.stdout.write(`progress ${answers}\n`);
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function ingestWorker(worker: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1, localAddress: SOURCES[worker % SOURCES.length] });
  const intervalMs = (CONNECTIONS * 1000) / INGEST_RATE;
  const measurements = Object.fromEntries(Array.from({ length: READINGS }, (_, i) => [`m${i}`, i]));
  // Workers start spread over one interval, so the requests are not sent in waves.
  let nextAt = performance.now() + (intervalMs * worker) / CONNECTIONS;
  for (let n = 0; !stopping; n++) {
    const wait = nextAt - performance.now();
    if (wait > 0) await sleep(wait);
    // Behind by more than a few intervals (a stalled machine): carry on at the rate instead of bursting.
    else if (wait < -4 * intervalMs) nextAt = performance.now();
    nextAt += intervalMs;
    if (stopping) break;
    const body = JSON.stringify({ readings: [{ deviceId: `pump-${worker}-${n % 5}`, measurements }] });
    try {
      const answer = await post(agent, `/v1/ingest/${TENANT}`, { 'x-device-key': INGEST_KEY }, body);
      report.ingest.statuses[answer.status] = (report.ingest.statuses[answer.status] ?? 0) + 1;
      if (answer.status === 202) {
        report.ingest.acceptedReadings += READINGS;
        report.ingest.accepted.push([Date.now(), answer.servedBy, READINGS]);
      } else if (answer.status === 429) {
        if (report.ingest.refusals.length < 20) report.ingest.refusals.push(`${answer.servedBy}: ${answer.body.slice(0, 300)}`);
      } else {
        report.failures.push(`ingest: ${answer.status} from ${answer.servedBy}: ${answer.body.slice(0, 300)}`);
      }
      answered(answer.servedBy);
    } catch (error) {
      report.failures.push(`ingest: no answer: ${String(error)}`);
    }
  }
  agent.destroy();
}

type EnqueueAnswer = { data?: { enqueueCommand?: { __typename: string } }; errors?: Array<{ message?: string; extensions?: { code?: string } }> };

async function enqueueLoop(loop: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  for (let n = 0; !stopping; n++) {
    const commandId = `${COMMAND_PREFIX}-${loop}-${n}`;
    const input = { tenantId: TENANT, commandId, deviceId: `pump-${n % 7}`, payload: { reboot: n } };
    const body = JSON.stringify({ query: 'mutation ($input: EnqueueCommandInput!) { enqueueCommand(input: $input) { __typename } }', variables: { input } });
    for (let attempt = 0; ; attempt++) {
      let outcome: string | undefined;
      try {
        const answer = await post(agent, '/graphql', { authorization: `Bearer ${TOKEN}`, accept: 'application/json' }, body);
        let parsed: EnqueueAnswer | undefined;
        try {
          parsed = JSON.parse(answer.body) as EnqueueAnswer;
        } catch {
          parsed = undefined;
        }
        outcome = parsed?.data?.enqueueCommand?.__typename;
        if (outcome === undefined) report.failures.push(`enqueue ${commandId}: ${answer.status} from ${answer.servedBy}: ${answer.body.slice(0, 300)}`);
        answered(answer.servedBy);
      } catch (error) {
        report.failures.push(`enqueue ${commandId}: no answer: ${String(error)}`);
      }
      if (outcome === 'CommandAccepted') report.commands.accepted.push(commandId);
      else if (outcome === 'CommandRejected') report.commands.refused.push(commandId);
      else if (outcome !== undefined) report.failures.push(`enqueue ${commandId}: answered ${outcome}`);
      else {
        // Its fate is unknown until an answer settles it: the same commandId again.
        report.commands.retries++;
        if (attempt < 100 && !(stopping && attempt > 20)) {
          await sleep(100);
          continue;
        }
        report.commands.unsettled.push(commandId);
      }
      break;
    }
    await sleep(ENQUEUE_PAUSE_MS);
  }
  agent.destroy();
}

const loops = [
  ...(INGEST_RATE > 0 ? Array.from({ length: CONNECTIONS }, (_, worker) => ingestWorker(worker)) : []),
  ...Array.from({ length: ENQUEUE_LOOPS }, (_, loop) => enqueueLoop(loop)),
];
process.stdin.setEncoding('utf8');
process.stdin.on('data', (text: string) => {
  if (!text.includes('stop') || stopping) return;
  stopping = true;
  void Promise.all(loops).then(() => {
    process.stdout.write(`${JSON.stringify(report)}\n`, () => process.exit(0));
  });
});
