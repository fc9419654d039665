// The LwM2M door against what issue 34 sent it, over real UDP at production settings (readSettings({}):
// INGEST_MAX_BODY_BYTES 1 MiB, 4 uploads per address, 1,024 and 16 MiB in all, 60 s idle; the edge limit at
// 1,000/s): block-wise Sends never finished, without a key and with one; Resets, pings, Observe and
// datagrams that are not CoAP. A real coap client (the coap package, in a child process) Sends block-wise and
// registers block-wise; what a client library would not send is written byte by byte (coapDatagrams.ts).
import type { Socket } from 'node:dgram';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSettings } from '../../../../src/config.ts';
import { Governor } from '../../../../src/governance/index.ts';
import { createCountingSink, type CountingSink } from '../../../../src/doors/pipeline/countingSink.ts';
import { cachedCredentialLookup } from '../../../../src/doors/pipeline/credentialCache.ts';
import { findIngestCredential } from '../../../../src/auth/ingestKeys.ts';
import { createEdgeLimit } from '../../../../src/doors/pipeline/edgeLimit.ts';
import { Lwm2mCoapServer } from '../../../../src/doors/lwm2m/coapServer.ts';
import { ANSWER_CACHE_BYTES, startLwm2mDoor, type Lwm2mDoor, type Lwm2mDoorParts } from '../../../../src/doors/lwm2m/startLwm2mDoor.ts';
import { postgresOnly, storageTargets, type TestDb } from '../../../support/databases.ts';
import { block1, OPTION, optionUint, RawCoapPeer, sendRequest, TYPE, type Datagram } from '../../../support/coapDatagrams.ts';
import { waitFor } from '../../../support/waitFor.ts';
import { CollectingRecorder, TableLimitSource } from '../http/frontDoorHarness.ts';
import { knowCeilings } from '../mqtt/mqttHarness.ts';
import { runClient } from './coapClient.ts';
import { registeredKey } from './lwm2mHarness.ts';

const production = readSettings({});
const KIB = Buffer.alloc(1024, 0x20);

