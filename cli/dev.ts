/** `nico dev`: placeholder until the local mode lands. */
export function dev(_args: string[]): Promise<number> {
  return Promise.resolve(2);
}
