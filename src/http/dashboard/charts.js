// @ts-check
/**
 * Charts with uPlot (canvas), each made accessible the same way: the canvas sits in an element
 * with role="img" and an aria-label that says what it shows, and the same figures are in a real
 * table in a <details> beside it. Colours come from the stylesheet's custom properties, so the
 * charts follow prefers-color-scheme; uPlot does not animate, so there is no motion to reduce.
 */
import uPlot from './uplot.js';

const HEIGHT = 220;
/** Height of a bar chart's row: named categories run down the side, where long names fit. */
const BAR_ROW = 26;
/** Bars shown at most; the table holds every row. */
export const MAX_BARS = 12;

/** @param {string} name */
const cssVar = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

/**
 * @param {string} tag
 * @param {Record<string, string>} [attributes]
 * @param {string} [text]
 * @returns {HTMLElement}
 */
export function element(tag, attributes = {}, text) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) el.setAttribute(name, value);
  if (text !== undefined) el.textContent = text;
  return el;
}

/** Category labels longer than this are cut (the table has them whole). */
const LABEL_CHARS = 22;
/** @param {string} label */
const short = (label) => (label.length > LABEL_CHARS ? `${label.slice(0, LABEL_CHARS - 1)}…` : label);
/** Steps of the time axis, in seconds: never finer than a second. */
const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200];

/**
 * @typedef {object} SeriesSpec
 * @property {string} label
 * @property {string} color  a custom property of the stylesheet, e.g. `--series-1`
 * @property {number} [width]  bar width as a share of the slot (bars only; default 0.6)
 */

/**
 * A chart and its table. Subclasses say how uPlot draws it.
 */
class Chart {
  /** @type {uPlot | null} */
  plot = null;
  /** @type {uPlot.AlignedData | null} */
  data = null;

  /**
   * @param {HTMLElement} host
   * @param {{ title: string, series: SeriesSpec[], unit: string, firstColumn: string, empty: string }} spec
   */
  constructor(host, spec) {
    this.spec = spec;
    this.figure = element('div', { class: 'plot', role: 'img', 'aria-label': `${spec.title}: no figures yet` });
    this.emptyNote = element('p', { class: 'muted empty' }, spec.empty);
    const details = element('details');
    details.append(element('summary', {}, `${spec.title} as a table`));
    const table = /** @type {HTMLTableElement} */ (element('table'));
    table.append(element('caption', { class: 'visually-hidden' }, spec.title));
    const head = element('tr');
    for (const name of [spec.firstColumn, ...spec.series.map((s) => s.label)]) head.append(element('th', { scope: 'col' }, name));
    table.append(element('thead'), element('tbody'));
    table.tHead?.append(head);
    this.body = /** @type {HTMLTableSectionElement} */ (table.tBodies[0]);
    details.append(table);
    host.append(this.figure, this.emptyNote, details);
    new ResizeObserver(() => this.plot?.setSize({ width: this.width(), height: this.height() })).observe(this.figure);
    matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => this.rebuild());
  }

  width() {
    return Math.max(240, this.figure.clientWidth);
  }

  height() {
    return HEIGHT;
  }

  /** Axis colours from the stylesheet. */
  axis() {
    const stroke = cssVar('--muted');
    return {
      stroke,
      grid: { stroke: cssVar('--grid'), width: 1 },
      ticks: { stroke: cssVar('--grid'), width: 1 },
      font: '12px system-ui, sans-serif',
    };
  }

  /**
   * @param {uPlot.AlignedData} data
   * @param {string} summary  the aria-label
   * @param {(string | number)[][]} rows  the table's rows
   */
  show(data, summary, rows) {
    this.data = data;
    const empty = rows.length === 0;
    this.emptyNote.hidden = !empty;
    this.figure.hidden = empty;
    this.figure.setAttribute('aria-label', `${this.spec.title}: ${empty ? this.spec.empty : summary}`);
    this.body.replaceChildren(
      ...rows.map((row) => {
        const tr = element('tr');
        row.forEach((cell, i) => tr.append(element(i === 0 ? 'th' : 'td', i === 0 ? { scope: 'row' } : { class: 'num' }, String(cell))));
        return tr;
      }),
    );
    if (empty) return;
    if (this.plot && this.sameShape()) this.plot.setData(data);
    else this.rebuild();
  }

  /** Whether the plot's axes still fit the data (bars: the same categories). */
  sameShape() {
    return true;
  }

  rebuild() {
    this.plot?.destroy();
    this.plot = null;
    if (!this.data || this.figure.hidden) return;
    this.plot = new uPlot(this.options(), this.data, this.figure);
  }

  /** @returns {uPlot.Options} */
  options() {
    throw new Error('a chart says how it is drawn');
  }
}

