import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { readSettings } from '../../../../src/config.ts';
import type { Db } from '../../../../src/db/db.ts';
import type { Governor } from '../../../../src/governance/index.ts';
import { startDoorParts } from '../../../../src/doors/pipeline/startDoorParts.ts';

function capturingLogger() {
  const lines: { level: number; msg: string; sink?: string }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

describe('door parts without NATS_URL', () => {
  it('say once, as a warning at start-up, that accepted readings are counted and discarded', async () => {
    const { logger, lines } = capturingLogger();
    // Neither the database nor the governor is touched while the parts are built: only when a door uses them.
    const parts = await startDoorParts({ settings: readSettings({}), db: {} as Db, governor: {} as Governor, logger });
    await parts.close();
    const warnings = lines.filter((line) => line.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ sink: 'counting' });
    expect(warnings[0]!.msg).toMatch(/NATS_URL is not set: accepted ingest readings are counted and discarded/);
  });
});
