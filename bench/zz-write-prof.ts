import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { adminToken, bundle, httpTool } from './data.js';
import { importBundle, startRegistry } from './servers.js';

const n = Number(process.env.N ?? 1000);
const secs = Number(process.env.SECS ?? 5);
const prof = process.env.PROF === '1';
const dir = mkdtempSync(join(tmpdir(), 'wprof-'));
if (prof) process.env.NODE_OPTIONS = '--import=/tmp/perf/prof.mjs';
const reg = await startRegistry(dir, {});
await importBundle(reg, bundle(n));
let k = 0;
const admin = { authorization: `Bearer ${adminToken()}`, 'content-type': 'application/json' };
const cpu = () => { const s = require('node:fs').readFileSync(`/proc/${reg.child.pid}/stat`, 'utf8').split(') ')[1].split(' '); return (Number(s[11]) + Number(s[12])) * 10; };
const metric = async () => { const t = await (await fetch(`${reg.base}/metrics`, { headers: { authorization: admin.authorization } })).text(); const g = (n: string) => Number(new RegExp(`^${n} (\\S+)`, 'm').exec(t)?.[1] ?? NaN); return [g('tool_registry_commit_writes_sum'), g('tool_registry_commit_writes_count'), g('tool_registry_commit_seconds_sum')]; };
console.log("PID", reg.child.pid); await new Promise((r) => setTimeout(r, Number(process.env.WAIT ?? 0)));
for (let round = 0; round < Number(process.env.ROUNDS ?? 3); round++) {
  const m0 = await metric();
  const c0 = cpu();
  const r = await autocannon({
    url: reg.base, connections: 16, duration: secs, method: 'PUT', headers: admin,
    requests: [{ setupRequest: (req: any) => { const t = httpTool(k++, 'zz'); req.path = `/tools/${t['name'] as string}`; req.body = JSON.stringify(t); return req; } }],
  });
  const c1 = cpu();
  const total = r.requests.total;
  const m1 = await metric();
  const commits = m1[1]! - m0[1]!; console.log('commits', commits, 'writes/commit', ((m1[0]! - m0[0]!) / commits).toFixed(1), 'commit..fsync ms avg', ((m1[2]! - m0[2]!) * 1000 / commits).toFixed(2), 'commits/s', (commits / secs).toFixed(0));
  console.log(`round ${round}: ${Math.round(total / secs)}/s, non2xx ${r.non2xx}, cpu us/write ${Math.round(((c1 - c0) * 1000) / total)}, p99 ${r.latency.p99}`);
}
console.log(reg.child.output().split("\n").filter((l) => l.includes("worker:")).join("\n"));
await reg.child.stop();
