// A topic: browse one partition a page at a time (first / previous / next / last, jump
// to an offset or a time), follow it live over SSE, and produce a record. Only one page
// is ever held: a partition of any length is read with offset + max_records.

import { call, get, follow } from './api.js';
import { h, fill, field, errorBox, showError, num, bytes, enc, fromLocalInput, every } from './dom.js';
import { recordView } from './record.js';

/** Bytes per page read: a page of large values stays bounded. */
const PAGE_BYTES = 1024 * 1024;
const TAIL_KEEP = 100;
const SIZES = [20, 50, 100, 200];

export function mount(main, params, topic) {
  let desc = null;
  let state = { p: 0, o: null, n: 50 };
  let page = null; // the last page read: {records, next_offset, high_watermark, log_start_offset}

  const partSelect = h('select', { id: 'partition', name: 'partition' });
  const sizeSelect = h('select', { id: 'page-size', name: 'page-size' }, SIZES.map((n) => h('option', { value: n }, n)));
  const partInfo = h('p', { class: 'muted', id: 'partition-info', role: 'status' });
  const btn = (label, id, onclick) => h('button', { type: 'button', id, onclick }, label);
  const first = btn('⇤ First', 'first', () => go(state.p, page ? page.log_start_offset : 0));
  const prev = btn('← Previous', 'prev', () => page && go(state.p, Math.max(page.log_start_offset, pageStart() - state.n)));
  const next = btn('Next →', 'next', () => page && go(state.p, page.next_offset));
  const last = btn('Last ⇥', 'last', () => go(state.p, null));
  const offsetInput = h('input', { id: 'jump-offset', type: 'number', min: '0', name: 'offset', inputmode: 'numeric' });
  const timeInput = h('input', { id: 'jump-time', type: 'datetime-local', step: '1', name: 'time' });
  const pageInfo = h('p', { class: 'page-info', id: 'page-info', role: 'status', 'aria-live': 'polite' });
  const list = h('div', { class: 'records', id: 'records' });
  let pageErr = errorBox(null);

  const offsetForm = h('form', { class: 'mini-form', 'aria-label': 'Jump to offset' },
    field('Offset', offsetInput), h('button', { type: 'submit' }, 'Go'));
  offsetForm.addEventListener('submit', (e) => { e.preventDefault(); if (offsetInput.value !== '') go(state.p, Number(offsetInput.value)); });
  const timeForm = h('form', { class: 'mini-form', 'aria-label': 'Jump to time' },
    field('Time (local)', timeInput), h('button', { type: 'submit' }, 'Go'));
  timeForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const ms = fromLocalInput(timeInput.value);
    if (ms === null) return;
    try {
      const r = await get(`/v1/topics/${enc(topic)}/partitions/${state.p}/offsets?timestamp=${ms}`);
      if (r.offset === null) {
        pageErr = showError(pageErr, { detail: 'No record at or after that time: showing the last page.' });
        go(state.p, null, true);
      } else {
        go(state.p, r.offset);
      }
    } catch (err) { pageErr = showError(pageErr, err); }
  });
  partSelect.addEventListener('change', () => go(Number(partSelect.value), null));
  sizeSelect.addEventListener('change', () => { state.n = Number(sizeSelect.value); go(state.p, state.o); });

  const tail = tailPanel(topic, () => state.p);
  const produce = produceForm(topic, (pos) => go(pos.partition, Math.max(0, pos.offset - state.n + 1)));

  fill(main,
    h('div', { class: 'page-head' },
      h('h1', {}, h('a', { href: '#/', class: 'crumb' }, 'Topics'), ' / ', h('span', { id: 'topic-title' }, topic)),
      h('div', { class: 'row' }, field('Partition', partSelect), field('Page size', sizeSelect))),
    partInfo,
    h('div', { class: 'split' },
      h('section', { class: 'browse', 'aria-labelledby': 'browse-title' },
        h('h2', { id: 'browse-title' }, 'Records'),
        h('div', { class: 'toolbar' },
          h('div', { class: 'pager', role: 'group', 'aria-label': 'Pages' }, first, prev, next, last),
          offsetForm, timeForm),
        pageInfo, pageErr, list),
      h('aside', { class: 'side' }, produce.el, tail.el)));

  /** Navigates (a history entry per page, so Back works); `o` null = the last page. */
  function go(p, o, keepError) {
    const q = new URLSearchParams({ p: String(p), n: String(state.n) });
    if (o !== null && o !== undefined) q.set('o', String(o));
    const target = `#/topic/${enc(topic)}?${q}`;
    if (!keepError) pageErr = showError(pageErr, null);
    if (location.hash === target) load(); else location.hash = target;
  }

  function pageStart() { return page && page.records.length ? page.records[0].offset : (state.o ?? 0); }

  async function describe() {
    try {
      desc = await get(`/v1/topics/${enc(topic)}`);
    } catch (e) {
      pageErr = showError(pageErr, e);
      return;
    }
    if (partSelect.options.length !== desc.partitions.length) {
      fill(partSelect, desc.partitions.map((p) => h('option', { value: p.partition }, p.partition)));
      produce.setPartitions(desc.partitions.length);
    }
    partSelect.value = String(state.p);
    const p = desc.partitions[state.p];
    if (p) partInfo.textContent = `Partition ${p.partition}: log start ${num(p.log_start_offset)}, high watermark ${num(p.high_watermark)}, ${bytes(p.size_bytes)} in ${p.segments} segment${p.segments === 1 ? '' : 's'}.`;
    buttons();
  }

  async function load() {
    let o = state.o;
    try {
      if (o === null) {
        const off = await get(`/v1/topics/${enc(topic)}/partitions/${state.p}/offsets`);
        o = Math.max(off.log_start_offset, off.high_watermark - state.n);
      }
      page = await get(`/v1/topics/${enc(topic)}/records?partition=${state.p}&offset=${o}&max_records=${state.n}&max_bytes=${PAGE_BYTES}&format=base64`);
    } catch (e) {
      page = null;
      pageErr = showError(pageErr, e);
      fill(list);
      pageInfo.textContent = '';
      buttons();
      return;
    }
    const recs = page.records;
    fill(list, recs.length ? recs.map(recordView) : h('p', { class: 'muted' }, 'No records on this page.'));
    pageInfo.textContent = recs.length
      ? `Offsets ${num(recs[0].offset)}–${num(recs.at(-1).offset)} of ${num(page.log_start_offset)}–${num(Math.max(page.log_start_offset, page.high_watermark - 1))} (high watermark ${num(page.high_watermark)})`
      : `Nothing from offset ${num(o)} (log start ${num(page.log_start_offset)}, high watermark ${num(page.high_watermark)}).`;
    buttons();
  }

  /** Enables the pager by the page read and the partition's latest high watermark. */
  function buttons() {
    const known = desc && desc.partitions[state.p];
    const hw = Math.max(page ? page.high_watermark : 0, known ? known.high_watermark : 0);
    first.disabled = prev.disabled = !page || pageStart() <= page.log_start_offset;
    next.disabled = !page || page.next_offset >= hw;
    // Always available: on the last page it re-reads the newest records.
    last.disabled = false;
  }

  async function update(params) {
    const p = Number(params.get('p') ?? 0);
    const n = Number(params.get('n') ?? state.n);
    const o = params.has('o') ? Number(params.get('o')) : null;
    const partitionChanged = p !== state.p;
    state = { p, n: SIZES.includes(n) ? n : 50, o: Number.isFinite(o) ? o : null };
    sizeSelect.value = String(state.n);
    await describe();
    if (partitionChanged) tail.restart();
    await load();
  }

  state.p = -1; // the first update counts as a partition change
  update(params);
  const stopInfo = every(3000, describe);
  return {
    update,
    stop() { stopInfo(); tail.stop(); },
  };
}

