// Load generators for the HTTP and gRPC benches, in processes of their own: wrk (C, HTTP/1.1) and h2load
// (nghttp2's, HTTP/2, for gRPC). autocannon (JavaScript) stays only as a fallback where wrk is not installed
// (BENCH_LOAD=autocannon asks for it): it needs about as much CPU per request as the servers it loads, so on two
// cores its ratios measured the generator (bench/RESULTS.md, ingest-peers). A bench pins its servers to core 0
// and this process to core 1 (pinToCore, benchServer.ts); wrk and h2load inherit this process's core.
import { execFile, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import { pinToCore } from './benchServer.ts';

/** wrk when it is installed and not overruled by BENCH_LOAD=autocannon. */
export const HTTP_GENERATOR: 'wrk' | 'autocannon' =
  process.env.BENCH_LOAD === 'autocannon' || spawnSync('wrk', ['--version']).error !== undefined ? 'autocannon' : 'wrk';

/** Whether h2load (nghttp2-client) is installed. */
export const H2LOAD_INSTALLED = spawnSync('h2load', ['--version']).error === undefined;

export interface HttpLoad {
  url: string;
  method?: 'GET' | 'POST';
  body?: string;
  /** Request headers; names and values ASCII. */
  headers: Record<string, string>;
  connections: number;
  seconds: number;
  /** Where wrk's Lua script for this load is written (one file per target). */
  script: string;
}

export interface LoadResult {
  requests: number;
  requestsPerSecond: number;
  /** Connect, read, write and timeout errors. */
  errors: number;
  /** Answers by exact HTTP status. */
  statuses: Record<string, number>;
  /** CPU time the generator used, in microseconds. */
  generatorCpuMicros: number;
  /** Latency percentiles of the answers, in ms. */
  p50Ms: number;
  p99Ms: number;
}

export function httpLoad(load: HttpLoad): Promise<LoadResult> {
  return HTTP_GENERATOR === 'wrk' ? loadWithWrk(load) : loadWithAutocannon(load);
}

/** The line's `generator`: what made the load and where it ran. */
export function generatorOf(tool: string, pinned: boolean, detail: string): string {
  return `${tool} (${detail}) in a process of its own, ${pinned ? 'pinned to core 1 with taskset, the servers to core 0' : 'unpinned'}`;
}

/** The statuses other than `expected`, as "n x status" (empty when every answer was `expected`). */
export function otherStatuses(result: LoadResult, expected: number): string {
  return Object.entries(result.statuses)
    .filter(([status, count]) => status !== String(expected) && count > 0)
    .map(([status, count]) => `${count} x ${status}`)
    .join(', ');
}

/**
 * CPU time of this process's children that have exited and been waited for (cutime + cstime of /proc/self/stat),
 * in microseconds: a generator run to its end (wrk, h2load) is counted here once it exits.
 */
export function exitedChildrenCpuMicros(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[13]) + Number(fields[14])) * 1_000_000) / 100; // cutime and cstime, fields 16 and 17, in ticks of 1/100 s
}

async function loadWithAutocannon(load: HttpLoad): Promise<LoadResult> {
  const cpuBefore = process.cpuUsage();
  const result = await autocannon({
    url: load.url,
    method: load.method ?? 'POST',
    ...(load.body !== undefined ? { body: load.body } : {}),
    headers: load.headers,
    connections: load.connections,
    duration: load.seconds,
  });
  const stats = (result.statusCodeStats ?? {}) as Record<string, { count: number } | undefined>;
  const cpu = process.cpuUsage(cpuBefore);
  return {
    generatorCpuMicros: cpu.user + cpu.system,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests: result.requests.total,
    requestsPerSecond: result.requests.average,
    errors: result.errors,
    statuses: Object.fromEntries(Object.entries(stats).map(([status, each]) => [status, each?.count ?? 0])),
  };
}

/** One wrk thread (one core); wrk takes whole seconds. */
async function loadWithWrk(load: HttpLoad): Promise<LoadResult> {
  // The body and headers as Lua strings: JSON strings of ASCII text are Lua strings.
  const { result } = await runWrk(load, [
    `wrk.method = ${JSON.stringify(load.method ?? 'POST')}`,
    ...(load.body !== undefined ? [`wrk.body = ${JSON.stringify(load.body)}`] : []),
    ...Object.entries(load.headers).map(([name, value]) => `wrk.headers[${JSON.stringify(name)}] = ${JSON.stringify(value)}`),
  ]);
  return result;
}

/** What a wrk run is given: its target, its connections and seconds, and where its script goes. */
interface WrkRun {
  url: string;
  connections: number;
  seconds: number;
  script: string;
  /** Pin wrk to this core with taskset (pinToCore), when there is one to pin to. */
  core?: number;
  /** Ends the run before its seconds are up once this settles (wrk stops on SIGINT and reports as at its end). */
  stop?: Promise<unknown>;
}

