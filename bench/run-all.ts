// `npm run bench`: runs every benchmark one after another (never two at once: they measure the machine) and
// prints each one's last JSON line, then all of them as one JSON array. `npm run bench -- admit trends` runs some.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const benchDir = fileURLToPath(new URL('.', import.meta.url));
const wanted = process.argv.slice(2);
const names = readdirSync(benchDir)
  .filter((file) => file.endsWith('.ts') && file !== 'run-all.ts')
  .map((file) => file.replace(/\.ts$/, ''))
  .filter((name) => wanted.length === 0 || wanted.includes(name))
  .sort();

function run(name: string): Promise<unknown> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', `${benchDir}${name}.ts`], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      process.stdout.write(chunk);
    });
    child.on('close', (code) => {
      const last = output.trim().split('\n').at(-1) ?? '';
      try {
        resolve(JSON.parse(last));
      } catch {
        resolve({ bench: name, error: `exited ${code} without a JSON last line` });
      }
    });
  });
}

const results: unknown[] = [];
for (const name of names) {
  console.log(`\n== ${name}`);
  results.push(await run(name));
}
console.log(JSON.stringify(results));
