// Bundles the compiled service (dist/src, written by tsc) into a few ES modules in dist/service/, which
// bin/governance.js runs. Loading some 800 modules one by one (resolving, reading and compiling each) was most
// of the CPU a start cost; a bundle is read in a handful of files. `npm run build` runs this after tsc.
// What a command loads on demand (the device doors, the EventStoreDB ledger, GraphiQL's page, PGlite) stays a
// chunk of its own, loaded when it is asked for, as in dist/src.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { packagePath } from '../src/packageRoot.ts';

export const SERVICE_BUNDLE_DIR = packagePath('dist', 'service');

/**
 * Packages left to node_modules, each because it finds files of its own relative to its own module, which a
 * bundle moves: PGlite loads its .wasm and .data beside its module (import.meta.url); grpc-js loads its own
 * .proto files from __dirname, and ioredis names __dirname in the errors it rewrites.
 */
const LOADED_FROM_NODE_MODULES = ['@electric-sql/pglite', '@grpc/grpc-js', 'ioredis'];

// CommonJS packages in an ES module bundle still call require() (for Node's own modules, and protobufjs
// through eval): each chunk gets one, resolving from the chunk's place in the package.
const REQUIRE_FOR_COMMONJS = "import { createRequire as __createRequireForCommonJs } from 'node:module'; const require = __createRequireForCommonJs(import.meta.url);";

rmSync(SERVICE_BUNDLE_DIR, { recursive: true, force: true });
const result = await build({
  // The projection worker thread's module (projections/workerProjections.ts names it) shares the service's chunks.
  entryPoints: {
    cli: packagePath('dist', 'src', 'cli.js'),
    'projection-worker': packagePath('dist', 'projections', 'worker.js'),
    // The verifier's leaf hashing threads (src/ledger/verifiable/leafHashers.ts names it).
    'leaf-hash-worker': packagePath('dist', 'src', 'ledger', 'verifiable', 'leafHashWorker.js'),
  },
  outdir: SERVICE_BUNDLE_DIR,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: LOADED_FROM_NODE_MODULES,
  banner: { js: REQUIRE_FOR_COMMONJS },
  chunkNames: 'chunks/[name]-[hash]',
  logLevel: 'warning',
  metafile: true,
});
const files = Object.keys(result.metafile.outputs);
const bytes = Object.values(result.metafile.outputs).reduce((sum, output) => sum + output.bytes, 0);
console.log(`wrote ${path.relative(process.cwd(), SERVICE_BUNDLE_DIR)} (${files.length} files, ${Math.round(bytes / 1e6)} MB)`);
