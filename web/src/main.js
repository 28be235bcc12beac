// The kvfit page: a form whose every change sends the same body to POST /v1/plan (the CLI's --json, schema 2:
// docs/json.md) and POST /v1/chart, then shows the verdict, the warnings, the largest context per cache type, the
// launch command, the charts and the buffers. The runtimes and their flags come from GET /v1/runtimes, so a new
// runtime appears here without a change. With models added below the first, the body is a set ("models", docs/sets.md)
// and the page shows the set document: each model's plan, every GPU's sum, the host RAM, the verdict and the joint
// solve. The page computes nothing itself: every number is the server's.
import './style.css';
import { drawChart } from './chart.js';

const CACHE_TYPES = ['f16', 'q8_0', 'q4_0', 'f32', 'bf16', 'q4_1', 'iq4_nl', 'q5_0', 'q5_1'];
const UPLOAD_LIMIT = 16 * 2 ** 20; // bytes: the server's max_upload_bytes
const $ = (id) => document.getElementById(id);
const commas = (n) => Number(n).toLocaleString('en-US');
const gib = (b) => `${(b / 2 ** 30).toFixed(2)} GiB`;

let upload = null; // {field: "config" | "gguf_base64", value, name}
let serial = 0;    // answers to stale requests are dropped
let runtimes = []; // GET /v1/runtimes

const runtime = () => runtimes.find((r) => r.name === $('runtime').value) || runtimes[0];

function base64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** The models added below the first (a set): [{model, context, weight}] as typed. */
function setRows() {
  return [...$('set-rows').querySelectorAll('.set-row')].map((row) => ({
    model: row.querySelector('select').value,
    context: row.querySelector('input[name=context]').value.trim(),
    weight: row.querySelector('input[name=weight]').value.trim(),
  }));
}

/** A set's body (docs/api.md "models"): the form's flags for every model, each row's model, context and weight its
 * own; the first model is the form's (catalog or upload). Null when no model was added. */
export function setBody(body) {
  const rows = setRows();
  if (!rows.length) return null;
  const { model, config, gguf_base64: gguf, upload_name: uploadName, ...common } = body;
  const first = upload ? { [upload.field]: upload.field === 'config' ? config : gguf, upload_name: uploadName } : { model };
  const weighted = $('main-weight').value.trim() || rows.some((r) => r.weight);
  if (weighted) first.weight = $('main-weight').value.trim() || '1';
  const contextFlag = runtime().context_flag;
  return {
    ...common,
    models: [first, ...rows.map((r) => {
      const item = { model: r.model };
      if (r.context && contextFlag) item[contextFlag] = r.context;
      if (weighted) item.weight = r.weight || '1';
      return item;
    })],
  };
}

function addSetRow(models) {
  const row = document.createElement('div');
  row.className = 'set-row';
  const select = document.createElement('select');
  for (const m of models) select.add(new Option(m.name, m.name));
  select.selectedIndex = Math.min(1, models.length - 1);
  const field = (name, placeholder) => {
    const label = document.createElement('label');
    label.textContent = name;
    const input = document.createElement('input');
    input.name = name;
    input.placeholder = placeholder;
    label.append(input);
    return label;
  };
  const remove = document.createElement('button');
  remove.type = 'button';
  remove.textContent = 'remove';
  remove.addEventListener('click', () => { row.remove(); showSetControls(); schedule(); });
  const model = document.createElement('label');
  model.textContent = `Model ${$('set-rows').children.length + 2}`;
  model.append(select);
  row.append(model, field('context', 'as above'), field('weight', '1'), remove);
  $('set-rows').append(row);
  showSetControls();
}

function showSetControls() {
  const n = $('set-rows').children.length;
  $('main-weight-label').hidden = n === 0;
  $('add-model').disabled = n >= 15; // a set is at most 16 models (model_set.h max_set_models)
  [...$('set-rows').children].forEach((row, i) => { row.querySelector('label').firstChild.textContent = `Model ${i + 2}`; });
}

