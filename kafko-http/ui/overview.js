// The overview: every topic with its partitions' log start, high watermark and size, and
// its records/s over the last minute (from high-watermark deltas between polls); create
// and delete topics.

import { call, get } from './api.js';
import { h, fill, field, errorBox, showError, bytes, num, rate, enc, every } from './dom.js';
import { sparkline, Series } from './spark.js';

const POLL_MS = 2000;
/** Per topic: [t, summed high watermark] samples, and the rates derived from them. */
const watermarks = new Series(62_000);
const rates = new Series(60_000);

export function mount(main) {
  const cards = new Map();
  const grid = h('div', { class: 'cards', id: 'topics' });
  const empty = h('p', { class: 'muted', hidden: true }, 'No topics yet. Create one above, or produce to a new name (topics are created on first produce unless the server was started with --auto-create false).');
  const totals = h('div', { class: 'stats', 'aria-label': 'Totals' });
  let listError = errorBox(null);

  fill(main,
    h('div', { class: 'page-head' }, h('h1', {}, 'Topics'), totals),
    createForm(() => refresh()),
    listError,
    empty,
    grid);

  async function refresh() {
    let names;
    try {
      names = (await get('/v1/topics')).topics;
      listError = showError(listError, null);
    } catch (e) {
      listError = showError(listError, e);
      return;
    }
    const descs = await Promise.all(names.map((n) => get(`/v1/topics/${enc(n)}`).catch(() => null)));
    const now = Date.now();
    const seen = new Set();
    let records = 0, size = 0, total = 0;
    descs.forEach((d) => {
      if (!d) return;
      seen.add(d.name);
      const hw = d.partitions.reduce((a, p) => a + p.high_watermark, 0);
      const prev = watermarks.get(d.name).at(-1);
      watermarks.add(d.name, now, hw);
      if (prev && now > prev[0]) rates.add(d.name, now, Math.max(0, ((hw - prev[1]) * 1000) / (now - prev[0])));
      let card = cards.get(d.name);
      if (!card) {
        card = topicCard(d.name, () => { cards.delete(d.name); card.el.remove(); });
        cards.set(d.name, card);
      }
      card.update(d, rates.get(d.name));
      records += d.partitions.reduce((a, p) => a + (p.high_watermark - p.log_start_offset), 0);
      size += d.partitions.reduce((a, p) => a + p.size_bytes, 0);
      total += rates.get(d.name).at(-1)?.[1] ?? 0;
    });
    for (const [name, card] of cards) if (!seen.has(name)) { card.el.remove(); cards.delete(name); }
    // Keep the grid in name order without re-creating cards (focus stays where it is).
    [...cards.keys()].sort().forEach((n, i) => {
      const el = cards.get(n).el;
      if (grid.children[i] !== el) grid.insertBefore(el, grid.children[i] || null);
    });
    empty.hidden = cards.size > 0;
    fill(totals,
      stat('topics', num(cards.size)),
      stat('records', num(records)),
      stat('on disk', bytes(size)),
      stat('produced', rate(total)));
  }

  return every(POLL_MS, refresh);
}

function stat(label, value) {
  return h('div', { class: 'stat' }, h('span', { class: 'stat-value' }, value), h('span', { class: 'stat-label' }, label));
}

function createForm(onCreated) {
  const name = h('input', { name: 'name', required: true, autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. orders' });
  const partitions = h('input', { name: 'partitions', type: 'number', min: '1', max: '1024', value: '1', required: true });
  const compression = h('select', { name: 'compression' },
    ['none', 'lz4', 'zstd'].map((c) => h('option', { value: c }, c)));
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Create topic');
  const note = h('p', { class: 'note', role: 'status' });
  let err = errorBox(null);
  const form = h('form', { class: 'panel inline-form', 'aria-label': 'Create a topic', id: 'create-topic' },
    field('Name', name), field('Partitions', partitions), field('Compression', compression),
    submit, note, err);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    submit.disabled = true;
    note.textContent = '';
    try {
      const body = { partitions: Number(partitions.value), compression: compression.value };
      const resp = await call('PUT', `/v1/topics/${enc(name.value)}`, body);
      err = showError(err, null);
      note.textContent = `Topic ${resp.name} is ready with ${resp.partitions.length} partition${resp.partitions.length === 1 ? '' : 's'}.`;
      name.value = '';
      onCreated();
    } catch (e) {
      err = showError(err, e);
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

function topicCard(name, onDeleted) {
  const link = h('a', { href: `#/topic/${enc(name)}`, class: 'topic-name' }, name);
  const rateText = h('span', { class: 'rate' });
  const sparkSlot = h('span', { class: 'spark-slot' });
  const summary = h('p', { class: 'muted summary' });
  const rows = h('tbody');
  const del = h('button', { type: 'button', class: 'danger' }, 'Delete');
  let err = errorBox(null);
  const el = h('section', { class: 'card topic', 'data-topic': name, 'aria-label': `Topic ${name}` },
    h('header', {}, h('h2', {}, link), h('div', { class: 'rate-box' }, sparkSlot, rateText)),
    summary,
    h('div', { class: 'scroll' }, h('table', { class: 'partitions' },
      h('caption', { class: 'sr-only' }, `Partitions of ${name}`),
      h('thead', {}, h('tr', {}, ['partition', 'log start', 'high watermark', 'records', 'size'].map((c) => h('th', { scope: 'col' }, c)))),
      rows)),
    err,
    h('div', { class: 'row' }, h('a', { href: `#/topic/${enc(name)}`, class: 'button' }, 'Browse records'), del));
  del.addEventListener('click', async () => {
    if (!confirm(`Delete topic ${name} and all its records?`)) return;
    del.disabled = true;
    try {
      await call('DELETE', `/v1/topics/${enc(name)}`);
      onDeleted();
    } catch (e) {
      err = showError(err, e);
      del.disabled = false;
    }
  });
  return {
    el,
    update(d, series) {
      const recs = d.partitions.reduce((a, p) => a + (p.high_watermark - p.log_start_offset), 0);
      const size = d.partitions.reduce((a, p) => a + p.size_bytes, 0);
      summary.textContent = `${d.partitions.length} partition${d.partitions.length === 1 ? '' : 's'} · ${num(recs)} records · ${bytes(size)} · ${d.config.compression} · ${d.config.cleanup_policy}`;
      rateText.textContent = rate(series.at(-1)?.[1] ?? 0);
      fill(sparkSlot, sparkline(series, { width: 150, height: 32, label: `${name}: records per second over the last minute` }));
      fill(rows, d.partitions.map((p) => h('tr', {},
        h('th', { scope: 'row' }, p.partition),
        h('td', {}, num(p.log_start_offset)),
        h('td', {}, num(p.high_watermark)),
        h('td', {}, num(p.high_watermark - p.log_start_offset)),
        h('td', {}, bytes(p.size_bytes)))));
    },
  };
}
