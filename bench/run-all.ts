// `npm run bench`: runs every benchmark one after another (never two at once: they measure the machine) and
// prints each one's last JSON line, then all of them as one JSON array. `npm run bench -- admit trends` runs
// some; `npm run bench -- --quick` runs each in its quick mode (BENCH_QUICK=1: fewer and shorter rounds, to
// prove the set runs and for a first re-measure). Each result gets the seconds the bench took and the
// machine's 1-minute load average when it started and when it ended (`loadAverage`, `loadAverageEnd`), the CPU
// that other programs used meanwhile (`foreignCores`, bench/support/foreignCpu.ts: the load average counts the
// bench's own replicas, proxy and generator too), and `host`: "quiet" when the foreign CPU stayed under a tenth
// of a core (where /proc cannot be read: when both load averages were under the machine's cores), else
// "loaded". A figure taken on a loaded host is not a quiet-machine figure and RESULTS.md labels it so. A bench that fails or prints no JSON line is
// reported as such and the rest still run. `--out FILE` also writes the results there (JSON array).
import { spawn } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { meterForeignCpu, type ForeignCpu } from './support/foreignCpu.ts';

const benchDir = fileURLToPath(new URL('.', import.meta.url));
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const outIndex = args.indexOf('--out');
const outFile = outIndex >= 0 ? args[outIndex + 1] : undefined;
const wanted = args.filter((arg, index) => !arg.startsWith('--') && (outIndex < 0 || index !== outIndex + 1));
const cores = availableParallelism();
const names = readdirSync(benchDir)
  .filter((file) => file.endsWith('.ts') && file !== 'run-all.ts')
  .map((file) => file.replace(/\.ts$/, ''))
  .filter((name) => wanted.length === 0 || wanted.includes(name))
  .sort();

const round2 = (value: number) => Math.round(value * 100) / 100;

/** Quiet: other programs used less than this many cores while the bench ran. */
const QUIET_FOREIGN_CORES = 0.1;

function run(name: string): Promise<{ result: Record<string, unknown>; foreign: ForeignCpu }> {
  return new Promise((resolve) => {
    const env = quick ? { ...process.env, BENCH_QUICK: '1' } : process.env;
    const child = spawn(process.execPath, ['--import', 'tsx', `${benchDir}${name}.ts`], { stdio: ['ignore', 'pipe', 'inherit'], env });
    const meter = meterForeignCpu(child.pid ?? -1);
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      process.stdout.write(chunk);
    });
    child.on('close', (code) => {
      const foreign = meter.stop();
      const last = output.trim().split('\n').at(-1) ?? '';
      try {
        resolve({ result: JSON.parse(last) as Record<string, unknown>, foreign });
      } catch {
        resolve({ result: { bench: name, error: `exited ${code} without a JSON last line` }, foreign });
      }
    });
  });
}

const results: unknown[] = [];
const startedAll = performance.now();
for (const name of names) {
  console.log(`\n== ${name}${quick ? ' (quick)' : ''}`);
  const loadAverage = round2(loadavg()[0]!);
  const started = performance.now();
  const { result, foreign } = await run(name);
  const loadAverageEnd = round2(loadavg()[0]!);
  const quiet = foreign.foreignCores !== null ? foreign.foreignCores < QUIET_FOREIGN_CORES : loadAverage < cores && loadAverageEnd < cores;
  results.push({ ...result, seconds: round2((performance.now() - started) / 1000), loadAverage, loadAverageEnd, cores, ...foreign, host: quiet ? 'quiet' : 'loaded' });
}
console.log(`\n${names.length} benches in ${Math.round((performance.now() - startedAll) / 1000)} s${quick ? ' (quick)' : ''}`);
for (const result of results as Record<string, unknown>[]) {
  const figure = 'error' in result ? `error: ${String(result.error)}` : `ratio ${String(result.ratio)} (${String(result.ours)} against ${String(result.baseline)} ${String(result.unit)})`;
  console.log(`${String(result.bench)}: ${figure}; load ${String(result.loadAverage)}-${String(result.loadAverageEnd)} on ${cores} cores, other programs ${String(result.foreignCores)} cores, ${String(result.host)} host`);
}
console.log(JSON.stringify(results));
if (outFile !== undefined) writeFileSync(outFile, `${JSON.stringify(results, null, 2)}\n`);
