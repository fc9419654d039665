// Tests wait for a condition, never for a fixed time: this polls `condition` until it holds or the
// deadline passes, and then fails with `description` so the reader learns what never happened.
export interface WaitForOptions {
  timeoutMs?: number;
  intervalMs?: number;
  description?: string;
}

export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  { timeoutMs = 10_000, intervalMs = 20, description = 'condition' }: WaitForOptions = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
