// The space-saving sketch (Metwally, Agrawal, El Abbadi 2005): finds the heaviest items of an unbounded
// stream in a fixed number of counters. An item not yet counted takes over the smallest counter and
// inherits its count, so a true heavy hitter is never missed and memory never grows with the number of
// distinct items (100,000 tenants cost the same as `capacity`).

export class SpaceSavingSketch {
  private readonly counts = new Map<string, number>();

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('sketch capacity must be a whole number, at least 1');
  }

  add(item: string, weight: number): void {
    const current = this.counts.get(item);
    if (current !== undefined) {
      this.counts.set(item, current + weight);
      return;
    }
    if (this.counts.size < this.capacity) {
      this.counts.set(item, weight);
      return;
    }
    // A linear scan: capacity is a few hundred and a new item arrives at most once per recorded batch entry.
    let smallest: string | undefined;
    let smallestCount = Number.POSITIVE_INFINITY;
    for (const [candidate, count] of this.counts) {
      if (count < smallestCount) {
        smallest = candidate;
        smallestCount = count;
      }
    }
    this.counts.delete(smallest!);
    this.counts.set(item, smallestCount + weight);
  }

  /** Multiplies every count by `factor` (0..1), so old weight fades and "heaviest" means "heaviest lately". */
  decay(factor: number): void {
    for (const [item, count] of this.counts) this.counts.set(item, count * factor);
  }

  /** The `n` items with the highest estimated counts, heaviest first (ties by name, for stable labels). */
  top(n: number): string[] {
    return [...this.counts]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, n)
      .map(([item]) => item);
  }

  get size(): number {
    return this.counts.size;
  }
}
