/**
 * The CLI's `main()` run in-process against a listening registry, its output captured: for the
 * data commands' tests (test/cli/*.test.ts).
 */
import { main } from '../../src/cli/main.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `tool-registry <args> --url <base> --token <token>` with an empty environment. */
export async function runCli(base: string, token: string, args: readonly string[]): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await main([...args, '--url', base, '--token', token], {
    env: {},
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
  });
  return { code, stdout, stderr };
}