describe('LwM2M door under attack (issue 34 items 6 and 10)', () => {
  let testDb: TestDb;
  let door: Lwm2mDoor;
  let sink: CountingSink;
  let key: string;
  const recorder = new CollectingRecorder();
  const governor = new Governor({ limitSource: new TableLimitSource().tenant('grid', { INGEST: { override: { ratePerSecond: 1000, burst: 1000 } } }), recorder });
  const dropped: string[] = [];
  const peers: RawCoapPeer[] = [];
  let doorParts: Omit<Lwm2mDoorParts, 'uploadLimits'>;

  beforeAll(async () => {
    testDb = await (postgresOnly ?? storageTargets[0]!).open();
    key = await registeredKey(testDb.db, 'grid', 'meter-7');
    sink = createCountingSink();
    await knowCeilings(governor, ['grid']);
    doorParts = {
      port: 0,
      host: '127.0.0.1',
      parts: {
        governor,
        sink,
        edgeLimit: createEdgeLimit({ ratePerSecond: production.edgeIpRatePerSecond }),
        findCredential: cachedCredentialLookup((each) => findIngestCredential(testDb.db, each)),
      },
      logger: pino({ level: 'silent' }),
      maxPayloadBytes: production.ingestMaxBodyBytes,
      onDropped: (reason) => dropped.push(reason),
    };
    door = await startLwm2mDoor({ ...doorParts, uploadLimits: production.lwm2mUploads });
  }, 180_000);

  afterAll(async () => {
    for (const peer of peers) peer.close();
    await door?.close();
    await governor.close();
    await testDb?.dispose();
  });

  const openPeer = async (port = door.port) => {
    const peer = await RawCoapPeer.open(port);
    peers.push(peer);
    return peer;
  };

  /** One exchange; over the edge limit (4.29), waits its Max-Age and sends again, so pacing never fails a test. */
  async function exchange(peer: RawCoapPeer, build: (messageId: number) => Buffer): Promise<Datagram> {
    for (;;) {
      const answer = await peer.exchange(build);
      if (!answer) throw new Error('no answer within 5 s');
      if (answer.code !== '4.29') return answer;
      await new Promise((resolve) => setTimeout(resolve, (optionUint(answer, OPTION.maxAge) ?? 1) * 1000));
    }
  }

  it('takes a block-wise Send and a block-wise registration from the coap package as client', async () => {
    const records = Array.from({ length: 120 }, (_, i) => ({ n: `/3303/${i}/5700`, v: i + 0.5 }));
    const senml = JSON.stringify(records);
    expect(senml.length).toBeGreaterThan(3 * 1024);
    const links = Array.from({ length: 80 }, (_, i) => `</${3300 + i}/0>`).join(',');
    const answers = await runClient(door.port, [
      { method: 'POST', pathname: '/dp', query: `k=${key}`, contentFormat: 'application/senml+json', payload: senml, block1: 6 },
      { method: 'POST', pathname: '/rd', query: `ep=meter-7&lt=60&lwm2m=1.1&k=${key}`, contentFormat: 'application/link-format', payload: links, block1: 4 },
    ]);
    expect(answers.map((each) => each.code)).toEqual(['2.04', '2.01']);
    expect(sink.unitsByTenant.get('grid')).toBe(120);
    expect(door.uploads.stats()).toMatchObject({ uploads: 0, bufferedBytes: 0 });
  });

  it('holds nothing for Block1 uploads without a key: 40 peers of 200 blocks of 1 KiB, never finished, all 4.01; the answers kept for retransmissions stay within their bound', async () => {
    const peersCount = 40;
    const blocksEach = 200;
    const codes = new Map<string, number>();
    await Promise.all(
      Array.from({ length: peersCount }, async () => {
        const peer = await openPeer();
        for (let num = 0; num < blocksEach; num++) {
          const answer = await peer.exchange((messageId) => sendRequest({ messageId, block: block1(num, true), payload: KIB }));
          const code = answer?.code ?? 'none';
          codes.set(code, (codes.get(code) ?? 0) + 1);
          expect(door.uploads.stats().uploads).toBe(0);
        }
      }),
    );
    console.log(`${peersCount * blocksEach} unauthenticated blocks answered ${JSON.stringify(Object.fromEntries(codes))}; uploads held ${JSON.stringify(door.uploads.stats())}`);
    // Refused before a byte is kept; past the edge limit (all peers share 127.0.0.1) 4.29, never 2.31.
    expect([...codes.keys()].every((code) => code === '4.01' || code === '4.29')).toBe(true);
    expect(codes.get('4.01')).toBeGreaterThan(0);
    expect(door.uploads.stats()).toMatchObject({ uploads: 0, bufferedBytes: 0 });
    // The answers kept for retransmissions are bounded too (each keeps the 1 KiB request it answers alive).
    const cached = door.cachedAnswers();
    console.log(`answers kept for retransmissions: ${cached.count}, ${cached.bytes} bytes`);
    expect(cached.bytes).toBeLessThanOrEqual(ANSWER_CACHE_BYTES);
  });

  it('bounds the uploads a device with a key can hold: 4 per address (5.03 with Max-Age), the declared and the accumulated size (4.13 with Size1), blocks in order (4.08)', async () => {
    const query = [`k=${key}`];
    const uploaders = await Promise.all(Array.from({ length: 5 }, () => openPeer()));
    const firsts: Datagram[] = [];
    for (const peer of uploaders) firsts.push(await exchange(peer, (messageId) => sendRequest({ messageId, query, block: block1(0, true), payload: KIB })));
    expect(firsts.map((each) => each.code)).toEqual(['2.31', '2.31', '2.31', '2.31', '5.03']);
    expect(optionUint(firsts[0]!, OPTION.block1)).toBe((0 << 4) | 8 | 6);
    expect(optionUint(firsts[4]!, OPTION.maxAge)).toBeGreaterThanOrEqual(1);
    expect(door.uploads.stats()).toMatchObject({ uploads: 4, bufferedBytes: 4 * 1024 });

    // A declared size past INGEST_MAX_BODY_BYTES is refused at its first block, holding nothing.
    const declared = await exchange(uploaders[4]!, (messageId) => sendRequest({ messageId, query, block: block1(0, true), size1: 2 * 1024 * 1024, payload: KIB }));
    expect(declared.code).toBe('4.13');
    expect(optionUint(declared, OPTION.size1)).toBe(production.ingestMaxBodyBytes);

    // A block that does not follow the last one received.
    expect((await exchange(uploaders[1]!, (messageId) => sendRequest({ messageId, query, block: block1(5, true), payload: KIB }))).code).toBe('4.08');

    // One upload sent to the cap, block by block: the block that passes it is 4.13 and the upload is gone.
    const blocksToCap = production.ingestMaxBodyBytes / 1024;
    const startedAt = performance.now();
    for (let num = 1; num < blocksToCap; num++) {
      const answer = await exchange(uploaders[0]!, (messageId) => sendRequest({ messageId, query, block: block1(num, true), payload: KIB }));
      if (answer.code !== '2.31') throw new Error(`block ${num} answered ${answer.code}`);
    }
    expect(door.uploads.stats()).toMatchObject({ uploads: 4, bufferedBytes: (blocksToCap + 3) * 1024 });
    const past = await exchange(uploaders[0]!, (messageId) => sendRequest({ messageId, query, block: block1(blocksToCap, true), payload: KIB }));
    console.log(`${blocksToCap} blocks of 1 KiB in ${((performance.now() - startedAt) / 1000).toFixed(1)} s; the next answered ${past.code}`);
    expect(past.code).toBe('4.13');
    expect(optionUint(past, OPTION.size1)).toBe(production.ingestMaxBodyBytes);
    expect(door.uploads.stats()).toMatchObject({ uploads: 3, bufferedBytes: 3 * 1024 });
    expect(dropped.filter((reason) => reason === 'too-large')).toHaveLength(2);

    // Room again for the fifth peer, now that one upload ended.
    expect((await exchange(uploaders[4]!, (messageId) => sendRequest({ messageId, query, block: block1(0, true), payload: KIB }))).code).toBe('2.31');
  }, 120_000);

  it('drops an upload no block reached for GOVERNANCE_LWM2M_UPLOAD_IDLE_SECONDS, without a block to notice it', async () => {
    const quick = await startLwm2mDoor({ ...doorParts, uploadLimits: { ...production.lwm2mUploads, idleMs: 1_000 } });
    try {
      const peer = await openPeer(quick.port);
      const query = [`k=${key}`];
      expect((await exchange(peer, (messageId) => sendRequest({ messageId, query, block: block1(0, true), payload: KIB }))).code).toBe('2.31');
      expect(quick.uploads.stats()).toMatchObject({ uploads: 1, bufferedBytes: 1024 });
      const startedAt = performance.now();
      await waitFor(() => quick.uploads.stats().uploads === 0, { description: 'the idle upload dropped' });
      const goneAfterMs = performance.now() - startedAt;
      console.log(`the idle upload was dropped ${goneAfterMs.toFixed(0)} ms after its block (idle bound 1,000 ms, checked every 1,000 ms)`);
      expect(quick.uploads.stats()).toEqual({ uploads: 0, bufferedBytes: 0, expired: 1 });
      expect((await exchange(peer, (messageId) => sendRequest({ messageId, query, block: block1(1, true), payload: KIB }))).code).toBe('4.08');
    } finally {
      await quick.close();
    }
  });

  it('never answers a Reset, answers a ping with a Reset, and rejects a datagram that is not CoAP with a Reset, without error text', async () => {
    const peer = await openPeer();
    // RST (type 3, empty): the package answered it 4.04.
    const resetId = peer.messageId();
    peer.send(Buffer.from([0x70, 0x00, resetId >> 8, resetId & 0xff]));
    // Empty CON: a CoAP ping.
    const pingId = peer.messageId();
    peer.send(Buffer.from([0x40, 0x00, pingId >> 8, pingId & 0xff]));
    const pong = await peer.answer(pingId);
    expect(pong).toMatchObject({ type: TYPE.rst, code: '0.00', messageId: pingId });
    // A CON POST whose option header promises a byte that is not there: the package answered 5.00 with Node's
    // error text ("Attempt to access memory outside buffer bounds", or "The value of "offset" is out of range").
    const brokenId = peer.messageId();
    peer.send(Buffer.from([0x40, 0x02, brokenId >> 8, brokenId & 0xff, 0xd0]));
    const rejected = await peer.answer(brokenId);
    expect(rejected).toMatchObject({ type: TYPE.rst, code: '0.00', messageId: brokenId });
    expect(rejected!.payload.length).toBe(0);
    // The same as NON: ignored.
    const brokenNonId = peer.messageId();
    peer.send(Buffer.from([0x50, 0x02, brokenNonId >> 8, brokenNonId & 0xff, 0xd0]));
    expect(await peer.answer(resetId, 500)).toBeUndefined();
    expect(await peer.answer(brokenNonId, 100)).toBeUndefined();
    // A Block1 option longer than 3 bytes: 4.02 Bad Option, not the package's thrown text.
    const badBlock = await exchange(peer, (messageId) => sendRequest({ messageId, query: [`k=${key}`], block: Buffer.from([0, 0, 0, 0x0e]), payload: KIB }));
    expect(badBlock.code).toBe('4.02');
  });

  it('answers an error of the CoAP layer with "internal error" and logs the detail', async () => {
    const faults: string[] = [];
    const server = new Lwm2mCoapServer({ type: 'udp4', onFault: (kind, detail) => faults.push(`${kind}: ${detail}`) });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    try {
      const port = (server._sock as Socket).address().port;
      const peer = await openPeer(port);
      const messageId = peer.messageId();
      // What the package does with an error thrown while it handles a request (its handleEnding).
      server._sendError(Buffer.from('Attempt to access memory outside buffer bounds'), peer.address(), { messageId, token: Buffer.from([9]), confirmable: true, code: '0.02' });
      const answer = await peer.answer(messageId);
      expect(answer).toMatchObject({ type: TYPE.ack, code: '5.00', messageId });
      expect(answer!.token).toEqual(Buffer.from([9]));
      expect(answer!.payload.toString()).toBe('internal error');
      expect(faults).toEqual(['failed: Attempt to access memory outside buffer bounds']);
    } finally {
      server.close();
    }
  });

  it('answers a GET with Observe as a plain GET: 4.05 on /dp, 4.04 on a path it does not serve, never a 2.05 notification', async () => {
    const answers = await runClient(door.port, [
      { method: 'GET', pathname: '/dp', observe: true },
      { method: 'GET', pathname: '/3303/0/5700', observe: true },
    ]);
    expect(answers.map((each) => each.code)).toEqual(['4.05', '4.04']);
    expect(answers.map((each) => each.observe)).toEqual([undefined, undefined]);
    const peer = await openPeer();
    const raw = await exchange(peer, (messageId) => sendRequest({ messageId, code: '0.01', observe: true }));
    expect(raw.code).toBe('4.05');
    expect(raw.options.some((option) => option.number === OPTION.observe)).toBe(false);
  });
});
