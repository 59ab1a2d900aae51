/**
 * The request histogram (tool_registry_http_request_duration_seconds), counted in plain numbers.
 *
 * Every answered request passes here, 304 revalidations included, so an observation is three
 * Map lookups, a walk over the bucket bounds and two additions. prom-client's
 * Histogram.observe did more than that for each request: it checked every label, built a hash
 * string of the labels and looked each bucket up by its bound turned into a string (on the 304
 * path, about 5 us of the registry's CPU per request, profiled with `perf record` under
 * `npm run bench` load). prom-client's samples are built from these numbers only when scraped,
 * by the Registry that formats every other metric: this object is registered with it as a
 * metric and answers what the Registry asks of one (`name`, `help`, `type`, `get()` with the
 * samples, `reset()`), so the text is the same as a prom-client Histogram's: a `_bucket`
 * series per bound (cumulative, `le` first) and `+Inf`, then `_sum` and `_count`.
 */
import type { Metric, Registry } from 'prom-client';

type Labels = Readonly<Record<string, string | number>>;

interface Series {
  readonly labels: { readonly method: string; readonly route: string; readonly status_code: string };
  /** Observations per bucket, not cumulative: slot i counts those above bound i-1 and at most bound i; the last, those above every bound. */
  readonly counts: Float64Array;
  sum: number;
}

/** A sample as prom-client's Registry formats it: `metricName{labels} value`. */
interface Sample {
  readonly labels: Labels;
  readonly value: number;
  readonly metricName: string;
}

export class RequestHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #bounds: readonly number[];
  /** Route pattern -> method -> status -> its series. */
  readonly #series = new Map<string, Map<string, Map<number, Series>>>();
  /** The same series, in the order they first came (prom-client's order). */
  #all: Series[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    bounds: readonly number[],
    registry: Registry,
  ) {
    this.#bounds = [...bounds].sort((a, b) => a - b);
    // The Registry reads a metric through the members above only (see the header).
    registry.registerMetric(this as unknown as Metric);
  }

  /** One answered request; `seconds` from its start to the end of its answer. */
  observe(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.#series.get(route);
    if (byMethod === undefined) this.#series.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map()));
    let series = byStatus.get(status);
    if (series === undefined) {
      series = { labels: { method, route, status_code: String(status) }, counts: new Float64Array(this.#bounds.length + 1), sum: 0 };
      byStatus.set(status, series);
      this.#all.push(series);
    }
    // The first bucket the value is at most; the last slot for values above every bound (and NaN).
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && !(seconds <= (bounds[i] ?? Infinity))) i++;
    series.counts[i] = (series.counts[i] ?? 0) + 1;
    series.sum += seconds;
  }

  /** The samples, as a prom-client metric gives them to its Registry. */
  get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Sample[] }> {
    const bucket = `${this.name}_bucket`;
    const values: Sample[] = [];
    for (const { labels, counts, sum } of this.#all) {
      let count = 0;
      this.#bounds.forEach((le, i) => {
        count += counts[i] ?? 0;
        values.push({ labels: { le, ...labels }, value: count, metricName: bucket });
      });
      count += counts[this.#bounds.length] ?? 0;
      values.push(
        { labels: { le: '+Inf', ...labels }, value: count, metricName: bucket },
        { labels, value: sum, metricName: `${this.name}_sum` },
        { labels, value: count, metricName: `${this.name}_count` },
      );
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values });
  }

  reset(): void {
    this.#series.clear();
    this.#all = [];
  }
}
