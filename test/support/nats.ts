// The machine's NATS (NATS_URL, default 127.0.0.1:4222) for suites that need it; a suite skips itself, and says
// so, when no server answers.
import { connect } from 'nats';

export const natsUrl = process.env.NATS_URL ?? '127.0.0.1:4222';

/** True when NATS answers within a second; otherwise warns that `suite` is skipped. */
export async function natsReachable(suite: string): Promise<boolean> {
  const reachable = await connect({ servers: natsUrl, timeout: 1000 })
    .then(async (connection) => {
      await connection.close();
      return true;
    })
    .catch(() => false);
  if (!reachable) console.warn(`NATS is not reachable at ${natsUrl}: ${suite} is skipped.`);
  return reachable;
}
