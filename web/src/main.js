// The kvfit page: a form whose every change sends the same body to POST /v1/plan (the CLI's --json) and
// POST /v1/chart, then shows the verdict, the largest context per cache type, the launch command, the charts
// and the buffers. The page computes nothing itself: every number is the server's.
import './style.css';
import { drawChart } from './chart.js';

const CACHE_TYPES = ['f16', 'q8_0', 'q4_0', 'f32', 'bf16', 'q4_1', 'iq4_nl', 'q5_0', 'q5_1'];
const UPLOAD_LIMIT = 16 * 2 ** 20; // bytes: the server's max_upload_bytes
const $ = (id) => document.getElementById(id);
const commas = (n) => Number(n).toLocaleString('en-US');
const gib = (b) => `${(b / 2 ** 30).toFixed(2)} GiB`;

let upload = null; // {field: "config" | "gguf_base64", value, name}
let serial = 0;    // answers to stale requests are dropped

function base64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** The POST body: the CLI's flags by their long names (docs/api.md). */
export function requestBody() {
  const body = {};
  if (upload) {
    body[upload.field] = upload.value;
    body.upload_name = upload.name;
  } else {
    body.model = $('model').value;
  }
  const ctx = $('ctx-size').value.trim();
  if (ctx) body.ctx_size = ctx;
  body.cache_type_k = $('cache-type').value;
  body.cache_type_v = $('cache-type-v').value || $('cache-type').value;
  body.flash_attn = $('flash-attn').value;
  body.parallel = $('parallel').value.trim() || '1';
  body.ubatch_size = $('ubatch-size').value.trim() || '512';
  if ($('weights-size').value.trim()) body.weights_size = $('weights-size').value.trim();
  else if ($('weights').value) body.weights = $('weights').value;
  const count = $('gpu-count').value.trim() || '1';
  const device = $('gpu').value || $('gpu-memory').value.trim();
  if (device) body.gpu = count === '1' ? device : `${count}x${device}`;
  if ($('margin').value.trim()) body.margin = $('margin').value.trim();
  return body;
}

async function post(path, body) {
  const res = await fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const doc = await res.json();
  if (!res.ok) throw new Error(doc.error || `HTTP ${res.status}`);
  return doc;
}

function showPlan(plan, charts) {
  const fit = plan.fit;
  $('max-ctx').textContent = fit ? commas(charts.chart.max_n_ctx) : '-';
  $('verdict').className = fit ? (fit.fits ? 'fits' : 'no-fit') : '';
  $('verdict').textContent = !fit
    ? `${plan.model.name}: ${gib(plan.buffers.total_bytes)} in all at n_ctx ${commas(plan.n_ctx)} (no GPU given)`
    : fit.fits
      ? `Fits: ${plan.model.name} at n_ctx ${commas(fit.requested_n_ctx)} uses ${gib(plan.devices.filter((d) => !d.is_host).reduce((a, d) => a + d.total_bytes, 0))} of ${gib(fit.device_bytes)}`
      : `Does not fit at n_ctx ${commas(fit.requested_n_ctx)}: the largest context that fits is ${commas(charts.chart.max_n_ctx)} tokens`;
  // the source's and the planner's assumptions, as the CLI prints them ("warning: ...")
  $('warnings').replaceChildren(...(plan.warnings || []).map((w) => {
    const li = document.createElement('li');
    li.textContent = `warning: ${w}`;
    return li;
  }));
  const rows = fit ? Object.entries(fit.max_n_ctx) : [];
  if (fit) rows.push(['all full attention (requested types)', fit.max_n_ctx_if_all_full_attention]);
  $('max-table').tBodies[0].replaceChildren(...rows.map(([type, n]) => {
    const tr = document.createElement('tr');
    tr.id = `max-${type.split(' ')[0]}`;
    tr.innerHTML = '<td></td><td></td>';
    tr.cells[0].textContent = type;
    tr.cells[1].textContent = n == null ? 'needs flash attention' : commas(n);
    return tr;
  }));
  $('command').textContent = fit && fit.llama_server ? fit.llama_server : '-';
  const keys = ['weights_bytes', 'kv_bytes', 'state_bytes', 'compute_bytes', 'output_bytes', 'total_bytes'];
  $('buffers').tHead.innerHTML = `<tr><th>device</th>${keys.map((k) => `<th>${k.replace('_bytes', '')}</th>`).join('')}</tr>`;
  $('buffers').tBodies[0].replaceChildren(...plan.devices.map((d) => {
    const tr = document.createElement('tr');
    for (const v of [d.name, ...keys.map((k) => gib(d[k]))]) tr.insertCell().textContent = v;
    return tr;
  }));
  drawChart($('chart'), charts.chart);
  drawChart($('chart-compare'), charts.compare);
}

async function update() {
  const id = ++serial;
  const body = requestBody();
  try {
    const [plan, charts] = await Promise.all([post('v1/plan', body), post('v1/chart', body)]);
    if (id !== serial) return;
    $('error').hidden = true;
    showPlan(plan, charts);
    document.body.dataset.state = 'ready';
  } catch (e) {
    if (id !== serial) return;
    $('error').textContent = e.message;
    $('error').hidden = false;
    document.body.dataset.state = 'error';
  }
}

let timer = 0;
function schedule() {
  document.body.dataset.state = 'busy';
  clearTimeout(timer);
  timer = setTimeout(update, 150);
}

async function readUpload(file) {
  const head = new Uint8Array(await file.slice(0, 4).arrayBuffer());
  const isGguf = String.fromCharCode(...head) === 'GGUF';
  if (!isGguf && file.size > UPLOAD_LIMIT) throw new Error(`${file.name}: ${commas(file.size)} bytes exceeds the upload limit of ${commas(UPLOAD_LIMIT)} bytes`);
  upload = isGguf
    ? { field: 'gguf_base64', value: base64(new Uint8Array(await file.slice(0, UPLOAD_LIMIT).arrayBuffer())), name: file.name }
    : { field: 'config', value: await file.text(), name: file.name };
  $('upload-name').textContent = `using ${file.name}${isGguf && file.size > UPLOAD_LIMIT ? ' (first 16 MiB: header)' : ''}`;
  $('clear-upload').hidden = false;
}

async function init() {
  for (const sel of document.querySelectorAll('.cache-types')) {
    for (const t of CACHE_TYPES) sel.add(new Option(t, t));
  }
  const [models, gpus] = await Promise.all([fetch('v1/models').then((r) => r.json()), fetch('v1/gpus').then((r) => r.json())]);
  for (const m of models) $('model').add(new Option(m.name, m.name));
  for (const g of gpus) $('gpu').add(new Option(`${g.name} (${g.memory_bytes / 2 ** 30} GiB)`, g.name));
  $('settings').addEventListener('input', schedule);
  $('settings').addEventListener('change', schedule);
  $('settings').addEventListener('submit', (e) => e.preventDefault());
  $('upload').addEventListener('change', async (e) => {
    e.stopPropagation();
    const file = e.target.files[0];
    if (!file) return;
    try {
      await readUpload(file);
      schedule();
    } catch (err) {
      $('error').textContent = err.message;
      $('error').hidden = false;
    }
  });
  $('clear-upload').addEventListener('click', () => {
    upload = null;
    $('upload').value = '';
    $('upload-name').textContent = '';
    $('clear-upload').hidden = true;
    schedule();
  });
  window.addEventListener('resize', schedule);
  schedule();
}

init();
