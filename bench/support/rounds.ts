// Alternating rounds: on a shared machine a neighbour's burst of load lands on whichever server is measured at
// that moment, so each contender is run once per round, in turn, and the best round of each is compared.

/** Runs every contender once per round, in the order given, `rounds` times; the samples by contender. */
export async function alternateRounds<Name extends string, Sample>(
  rounds: number,
  contenders: Record<Name, () => Promise<Sample>>,
): Promise<Record<Name, Sample[]>> {
  const names = Object.keys(contenders) as Name[];
  const samples = Object.fromEntries(names.map((name) => [name, [] as Sample[]])) as Record<Name, Sample[]>;
  for (let round = 0; round < rounds; round++) {
    for (const name of names) samples[name].push(await contenders[name]());
  }
  return samples;
}

/** The largest value of `of` over the samples (a slow round measures the neighbours, not the server). */
export function bestOf<Sample>(samples: readonly Sample[], of: (sample: Sample) => number): number {
  return Math.max(...samples.map(of));
}

/** The smallest value of `of` over the samples (CPU per request: the least disturbed round). */
export function leastOf<Sample>(samples: readonly Sample[], of: (sample: Sample) => number): number {
  return Math.min(...samples.map(of));
}

export const round2 = (value: number): number => Math.round(value * 100) / 100;
