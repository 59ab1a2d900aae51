/**
 * What a command reads and writes, passed in so tests run the CLI in-process (main(argv, io))
 * and read its output without spawning a process.
 */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Everything piped to stdin, or undefined when stdin is a terminal (nothing was piped). */
  readStdin(): Promise<string | undefined>;
  env: NodeJS.ProcessEnv;
}

async function readProcessStdin(): Promise<string | undefined> {
  if (process.stdin.isTTY) return undefined;
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The running process's streams and environment. */
export function processIo(): CliIo {
  return {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    readStdin: readProcessStdin,
    env: process.env,
  };
}
