/**
 * The request histogram counts in plain numbers (src/http/metrics/request-histogram.ts) and is
 * scraped through prom-client's Registry: what a scrape reads must be what a prom-client
 * Histogram with the same observations gives, line for line.
 */
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RequestHistogram } from '../../src/http/metrics/request-histogram.js';
import { parseMetrics, sampleValue } from '../helpers/prometheus.js';

const BOUNDS = [0.0005, 0.001, 0.005, 0.025, 0.1, 0.5, 2.5, 10];
const NAME = 'test_request_duration_seconds';
const HELP = 'requests, with "quotes" and a \\ backslash';

function both() {
  const theirs = new Registry();
  const ours = new Registry();
  const histogram = new Histogram({
    name: NAME,
    help: HELP,
    labelNames: ['method', 'route', 'status_code'],
    buckets: BOUNDS,
    registers: [theirs],
  });
  const requests = new RequestHistogram(NAME, HELP, BOUNDS, ours);
  const observe = (method: string, route: string, status: number, seconds: number) => {
    histogram.observe({ method, route, status_code: status }, seconds);
    requests.observe(method, route, status, seconds);
  };
  return { theirs, ours, requests, observe };
}

describe('RequestHistogram', () => {
  it("scrapes as prom-client's Histogram does, bounds, zero and values past the last bound included", async () => {
    const { theirs, ours, observe } = both();
    const methods = ['GET', 'PUT', 'POST'];
    const routes = ['/', '/tools/:name', '(unmatched)', 'a "quoted" \\ route\nwith a newline'];
    const statuses = [200, 304, 404, 500];
    const seconds = [0, 0.0005, 0.00050001, 0.001, 0.003, 2.5, 10, 10.5, 120];
    for (let i = 0; i < 2000; i++)
      observe(methods[i % 3] ?? '', routes[i % 4] ?? '', statuses[(i >> 2) % 4] ?? 0, (seconds[i % 9] ?? 0) * (1 + (i % 7) / 1e6));
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    const parsed = parseMetrics(text);
    expect(parsed.get(NAME)?.type).toBe('HISTOGRAM');
    expect(sampleValue(parsed, `${NAME}_count`, { method: 'GET', route: '/', status_code: '200' })).toBeGreaterThan(0);
  });

  it('starts empty, and is empty again after a reset', async () => {
    const { theirs, ours, requests, observe } = both();
    expect(await ours.metrics()).toBe(await theirs.metrics());
    observe('GET', '/', 304, 0.0002);
    expect(await ours.metrics()).toBe(await theirs.metrics());
    requests.reset();
    const parsed = parseMetrics(await ours.metrics());
    expect(parsed.get(NAME)?.samples).toEqual([]);
  });

  it('sorts its bounds', async () => {
    const registry = new Registry();
    const requests = new RequestHistogram(NAME, HELP, [1, 0.1, 10], registry);
    requests.observe('GET', '/', 200, 0.5);
    const parsed = parseMetrics(await registry.metrics());
    const buckets = parsed
      .get(NAME)
      ?.samples.filter((s) => s.name === `${NAME}_bucket`)
      .map((s) => [s.labels['le'], s.value]);
    expect(buckets).toEqual([
      ['0.1', 0],
      ['1', 1],
      ['10', 1],
      ['+Inf', 1],
    ]);
  });
});