/**
 * Horizontal bars over named categories (tools, kinds, classes), one row each, so that long
 * names stay readable; several series overlap in one row, the widest drawn first.
 */
export class BarChart extends Chart {
  /** @type {string[]} */
  categories = [];
  /** @type {string[]} */
  drawn = [];

  /**
   * @param {string[]} categories
   * @param {number[][]} values  one array per series, in categories' order
   * @param {string} summary
   * @param {(string | number)[][]} rows
   */
  update(categories, values, summary, rows) {
    this.categories = categories;
    this.show([categories.map((_, i) => i), ...values], summary, rows);
  }

  height() {
    return 48 + Math.max(3, this.categories.length) * BAR_ROW + (this.spec.series.length > 1 ? 28 : 0);
  }

  sameShape() {
    return this.drawn.length === this.categories.length && this.drawn.every((c, i) => c === this.categories[i]);
  }

  /** @returns {uPlot.Options} */
  options() {
    const categories = (this.drawn = [...this.categories]);
    const longest = Math.max(...categories.map((c) => short(c).length));
    const bars = uPlot.paths.bars;
    return {
      width: this.width(),
      height: this.height(),
      legend: { show: this.spec.series.length > 1, live: false },
      cursor: { show: false },
      scales: {
        // The categories run down (ori 1), the first at the top (dir -1).
        x: { time: false, ori: 1, dir: -1, range: () => [-0.5, categories.length - 0.5] },
        y: { ori: 0, range: (_u, _min, max) => [0, max > 0 ? max * 1.08 : 1] },
      },
      axes: [
        {
          ...this.axis(),
          side: 3,
          size: Math.min(180, 16 + longest * 7.2),
          grid: { show: false },
          ticks: { show: false },
          splits: () => categories.map((_, i) => i),
          values: (_u, splits) => splits.map((i) => short(categories[i] ?? '')),
        },
        { ...this.axis(), side: 2, label: this.spec.unit, labelSize: 20, size: 36 },
      ],
      series: [
        {},
        ...this.spec.series.map((s) => ({
          label: s.label,
          fill: cssVar(s.color),
          stroke: cssVar(s.color),
          width: 0,
          points: { show: false },
          paths: bars ? bars({ size: [s.width ?? 0.6, 22], align: /** @type {0} */ (0) }) : undefined,
        })),
      ],
    };
  }
}

/** A line per series over time (seconds since the epoch), the last points only. */
export class TimeChart extends Chart {
  /** @type {number[][]} */
  points = [];

  /**
   * @param {number} at  seconds since the epoch
   * @param {number[]} values  one per series
   * @param {number} keep  points kept
   * @param {(values: number[]) => string} describe
   */
  push(at, values, keep, describe) {
    this.points.push([at, ...values]);
    if (this.points.length > keep) this.points.shift();
    const columns = [this.points.map((p) => p[0] ?? 0), ...this.spec.series.map((_, i) => this.points.map((p) => p[i + 1] ?? 0))];
    const rows = this.points
      .slice(-10)
      .reverse()
      .map(([time = 0, ...rest]) => [new Date(time * 1000).toLocaleTimeString(), ...rest.map((v) => v.toFixed(2))]);
    this.show(/** @type {uPlot.AlignedData} */ (columns), describe(values), rows);
  }

  /** @returns {uPlot.Options} */
  options() {
    return {
      width: this.width(),
      height: HEIGHT,
      legend: { show: true, live: false },
      cursor: { show: false },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.2 : 1] } },
      axes: [
        {
          ...this.axis(),
          space: 60,
          incrs: TIME_STEPS,
          values: (_u, splits) => splits.map((t) => new Date(t * 1000).toLocaleTimeString()),
        },
        { ...this.axis(), label: this.spec.unit, size: 56 },
      ],
      series: [
        {},
        ...this.spec.series.map((s) => ({ label: s.label, stroke: cssVar(s.color), width: 2, points: { show: true, size: 4 } })),
      ],
    };
  }
}
