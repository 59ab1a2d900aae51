/** A mistake in how the CLI was called: exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Takes `--name value` or `--name=value` (repeatable) out of args. */
export function takeOption(args: string[], name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < args.length; ) {
    const arg = args[i] ?? '';
    if (arg === name) {
      const value = args[i + 1];
      if (value === undefined) throw new UsageError(`${name} needs a value`);
      values.push(value);
      args.splice(i, 2);
    } else if (arg.startsWith(`${name}=`)) {
      values.push(arg.slice(name.length + 1));
      args.splice(i, 1);
    } else {
      i++;
    }
  }
  return values;
}
