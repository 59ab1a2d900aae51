/**
 * Virtualenvs with the official Python MCP SDK, one per major (two majors cannot share one):
 * `.venv-mcp1` with mcp==1.30.0 and `.venv-mcp2` with mcp==2.3.0 (git-ignored), built with pip
 * from PyPI on first use and reused while the pin is installed. Where python3 or PyPI is not
 * at hand the promise rejects with the reason; tests skip on it, except under CI=true, where
 * they fail (`.ci/run` must install everything on a fresh clone).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');
const PINS = { 1: '1.30.0', 2: '2.3.0' } as const;
const building = new Map<1 | 2, Promise<string>>();

function run(command: string, args: string[]): { ok: boolean; output: string } {
  const result = spawnSync(command, args, { cwd: ROOT, encoding: 'utf8', timeout: 600_000, maxBuffer: 16 * 1024 * 1024 });
  return { ok: result.status === 0, output: `${result.stdout ?? ''}${result.stderr ?? ''}${result.error?.message ?? ''}` };
}

function build(major: 1 | 2): string {
  const venv = join(ROOT, `.venv-mcp${major}`);
  const python = join(venv, 'bin', 'python');
  const pin = PINS[major];
  const installed = () =>
    existsSync(python) && run(python, ['-c', `import importlib.metadata as m, sys; sys.exit(m.version("mcp") != "${pin}")`]).ok;
  if (installed()) return python;
  if (!existsSync(python)) {
    const made = run('python3', ['-m', 'venv', venv]);
    if (!made.ok) throw new Error(`python3 -m venv ${venv} failed: ${made.output.trim().slice(-500)}`);
  }
  const pip = run(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', `mcp==${pin}`]);
  if (!pip.ok || !installed()) throw new Error(`pip install mcp==${pin} into ${venv} failed: ${pip.output.trim().slice(-500)}`);
  return python;
}

/** The python of `.venv-mcp<major>`, with the pinned `mcp` installed (built once per process). */
export function pythonMcp(major: 1 | 2): Promise<string> {
  let python = building.get(major);
  if (!python) {
    python = Promise.resolve().then(() => build(major));
    building.set(major, python);
  }
  return python;
}
