// The thread of leafHashers.ts: analyses the batches of export lines it is sent and answers each with its
// packed result (the hashes' buffer moved, not copied). It holds nothing between batches.
import { parentPort } from 'node:worker_threads';
import { analyseBatch } from './exportLines.ts';

parentPort!.on('message', (message: { id: number; lines: string[] }) => {
  const batch = analyseBatch(message.lines);
  parentPort!.postMessage({ id: message.id, batch }, [batch.hashes.buffer as ArrayBuffer]);
});