/**
 * Runs wrk (one thread, whole seconds, a 10 s timeout) with `lua` as its script, followed by what every run
 * counts: answers by exact status, summed over the threads in done() (wrk itself tells a 2xx from the rest
 * only; a thread's globals are read with thread:get), and the globals `late` and `max_late` where the script
 * keeps them (a paced load), printed as one line of JSON. wrk's CPU time is counted once it has exited.
 */
async function runWrk(run: WrkRun, lua: readonly string[]): Promise<{ result: LoadResult; late: number; maxLateMs: number; pinned: boolean }> {
  writeFileSync(
    run.script,
    [
      ...lua,
      'counts = {}',
      'function response(status) counts[status] = (counts[status] or 0) + 1 end',
      'local threads = {}',
      'function setup(thread) table.insert(threads, thread) end',
      'function done(summary, latency)',
      '  local e = summary.errors',
      '  local total = {}',
      '  local all_late, all_max = 0, 0',
      '  for _, thread in ipairs(threads) do',
      '    for status, n in pairs(thread:get("counts")) do total[status] = (total[status] or 0) + n end',
      '    all_late = all_late + (thread:get("late") or 0)',
      '    all_max = math.max(all_max, thread:get("max_late") or 0)',
      '  end',
      '  local parts = {}',
      '  for status, n in pairs(total) do table.insert(parts, string.format(\'"%d":%d\', status, n)) end',
      '  io.write(string.format(\'{"requests":%d,"durationUs":%d,"errors":%d,"p50Us":%d,"p99Us":%d,"late":%d,"maxLateMs":%d,"statuses":{%s}}\\n\', summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, latency:percentile(50), latency:percentile(99), all_late, all_max, table.concat(parts, ",")))',
      'end',
    ].join('\n'),
  );
  // A 10 s timeout, not wrk's 2 s: on a loaded host a slow answer is an answer to count, not one to drop.
  const args = ['-t1', `-c${run.connections}`, `-d${Math.max(1, Math.round(run.seconds))}s`, '--timeout', '10s', '-s', run.script, run.url];
  const cpuBefore = exitedChildrenCpuMicros();
  const child = execFile('wrk', args, { maxBuffer: 16 * 1024 * 1024 });
  const pinned = run.core !== undefined && child.pid !== undefined && pinToCore(child.pid, run.core);
  void run.stop?.then(() => child.exitCode === null && child.kill('SIGINT'));
  const stdout = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`wrk exited with ${code}: ${out.slice(-500)}`))));
  });
  const generatorCpuMicros = exitedChildrenCpuMicros() - cpuBefore;
  const summary = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
    requests: number;
    durationUs: number;
    errors: number;
    p50Us: number;
    p99Us: number;
    late: number;
    maxLateMs: number;
    statuses: Record<string, number>;
  };
  return {
    result: {
      requests: summary.requests,
      requestsPerSecond: summary.requests / (summary.durationUs / 1e6),
      errors: summary.errors,
      statuses: summary.statuses,
      generatorCpuMicros,
      p50Ms: summary.p50Us / 1000,
      p99Ms: summary.p99Us / 1000,
    },
    late: summary.late,
    maxLateMs: summary.maxLateMs,
    pinned,
  };
}

/** One request of a paced load: sent as it is, every second. */
export interface PacedRequest {
  method: 'GET' | 'POST';
  path: string;
  /** Header names and values: ASCII, no tab or line break. */
  headers: Record<string, string>;
  /** JSON text (no tab or line break outside its strings, as JSON.stringify writes it). */
  body?: string;
}

export interface PacedHttpLoad {
  /** http://host:port (each request names its own path). */
  url: string;
  /** Sent every second, in this order, spread evenly over the first `spreadMs` of the second. */
  requests: readonly PacedRequest[];
  spreadMs: number;
  /** Where in the second the first request goes (ms after the whole second). */
  offsetMs: number;
  connections: number;
  seconds: number;
  /** Where the script and the requests file for this load are written. */
  script: string;
  /** Pin wrk to this core with taskset (pinToCore), when there is one to pin to. */
  core?: number;
  /** Ends the load before its seconds are up once this settles. */
  stop?: Promise<unknown>;
}

export interface PacedLoadResult extends LoadResult {
  /** Requests sent more than a second after their place in the schedule (the server, or the generator, behind). */
  late: number;
  maxLateMs: number;
  /** Whether wrk ran pinned to `core`. */
  pinned: boolean;
}

/**
 * A fixed set of requests every second, from wrk (one thread, `connections` kept-alive connections), paced
 * by its Lua `delay()`: the k-th request is due at its place in its second (whole wall-clock seconds, from
 * the next one after wrk starts) and waits until then; one due earlier than its connection was free goes at
 * once and, past a second late, is counted `late`. wrk alone sends as fast as answers come back: a rate per
 * tenant needs the schedule. The requests are read from a file beside the script (one a line, fields
 * tab-separated), formatted once, and sent as they are.
 */