/** The POST body: the CLI's flags by their JSON names (docs/api.md). */
export function requestBody() {
  const body = {};
  if (upload) {
    body[upload.field] = upload.value;
    body.upload_name = upload.name;
  } else {
    body.model = $('model').value;
  }
  body.runtime = $('runtime').value;
  if (body.runtime === 'llama.cpp') {
    const ctx = $('ctx-size').value.trim();
    if (ctx) body.ctx_size = ctx;
    body.cache_type_k = $('cache-type').value;
    body.cache_type_v = $('cache-type-v').value || $('cache-type').value;
    body.flash_attn = $('flash-attn').value;
    body.parallel = $('parallel').value.trim() || '1';
    body.ubatch_size = $('ubatch-size').value.trim() || '512';
    if ($('margin').value.trim()) body.margin = $('margin').value.trim();
  } else {
    for (const input of $('runtime-flags').querySelectorAll('input')) {
      if (input.type === 'checkbox') { if (input.checked) body[input.name] = true; }
      else if (input.value.trim()) body[input.name] = input.value.trim();
    }
  }
  if ($('weights-size').value.trim()) body.weights_size = $('weights-size').value.trim();
  else if ($('weights').value) body.weights = $('weights').value;
  const count = $('gpu-count').value.trim() || '1';
  const device = $('gpu').value || $('gpu-memory').value.trim();
  if (device) body.gpu = count === '1' ? device : `${count}x${device}`;
  return body;
}

/** One input per flag of the selected runtime (llama.cpp keeps its own fieldset). */
function showRuntime() {
  const rt = runtime();
  const llama = rt.name === 'llama.cpp';
  $('runtime-summary').textContent = rt.summary;
  $('llamacpp-settings').hidden = !llama;
  $('runtime-settings').hidden = llama;
  $('margin').closest('label').hidden = !llama;
  $('runtime-legend').textContent = `${rt.display} settings`;
  $('runtime-flags').replaceChildren(...(llama ? [] : rt.flags.map((f) => {
    const label = document.createElement('label');
    label.title = f.help;
    label.textContent = f.alias ? `${f.flag} (${f.alias})` : f.flag;
    const input = document.createElement('input');
    input.name = f.name;
    if (f.type === 'boolean') input.type = 'checkbox';
    else input.placeholder = f.help.slice(0, 40);
    label.append(input);
    return label;
  })));
}

async function post(path, body) {
  const res = await fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const doc = await res.json();
  if (!res.ok) throw new Error(doc.error || `HTTP ${res.status}`);
  return doc;
}

function showPlan(plan, charts) {
  const gpus = plan.devices.filter((d) => !d.is_host);
  const hasGpu = plan.gpus.length > 0;
  const largest = charts.chart.max_n_ctx;
  $('max-ctx').textContent = hasGpu ? commas(largest) : '-';
  $('verdict').className = hasGpu ? (plan.fits ? 'fits' : 'no-fit') : '';
  $('verdict').textContent = !hasGpu
    ? `${plan.model.name}: ${gib(plan.totals.total_bytes)} in all at context ${commas(plan.context_tokens)} (no GPU given)`
    : plan.fits
      ? `Fits: ${plan.model.name} at context ${commas(plan.context_tokens)} uses ${gib(gpus.reduce((a, d) => a + d.used_bytes, 0))} of ${gib(gpus.reduce((a, d) => a + d.capacity_bytes, 0))} (${plan.rules})`
      : plan.starts
        ? `Does not fit at context ${commas(plan.context_tokens)}: the largest context that fits is ${commas(largest)} tokens`
        : `Does not start at context ${commas(plan.context_tokens)} (${plan.rules})`;
  // the runtime's refusals, then the source's and the runtime's assumptions, as the CLI prints them
  $('warnings').replaceChildren(...[...plan.refusals.map((t) => [`error: ${t}`, 'refusal']), ...plan.warnings.map((t) => [`warning: ${t}`, ''])].map(([t, cls]) => {
    const li = document.createElement('li');
    li.className = cls;
    li.textContent = t;
    return li;
  }));
  $('max-table').tBodies[0].replaceChildren(...plan.max_context.map((row) => {
    const type = row.all_full_attention ? 'all full attention (requested types)' : row.cache_type;
    const tr = document.createElement('tr');
    tr.id = `max-${type.split(' ')[0]}`;
    tr.innerHTML = '<td></td><td></td>';
    tr.cells[0].textContent = type;
    tr.cells[1].textContent = row.allowed ? commas(row.context_tokens) : row.refusal;
    return tr;
  }));
  $('command').textContent = plan.launch || '-';
  const names = [...new Set(plan.devices.flatMap((d) => d.buffers.map((b) => b.name)))];
  $('buffers').tHead.innerHTML = `<tr><th>device</th>${names.map((n) => `<th>${n}</th>`).join('')}<th>total</th></tr>`;
  $('buffers').tBodies[0].replaceChildren(...plan.devices.map((d) => {
    const tr = document.createElement('tr');
    const bytes = (n) => d.buffers.filter((b) => b.name === n).reduce((a, b) => a + b.bytes, 0);
    for (const v of [d.name, ...names.map((n) => gib(bytes(n))), gib(d.used_bytes)]) tr.insertCell().textContent = v;
    return tr;
  }));
  drawChart($('chart'), charts.chart);
  drawChart($('chart-compare'), charts.compare);
}

