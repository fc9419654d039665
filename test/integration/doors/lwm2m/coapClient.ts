// Runs coapClient.child.ts (the coap package as an LwM2M client, in a process of its own) with a list of
// requests, and gives back its answers in order.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CLIENT = fileURLToPath(new URL('./coapClient.child.ts', import.meta.url));

export function runClient(port: number, requests: unknown[]): Promise<Record<string, unknown>[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLIENT], {
      env: { ...process.env, LWM2M_CLIENT: JSON.stringify({ port, requests }) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`the coap client exited ${code}`));
      resolve(output.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>));
    });
  });
}
