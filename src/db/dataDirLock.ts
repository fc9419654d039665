// PGlite is a single-process database: two processes opening one data directory each keep their own copy
// in memory and overwrite each other's files, silently losing writes. The lock file makes a second process
// (a CLI command while the service runs) stop with a clear message instead.
import { open, readFile, rm } from 'node:fs/promises';
import path from 'node:path';

export const LOCK_FILE = 'governance.lock';

export class DataDirInUse extends Error {
  override readonly name = 'DataDirInUse';
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(
      `the embedded database in ${dataDir} is in use by process ${pid}: stop that process first, ` +
        `or run the service on PostgreSQL (DATABASE_URL) to share the database between processes`,
    );
  }
}

/** Takes the data directory for this process; resolves to the release function. */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const file = path.join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(file, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      return () => rm(file, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number.parseInt(await readFile(file, 'utf8').catch(() => ''), 10);
      if (Number.isInteger(holder) && isAlive(holder)) throw new DataDirInUse(dataDir, holder);
      // Left behind by a process that died (or unreadable): take it over.
      await rm(file, { force: true });
    }
  }
  throw new Error(`could not lock ${file}`);
}

/** Whether a process with this id runs (one of another user's, which may not be signalled, counts as running). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
