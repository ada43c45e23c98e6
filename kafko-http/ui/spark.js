// Sparklines: a value series drawn as an inline SVG polyline, with a label for screen readers.

const NS = 'http://www.w3.org/2000/svg';

/**
 * A sparkline of `points` ([t, value] pairs, t in ms) over the window [now - span, now].
 * `label` describes it (e.g. "records per second over the last minute").
 */
export function sparkline(points, { span = 60_000, width = 120, height = 28, label = '' } = {}) {
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('width', width);
  svg.setAttribute('height', height);
  svg.setAttribute('class', 'spark');
  svg.setAttribute('role', 'img');
  const last = points.length ? points[points.length - 1][1] : null;
  svg.setAttribute('aria-label', label + (last === null ? ': no data yet' : `: latest ${Math.round(last * 10) / 10}`));
  const base = document.createElementNS(NS, 'line');
  base.setAttribute('x1', 0); base.setAttribute('x2', width);
  base.setAttribute('y1', height - 1); base.setAttribute('y2', height - 1);
  base.setAttribute('class', 'base');
  svg.append(base);
  if (points.length < 2) return svg;
  const now = points[points.length - 1][0];
  const max = Math.max(1, ...points.map((p) => p[1]));
  const x = (t) => width - ((now - t) / span) * width;
  const y = (v) => height - 2 - (v / max) * (height - 4);
  const coords = points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`);
  const area = document.createElementNS(NS, 'polygon');
  area.setAttribute('points', `${x(points[0][0]).toFixed(1)},${height - 1} ${coords.join(' ')} ${width},${height - 1}`);
  area.setAttribute('class', 'area');
  const line = document.createElementNS(NS, 'polyline');
  line.setAttribute('points', coords.join(' '));
  line.setAttribute('class', 'line');
  svg.append(area, line);
  return svg;
}

/** A rolling series per key: `add(key, t, v)` keeps the last `span` ms of samples. */
export class Series {
  constructor(span = 60_000) { this.span = span; this.map = new Map(); }
  add(key, t, v) {
    let s = this.map.get(key);
    if (!s) this.map.set(key, (s = []));
    s.push([t, v]);
    while (s.length && s[0][0] < t - this.span) s.shift();
    return s;
  }
  get(key) { return this.map.get(key) || []; }
}
