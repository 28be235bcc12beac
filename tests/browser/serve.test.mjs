// The page of `kvfit serve` in a real browser (issue 9): choose Qwen3.5-9B and an 8 GiB GPU, read the largest
// context off the page, switch the cache type to q8_0 and see it grow; the page's numbers must equal the
// API's (which equals the CLI's --json). Keeps a screenshot. Run by tests/browser/run.sh, which starts the
// server and passes its address: node serve.test.mjs http://127.0.0.1:PORT/ SCREENSHOT.png
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const [base, screenshot] = process.argv.slice(2);
const profile = mkdtempSync(join(tmpdir(), 'kvfit-chromium-'));
// A fresh profile each run (playwright passes it as --user-data-dir).
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1400, height: 1500 },
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync'],
});
const number = (text) => Number(text.replace(/,/g, ''));

try {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('requestfailed', (r) => errors.push(`${r.url()}: ${r.failure()?.errorText}`));
  // Nothing but the kvfit server: no CDN, no font service.
  page.on('request', (r) => { if (!r.url().startsWith(base)) errors.push(`request outside kvfit: ${r.url()}`); });

  // Each settled update sets data-state=ready; a change sets it to busy first.
  const settle = async (change) => {
    await page.evaluate(() => { document.body.dataset.state = 'busy'; });
    await change();
    await page.waitForFunction(() => document.body.dataset.state !== 'busy', null, { timeout: 15000 });
    assert.equal(await page.evaluate(() => document.body.dataset.state), 'ready', await page.textContent('#error'));
  };

  await page.goto(base);
  await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 15000 });
  await settle(async () => {
    await page.selectOption('#model', 'Qwen3.5-9B');
    await page.selectOption('#gpu', '');          // "memory size:"
    await page.fill('#gpu-memory', '8GiB');
    await page.fill('#weights-size', '6.6GB');     // the seeds' 4-bit file
    await page.selectOption('#cache-type', 'f16');
  });
  const f16 = number(await page.textContent('#max-ctx'));
  console.log(`largest context, f16 cache: ${f16}`);
  // the seeds' scale (tens of thousands of tokens); llama-server reserves logits for its slots only (n_outputs_max =
  // -np, docs/llamacpp.md "Outputs"), which leaves 44,800 at this build
  assert.ok(f16 >= 24576 && f16 <= 49152, `f16: ${f16}`);
  assert.equal(number(await page.textContent('#max-f16 td:nth-child(2)')), f16);
  assert.match(await page.textContent('#command'), /^llama-server -m Qwen3\.5-9B\.gguf /);

  // The page shows the API's numbers, and the API's JSON is the CLI's (tests/test_server.cpp compares bytes).
  const api = await page.evaluate(async () => {
    const r = await fetch('v1/plan', { method: 'POST', body: JSON.stringify({ model: 'Qwen3.5-9B', gpu: '8GiB', weights_size: '6.6GB' }) });
    return r.json();
  });
  // schema 2 (docs/json.md): the largest context per cache type is a row of max_context
  const maxContext = (type) => api.max_context.find((r) => !r.all_full_attention && r.cache_type === type).context_tokens;
  assert.equal(api.schema_version, 2);
  assert.equal(maxContext('f16'), f16);

  await settle(() => page.selectOption('#cache-type', 'q8_0'));
  const q8 = number(await page.textContent('#max-ctx'));
  console.log(`largest context, q8_0 cache: ${q8}`);
  // an 8-bit cache takes 34/64 of the f16 bytes, but CUDA's flash attention converts one layer's quantized K and V to
  // f16 in the compute buffer (case K7), so less than twice the tokens fit
  assert.ok(q8 > f16 * 1.3 && q8 < f16 * 2, `q8_0 ${q8} vs f16 ${f16}`);
  assert.equal(q8, maxContext('q8_0'));
  assert.match(await page.textContent('#command'), /-ctk q8_0 -ctv q8_0/);
  assert.equal(await page.locator('#chart canvas').count() > 0, true, 'the chart is drawn');
  for (const id of ['#chart', '#chart-compare']) {
    const series = (await page.getAttribute(id, 'data-series')).split(';');
    assert.ok(series.length >= 6, `${id}: ${series}`);
    for (const s of series) assert.match(s, /=#[0-9a-f]{6,8}$/, `${id}: series without a colour: ${s}`);
  }

  // Bad input: the CLI's one-line message on the page, and the page recovers.
  await page.evaluate(() => { document.body.dataset.state = 'busy'; });
  await page.fill('#ubatch-size', '0');
  await page.waitForFunction(() => document.body.dataset.state === 'error', null, { timeout: 15000 });
  assert.equal(await page.textContent('#error'), '-ub 0: must be at least 1');
  await settle(() => page.fill('#ubatch-size', '512'));
  assert.equal(number(await page.textContent('#max-ctx')), q8);

  // Another runtime from the registry: vLLM's flags appear, the plan and its warnings are vLLM's.
  await settle(async () => {
    await page.selectOption('#runtime', 'vllm');
    await page.fill('#runtime-flags input[name=max_model_len]', '8192');
  });
  assert.equal(await page.isVisible('#llamacpp-settings'), false);
  assert.match(await page.textContent('#command'), /^vllm serve Qwen\/Qwen3\.5-9B --max-model-len 8192 /);
  // 6.6 GB of weights leave vLLM no room on 8 GiB: its own startup error is shown with the warnings
  assert.match(await page.textContent('#warnings'), /No available memory for the cache blocks/);
  assert.match(await page.textContent('#verdict'), /^Does not start/);
  await settle(() => page.selectOption('#runtime', 'llama.cpp'));
  assert.equal(number(await page.textContent('#max-ctx')), q8);

  // A set (issue 28): a second model on the same GPU with its own context and a weight. The page posts "models" to
  // POST /v1/plan and shows the set document: each model's plan, every GPU's sum and the host RAM, the verdict and the
  // joint solve; its numbers are the API's for the body it sent. Removing the model brings back the single plan.
  let setRequest = null;
  page.on('request', (r) => {
    if (r.method() === 'POST' && r.url().endsWith('/v1/plan') && (r.postData() || '').includes('"models"')) setRequest = r.postData();
  });
  await settle(async () => {
    await page.click('#add-model');
    await page.selectOption('#set-rows select', 'Qwen3-8B');
    await page.fill('#set-rows input[name=context]', '4096');
    await page.fill('#set-rows input[name=weight]', '2');
  });
  assert.ok(setRequest, 'the page posted a set');
  const sent = JSON.parse(setRequest);
  assert.deepEqual(sent.models, [{ model: 'Qwen3.5-9B', weight: '1' }, { model: 'Qwen3-8B', ctx_size: '4096', weight: '2' }]);
  assert.equal(await page.isVisible('#single'), false);
  assert.equal(await page.isVisible('#set'), true);
  const setDoc = await page.evaluate(async (body) => (await fetch('v1/plan', { method: 'POST', body })).json(), setRequest);
  assert.equal(setDoc.set, true);
  assert.equal(await page.textContent('#verdict'), `The 2 models ${setDoc.fits ? 'fit together' : 'do not fit together'}`);
  const cells = (sel) => page.$$eval(sel, (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  const planRows = await cells('#set-plans tbody tr');
  assert.equal(planRows.length, 2);
  assert.deepEqual(planRows.map((r) => r[0]), setDoc.plans.map((p) => p.model.name));
  assert.deepEqual(planRows.map((r) => number(r[2])), setDoc.plans.map((p) => p.context_tokens));
  assert.equal(planRows[1][1], '2');
  const gibText = (b) => `${(b / 2 ** 30).toFixed(2)} GiB`;
  const deviceRows = await cells('#set-devices tbody tr');
  assert.equal(deviceRows.length, setDoc.devices.length + 1); // the GPUs, then the host RAM
  assert.equal(deviceRows[0][2], gibText(setDoc.devices[0].used_bytes));
  assert.deepEqual(deviceRows.at(-1).slice(0, 3), ['host RAM', setDoc.host.member_bytes.map(gibText).join(' + '), gibText(setDoc.host.used_bytes)]);
  const alternatives = await page.$$eval('#set-alternatives li', (lis) => lis.map((li) => li.textContent));
  assert.equal(alternatives.length, setDoc.alternatives.length || (setDoc.fits ? 0 : 1));
  if (setDoc.alternatives.length) {
    assert.match(alternatives[0], /^(Fits together|Largest that fit together): /);
    assert.ok(alternatives[0].includes(`${setDoc.plans[0].model.name} ${setDoc.alternatives[0].flags[0]}`), alternatives[0]);
  }
  console.log(`set: ${await page.textContent('#verdict')}; ${alternatives.join(' | ')}`);
  await settle(() => page.click('#set-rows button'));
  assert.equal(await page.isVisible('#single'), true);
  assert.equal(number(await page.textContent('#max-ctx')), q8);

  // What fits (issue 16): the catalog ranked for the same 8 GiB GPU; the rows are POST /v1/list's, which is the
  // CLI's `--list --gpu 8GiB --json` (tests/test_ranking.cpp).
  await page.fill('#list-name', 'Qwen3');
  await page.click('#list-run');
  await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.list), null, { timeout: 30000 });
  assert.equal(await page.evaluate(() => document.body.dataset.list), 'ready', await page.textContent('#list-error'));
  const listed = await page.evaluate(async () => {
    const r = await fetch('v1/list', { method: 'POST', body: JSON.stringify({ runtime: 'llama.cpp', gpu: '8GiB', name: 'Qwen3' }) });
    return r.json();
  });
  const rows = await page.$$eval('#list-table tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  assert.ok(rows.length >= 5, `list rows: ${rows.length}`);
  assert.equal(rows.length, listed.models.length);
  assert.equal(rows[0][0], listed.models[0].name);
  assert.ok(listed.models[0].fits);
  assert.equal(number(rows[0][4].replace(' (trained)', '')), listed.models[0].context_tokens);
  console.log(`what fits 8 GiB: ${rows[0][0]} ${rows[0][2]} ${rows[0][3]} ${rows[0][4]}`);

  await page.screenshot({ path: screenshot, fullPage: true });
  assert.deepEqual(errors, []);
  console.log(`browser test passed; screenshot ${screenshot}`);
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