export async function pacedHttpLoad(load: PacedHttpLoad): Promise<PacedLoadResult> {
  if (HTTP_GENERATOR !== 'wrk') throw new Error('a paced load needs wrk (apt-get install wrk)');
  const requestsFile = `${load.script}.requests`;
  writeFileSync(
    requestsFile,
    load.requests
      .map(({ method, path, headers, body }) => [method, path, body ?? '', ...Object.entries(headers).flat()].join('\t'))
      .join('\n') + '\n',
  );
  const { result, late, maxLateMs, pinned } = await runWrk(load, [
    'local ffi = require("ffi")',
    'ffi.cdef[[ typedef struct { long tv_sec; long tv_nsec; } paced_timespec; int clock_gettime(int, paced_timespec *); ]]',
    'local now_ts = ffi.new("paced_timespec")',
    'local function now_ms() ffi.C.clock_gettime(0, now_ts); return tonumber(now_ts.tv_sec) * 1000 + tonumber(now_ts.tv_nsec) / 1e6 end',
    'local requests = {}',
    'local due = 0',
    'local sent = 0',
    'local first_second = 0',
    'late = 0',
    'max_late = 0',
    'function init(args)',
    `  for line in io.lines(${JSON.stringify(requestsFile)}) do`,
    '    local fields = {}',
    '    for field in string.gmatch(line, "([^\t]*)\t?") do table.insert(fields, field) end',
    '    local headers = {}',
    '    for i = 4, #fields - 1, 2 do if fields[i] ~= "" then headers[fields[i]] = fields[i + 1] end end',
    '    local body = fields[3] ~= "" and fields[3] or nil',
    '    table.insert(requests, wrk.format(fields[1], fields[2], headers, body))',
    '  end',
    '  first_second = math.floor(now_ms() / 1000) + 1',
    'end',
    `local spread = ${Number(load.spreadMs)}`,
    `local offset = ${Number(load.offsetMs)}`,
    'function delay()',
    '  local n = #requests',
    '  local k = due',
    '  due = due + 1',
    '  local at = (first_second + math.floor(k / n)) * 1000 + offset + (k % n) * spread / n',
    '  local wait = at - now_ms()',
    '  if wait < -1000 then late = late + 1 end',
    '  if -wait > max_late then max_late = -wait end',
    '  return wait > 0 and math.floor(wait) or 0',
    'end',
    'function request()',
    '  local r = requests[(sent % #requests) + 1]',
    '  sent = sent + 1',
    '  return r',
    'end',
  ]);
  return { ...result, late, maxLateMs, pinned };
}

/** A gRPC message as it travels in an HTTP/2 DATA frame: not compressed, its length (4 bytes, big-endian), its bytes. */
export function grpcFrame(message: Uint8Array): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt8(0, 0);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

export interface GrpcLoad {
  /** http://host:port/package.Service/Method */
  url: string;
  /** A file holding one framed request (grpcFrame), sent as every call's body. */
  bodyFile: string;
  calls: number;
  connections: number;
  /** Concurrent streams per connection. */
  streams: number;
  /** Extra headers (metadata), e.g. authorization. */
  headers?: Record<string, string>;
}

export interface GrpcLoadResult {
  calls: number;
  callsPerSecond: number;
  /** Calls h2load counts as failed or errored (no answer, a reset stream, a non-2xx HTTP status). */
  failed: number;
  /** Calls answered with HTTP 2xx. gRPC's own status is in the trailers, which h2load does not read: check it apart. */
  answered2xx: number;
  meanMs: number;
}

/** h2load with the gRPC headers, one thread; its summary parsed. */
export async function grpcLoad(load: GrpcLoad): Promise<GrpcLoadResult> {
  const headers = { 'content-type': 'application/grpc', te: 'trailers', ...load.headers };
  const args = [
    '-n',
    String(load.calls),
    '-c',
    String(load.connections),
    '-m',
    String(load.streams),
    '-t',
    '1',
    '-d',
    load.bodyFile,
    ...Object.entries(headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`]),
    load.url,
  ];
  const { stdout } = await promisify(execFile)('h2load', args, { maxBuffer: 16 * 1024 * 1024 });
  // "finished in 2.38s, 8398.34 req/s, ..." / "requests: 20000 total, 20000 started, 20000 done, 20000 succeeded, 0 failed, 0 errored, 0 timeout"
  // / "status codes: 20000 2xx, 0 3xx, 0 4xx, 0 5xx" / "time for request: min max mean sd +/- sd"
  const number = (pattern: RegExp): number => {
    const match = pattern.exec(stdout);
    if (match === null) throw new Error(`h2load's summary lacks ${pattern}:\n${stdout}`);
    return Number(match[1]);
  };
  const msOf = (value: string, unit: string) => Number(value) * (unit === 's' ? 1000 : unit === 'us' ? 0.001 : 1);
  const mean = /time for request:\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)/.exec(stdout);
  return {
    calls: number(/requests: \d+ total, \d+ started, (\d+) done/),
    callsPerSecond: number(/finished in [\d.]+m?s, ([\d.]+) req\/s/),
    failed: number(/ (\d+) failed/) + number(/ (\d+) errored/) + number(/ (\d+) timeout/),
    answered2xx: number(/status codes: (\d+) 2xx/),
    meanMs: mean === null ? Number.NaN : msOf(mean[1]!, mean[2]!),
  };
}
