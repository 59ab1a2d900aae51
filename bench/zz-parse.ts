import { parseTool } from '../src/model/resolve.js';
import { parseCheckedTool } from '../src/json-schema/tool-schemas.js';
import { httpTool } from './data.js';
const tools = Array.from({ length: 2000 }, (_, i) => JSON.parse(JSON.stringify(httpTool(i, 'zz'))));
for (const [label, f] of [['parseTool', (t: unknown) => parseTool(t, () => undefined)], ['parseChecked', (t: unknown) => parseCheckedTool(t, () => undefined)]] as const) {
  for (let r = 0; r < 5; r++) {
    const t0 = process.hrtime.bigint();
    for (let k = 0; k < 10; k++) for (const t of tools) f(t);
    console.log(label, (Number(process.hrtime.bigint() - t0) / 20000 / 1000).toFixed(2), 'us');
  }
}
