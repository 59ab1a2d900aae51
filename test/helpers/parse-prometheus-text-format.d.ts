/** The untyped parse-prometheus-text-format (a devDependency), as test/helpers/prometheus.ts uses it. */
declare module 'parse-prometheus-text-format' {
  interface ParsedMetric {
    value?: string;
    labels?: Record<string, string>;
    buckets?: Record<string, string>;
    count?: string;
    sum?: string;
  }
  interface ParsedFamily {
    name: string;
    help: string;
    type: string;
    metrics: ParsedMetric[];
  }
  export default function parsePrometheusTextFormat(text: string): ParsedFamily[];
}
