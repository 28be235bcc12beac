// Draws the chart documents of POST /v1/chart with uPlot: stacked buffers (cumulative areas drawn from the top
// down), one line per curve, capacity and margin lines, and a dotted vertical mark at each largest n_ctx.
// Every value drawn comes from the server's plans; this file only converts bytes to GiB.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

const GIB = 2 ** 30;
const STACK = [
  ['weights_bytes', 'weights', '#4e79a7'],
  ['kv_bytes', 'KV cache', '#f28e2b'],
  ['state_bytes', 'recurrent state', '#59a14f'],
  ['compute_bytes', 'compute buffer', '#e15759'],
  ['output_bytes', 'output buffer', '#b07aa1'],
];
const OTHER = ['#76b7b2', '#edc948', '#ff9da7', '#9c755f', '#bab0ac'];
const CURVE_COLORS = ['#222222', '#1f6f8b', '#7b2d8b', '#8c564b'];
const CAPACITY = '#c0392b';

/** "1K", "256K", "1M": tokens as llama.cpp's context sizes are spoken. */
export function tokens(n) {
  if (n >= 1 << 20 && n % (1 << 20) === 0) return `${n >> 20}M`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024}K`;
  return n.toLocaleString('en-US');
}

function build(doc) {
  const x = doc.n_ctx;
  const series = [{ label: 'n_ctx', value: (u, v) => (v == null ? '-' : v.toLocaleString('en-US')) }];
  const data = [x];
  const gib = (v) => (v == null ? '-' : `${v.toFixed(2)} GiB`);
  // Cumulative stack, topmost first so that each lower band is painted over the one above it.
  const bands = [];
  let below = x.map(() => 0);
  // the known buffers in their colours, then any other buffer a runtime lists (vLLM's kv_pool, ...) in grey tones
  const keys = [...STACK, ...Object.keys(doc.stack).filter((k) => !STACK.some(([s]) => s === k))
    .map((k, i) => [k, k.replace('_bytes', ''), OTHER[i % OTHER.length]])];
  for (const [key, label, color] of keys) {
    const bytes = doc.stack[key] || [];
    if (!bytes.some((v) => v !== 0)) continue;
    below = below.map((b, i) => b + bytes[i]);
    bands.push({ label, color, values: below.map((v) => v / GIB) });
  }
  if (doc.margin_bytes && bands.length) {
    bands.push({ label: 'margin', color: '#d9d9d9', values: below.map((v) => (v + doc.margin_bytes) / GIB) });
  }
  for (const b of bands.reverse()) {
    series.push({ label: b.label, stroke: b.color, fill: b.color + 'd9', width: 0, value: (u, v) => gib(v), points: { show: false } });
    data.push(b.values);
  }
  doc.curves.forEach((c, k) => {
    const color = CURVE_COLORS[(c.color >= 0 ? c.color : k) % CURVE_COLORS.length];
    series.push({ label: c.label, stroke: color, width: 2, dash: c.dashed ? [6, 4] : undefined, value: (u, v) => gib(v), points: { show: false } });
    data.push(c.bytes.map((v) => v / GIB));
  });
  if (doc.capacity_bytes) {
    const free = doc.capacity_bytes - Math.min(doc.margin_bytes, doc.capacity_bytes);
    series.push({ label: 'GPU capacity', stroke: CAPACITY, width: 2, value: (u, v) => gib(v), points: { show: false } });
    data.push(x.map(() => doc.capacity_bytes / GIB));
    series.push({ label: 'capacity - margin', stroke: CAPACITY, width: 2, dash: [6, 4], value: (u, v) => gib(v), points: { show: false } });
    data.push(x.map(() => free / GIB));
  }
  return { series, data };
}

function marks(doc) {
  const out = doc.curves
    .map((c, k) => ({ n: c.max_n_ctx, color: CURVE_COLORS[(c.color >= 0 ? c.color : k) % CURVE_COLORS.length], label: c.label }))
    .filter((m) => m.n > 0);
  if (Object.values(doc.stack).some((v) => v.length) && doc.max_n_ctx && !out.some((m) => m.n === doc.max_n_ctx)) {
    out.unshift({ n: doc.max_n_ctx, color: '#000', label: 'requested types' });
  }
  return out;
}

function drawMarks(u, list) {
  const { ctx } = u;
  const top = u.bbox.top, bottom = u.bbox.top + u.bbox.height;
  ctx.save();
  ctx.setLineDash([2, 3]);
  ctx.font = `${11 * devicePixelRatio}px sans-serif`;
  list.forEach((m, i) => {
    const px = u.valToPos(m.n, 'x', true);
    ctx.strokeStyle = m.color;
    ctx.fillStyle = m.color;
    ctx.beginPath();
    ctx.moveTo(px, top);
    ctx.lineTo(px, bottom);
    ctx.stroke();
    ctx.fillText(`${m.label} max ${m.n.toLocaleString('en-US')}`, px + 4, top + (14 + 14 * i) * devicePixelRatio);
  });
  ctx.restore();
}

/** Replace the chart in `el` with a drawing of `doc` (one chart document of POST /v1/chart). */
export function drawChart(el, doc) {
  const { series, data } = build(doc);
  const list = marks(doc);
  let top = 0;
  for (const s of data.slice(1)) for (const v of s) top = Math.max(top, v);
  if (doc.capacity_bytes) top = Math.min(top, (2 * doc.capacity_bytes) / GIB); // as the SVG: far-off curves clipped
  top = Math.max(top, (1.05 * doc.capacity_bytes) / GIB, 1);
  const opts = {
    title: doc.title,
    width: Math.max(480, el.clientWidth || 800),
    height: 420,
    scales: { x: { time: false, distr: 3, log: 2 }, y: { range: [0, top] } },
    axes: [
      { label: 'context n_ctx (tokens, log2 scale)', values: (u, vals) => vals.map(tokens) },
      { label: doc.y_label, values: (u, vals) => vals.map((v) => `${v}`) },
    ],
    series,
    hooks: { draw: [(u) => drawMarks(u, list)] },
  };
  el.replaceChildren();
  // For tests/browser: every drawn series with its colour ("label=color;..."), as the canvas cannot be read.
  el.dataset.series = series.slice(1).map((s) => `${s.label}=${s.stroke || ''}`).join(';');
  return new uPlot(opts, data, el);
}
