// The service as `governance serve` runs it (the same start, listener and process lifecycle), plus a way for a
// test to plant a bug: a line "throw" on stdin throws from a timer (an uncaught exception), "reject" leaves a
// promise rejected with no handler.
import { readSettings } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { endProcessOnSignalsAndCrashes } from '../../src/processLifecycle.ts';
import { createServer, listen } from '../../src/http-server/server.ts';
import { startService } from '../../src/service.ts';

const settings = readSettings();
const logger = createLogger(settings.logLevel);
const service = await startService(settings, logger);
const server = createServer(service, service.routes);
const address = await listen(server, settings.port, settings.host);
endProcessOnSignalsAndCrashes({ logger, server, service });
logger.info({ port: address.port }, `governance-ledger listening on http://localhost:${address.port}/graphql`);

process.stdin.setEncoding('utf8');
process.stdin.on('data', (text: string) => {
  if (text.includes('throw')) {
    setTimeout(() => {
      throw new Error('a bug planted by the test: thrown from a timer');
    });
  }
  if (text.includes('reject')) void Promise.reject(new Error('a bug planted by the test: a rejection nobody handles'));
});