function listItems(items) {
  return items.map(([t, cls]) => {
    const li = document.createElement('li');
    li.className = cls;
    li.textContent = t;
    return li;
  });
}

/** The set document (docs/json.md "Sets"): the verdict, each model's plan, every GPU's sum, the host RAM and the joint
 * solve, as the CLI's text says them. */
function showSet(doc) {
  const n = doc.plans.length;
  $('verdict').className = doc.fits ? 'fits' : 'no-fit';
  $('verdict').textContent = `The ${n} models ${doc.fits ? 'fit together' : 'do not fit together'}`;
  $('set-colocation').textContent = doc.colocation;
  const named = (i, t) => `model ${i + 1} (${doc.plans[i].model.name}): ${t}`;
  $('warnings').replaceChildren(...listItems([
    ...doc.refusals.map((t) => [`error: ${t}`, 'refusal']),
    ...doc.warnings.map((t) => [`warning: ${t}`, '']),
    ...doc.plans.flatMap((p, i) => [...p.refusals.map((t) => [`error: ${named(i, t)}`, 'refusal']),
                                    ...p.warnings.map((t) => [`warning: ${named(i, t)}`, ''])]),
  ]));
  $('set-plans').tBodies[0].replaceChildren(...doc.plans.map((p, i) => {
    const tr = document.createElement('tr');
    tr.className = p.fits ? 'fits' : 'no-fit';
    const gpu = doc.devices.reduce((a, d) => a + d.member_bytes[i], 0);
    const state = p.fits ? 'fits' : 'does not fit';
    const alone = doc.fits_alone[i] === p.fits ? '' : doc.fits_alone[i] ? ' (fits alone)' : ' (does not fit alone)';
    for (const v of [p.model.name, doc.weights ? String(doc.weights[i]) : '-', commas(p.context_tokens), String(p.sequences ?? '-'),
      gib(gpu), gib(doc.host.member_bytes[i]), state + alone, p.launch || '-']) tr.insertCell().textContent = v;
    return tr;
  }));
  const hostLeft = doc.host.known ? gib(Math.abs(doc.host.capacity_bytes - doc.host.used_bytes)) + (doc.host.fits ? ' left' : ' short') : 'pass --ram for a verdict';
  $('set-devices').tBodies[0].replaceChildren(...[
    ...doc.devices.map((d) => [d.name, d.member_bytes.map(gib).join(' + '), gib(d.used_bytes), gib(d.reserved_bytes),
      gib(d.capacity_bytes), `${gib(Math.abs(d.free_bytes))} ${d.fits ? 'left' : 'short'}`, d.fits]),
    ['host RAM', doc.host.member_bytes.map(gib).join(' + '), gib(doc.host.used_bytes), '-',
      doc.host.known ? gib(doc.host.capacity_bytes) : '-', hostLeft, doc.host.fits],
  ].map(([...cells]) => {
    const tr = document.createElement('tr');
    tr.className = cells.pop() ? 'fits' : 'no-fit';
    for (const v of cells) tr.insertCell().textContent = v;
    return tr;
  }));
  const kinds = { equal_context: 'the largest equal context', utilization_split: 'split the GPU (--gpu-memory-utilization)', fraction_split: "each server's smallest static fraction, in start order",
    gpu_assignment: 'one GPU per model, each process shown only its own' };
  const kind = (a) => (a.kind === 'weighted_context' ? `the largest contexts in proportion ${doc.weights.join(' : ')}` : kinds[a.kind] || a.kind);
  const alternatives = doc.alternatives.map((a) => [`${doc.fits ? 'Largest that fit together' : 'Fits together'}: ${kind(a)}: ${
    a.flags.map((f, i) => `${doc.plans[i].model.name} ${f}`).join('; ')}${a.capped ? " (the search stops at a model's training context: more may fit)" : ''}`, a.kind]);
  if (!doc.fits && !alternatives.length) alternatives.push([`Nothing found that fits together${doc.tried.length ? ` (tried: ${doc.tried.join('; ')})` : ''}.`, 'none']);
  $('set-alternatives').replaceChildren(...listItems(alternatives));
}