/** The live tail: SSE from the high watermark on, resumed with Last-Event-ID. */
function tailPanel(topic, partition) {
  const toggle = h('button', { type: 'button', id: 'tail-toggle', 'aria-pressed': 'false' }, 'Start live tail');
  const status = h('span', { class: 'badge', id: 'tail-status', role: 'status' }, 'stopped');
  const list = h('div', { class: 'records tail', id: 'tail', 'aria-live': 'polite' });
  let err = errorBox(null);
  let stop = null;

  async function start() {
    err = showError(err, null);
    let from;
    try {
      from = (await get(`/v1/topics/${enc(topic)}/partitions/${partition()}/offsets`)).high_watermark;
    } catch (e) { err = showError(err, e); return; }
    fill(list);
    toggle.textContent = 'Stop live tail';
    toggle.setAttribute('aria-pressed', 'true');
    stop = follow(`/v1/topics/${enc(topic)}/records?partition=${partition()}&offset=${from}&follow=true&format=base64`,
      (ev) => {
        if (ev.event === 'record') {
          list.prepend(recordView(JSON.parse(ev.data)));
          while (list.children.length > TAIL_KEEP) list.lastChild.remove();
        } else if (ev.event === 'error') {
          try { err = showError(err, JSON.parse(ev.data)); } catch { /* not a problem */ }
        }
      },
      (s, detail) => {
        status.textContent = s;
        status.dataset.state = s;
        if (s === 'failed') { err = showError(err, detail); halt(); }
      });
  }
  function halt() {
    if (stop) stop();
    stop = null;
    toggle.textContent = 'Start live tail';
    toggle.setAttribute('aria-pressed', 'false');
  }
  toggle.addEventListener('click', () => (stop ? halt() : start()));
  const el = h('section', { class: 'panel', 'aria-labelledby': 'tail-title' },
    h('div', { class: 'row spread' }, h('h2', { id: 'tail-title' }, 'Live tail'), status),
    h('p', { class: 'muted' }, 'New records of this partition as they are written.'),
    toggle, err, list);
  return {
    el,
    stop: halt,
    restart() { if (stop) { halt(); start(); } },
  };
}