async function update() {
  const id = ++serial;
  const body = requestBody();
  const set = setBody(body);
  $('single').hidden = !!set;
  $('set').hidden = !set;
  try {
    if (set) {
      const doc = await post('v1/plan', set);
      if (id !== serial) return;
      $('error').hidden = true;
      showSet(doc);
      document.body.dataset.state = 'ready';
      return;
    }
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

/** The catalog ranked for the form's GPUs and runtime (POST /v1/list): the CLI's --list --gpu rows. */
async function showList() {
  const form = requestBody();
  const body = { runtime: form.runtime, gpu: form.gpu || '8GiB' };
  if (form.ctx_size) body.ctx_size = form.ctx_size;
  if ($('list-name').value.trim()) body.name = $('list-name').value.trim();
  document.body.dataset.list = 'busy';
  try {
    const doc = await post('v1/list', body);
    $('list-error').hidden = true;
    $('list-table').tBodies[0].replaceChildren(...doc.models.map((m) => {
      const tr = document.createElement('tr');
      tr.className = m.error ? 'refusal' : m.fits ? 'fits' : 'no-fit';
      const params = m.parameter_count ? `${(m.parameter_count / 1e9).toFixed(1)}B` : '?';
      const weights = m.error ? '' : `${m.weights} ${gib(m.weights_bytes)}`;
      const ctx = m.error ? m.error : m.fits ? `${commas(m.context_tokens)}${m.context_capped ? ' (trained)' : ''}`
        : m.refusals.length ? m.refusals[0] : `short ${gib(m.short_bytes)} at ${commas(m.target_context)}`;
      const speed = m.decode_tokens_per_s == null || !m.fits ? '-' : `${m.decode_tokens_per_s.toFixed(1)} t/s`;
      for (const v of [m.name, params, weights, m.error ? '' : m.cache_type, ctx, speed]) tr.insertCell().textContent = v;
      return tr;
    }));
    document.body.dataset.list = 'ready';
  } catch (e) {
    $('list-error').textContent = e.message;
    $('list-error').hidden = false;
    document.body.dataset.list = 'error';
  }
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
  const [models, gpus, rts] = await Promise.all(['v1/models', 'v1/gpus', 'v1/runtimes'].map((u) => fetch(u).then((r) => r.json())));
  runtimes = rts;
  for (const r of runtimes) $('runtime').add(new Option(r.display, r.name));
  $('runtime').addEventListener('change', showRuntime);
  showRuntime();
  for (const m of models) $('model').add(new Option(m.name, m.name));
  // the marketed size names the card; plans use what the driver reports (memory_bytes, docs/api.md)
  for (const g of gpus) $('gpu').add(new Option(`${g.name} (${g.marketed_gb} GB)`, g.name));
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
  $('list-run').addEventListener('click', showList);
  $('add-model').addEventListener('click', () => { addSetRow(models); schedule(); });
  window.addEventListener('resize', schedule);
  schedule();
}

init();