/** Produces one record (format=string) and reports where it landed. */
function produceForm(topic, onProduced) {
  const key = h('input', { name: 'key', id: 'produce-key', autocomplete: 'off', spellcheck: 'false' });
  const value = h('textarea', { name: 'value', id: 'produce-value', rows: '4', spellcheck: 'false' });
  const headers = h('textarea', { name: 'headers', id: 'produce-headers', rows: '2', spellcheck: 'false', placeholder: 'trace-id: abc123' });
  const partition = h('select', { name: 'partition', id: 'produce-partition' }, h('option', { value: '' }, 'by key / round robin'));
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Produce');
  const note = h('p', { class: 'note', role: 'status', id: 'produce-result' });
  let err = errorBox(null);
  const form = h('form', { class: 'panel', 'aria-labelledby': 'produce-title', id: 'produce' },
    h('h2', { id: 'produce-title' }, 'Produce a record'),
    field('Key', key, 'empty: no key'),
    field('Value', value, 'sent as text; JSON shows pretty'),
    field('Headers', headers, 'one per line: name: value'),
    field('Partition', partition),
    h('div', { class: 'row' }, submit), note, err);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    submit.disabled = true;
    note.textContent = '';
    const record = { value: value.value };
    if (key.value !== '') record.key = key.value;
    if (partition.value !== '') record.partition = Number(partition.value);
    const hs = headers.value.split('\n').map((l) => l.trim()).filter(Boolean).map((l) => {
      const i = l.indexOf(':');
      return i < 0 ? { name: l, value: '' } : { name: l.slice(0, i).trim(), value: l.slice(i + 1).trim() };
    });
    if (hs.length) record.headers = hs;
    try {
      const resp = await call('POST', `/v1/topics/${enc(topic)}/records`, { records: [record] });
      err = showError(err, null);
      const pos = resp && Array.isArray(resp.offsets) ? resp.offsets[0] : null;
      if (pos) {
        note.textContent = `Written to partition ${pos.partition} at offset ${pos.offset}.`;
        onProduced(pos);
      } else {
        note.textContent = 'Written.';
      }
    } catch (ex) {
      err = showError(err, ex);
    } finally {
      submit.disabled = false;
    }
  });
  return {
    el: form,
    setPartitions(n) {
      fill(partition, h('option', { value: '' }, 'by key / round robin'),
        Array.from({ length: n }, (_, i) => h('option', { value: i }, i)));
    },
  };
}
