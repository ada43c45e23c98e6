// One record on screen. Records are read with format=base64 so the console sees the exact
// bytes; each key, value and header value is then shown as pretty JSON when it parses,
// as text when it is UTF-8, and as hex and base64 otherwise. A key or value in
// Confluent's wire format (magic byte 0, a schema id) is decoded by the schema registry
// and shown as JSON with its schema's type and id, once the registry answers.

import { h, bytes, time } from './dom.js';
import { isFramed, decodeFramed } from './schemas.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });
/** Hex dumps stop here: a page may hold values of a megabyte. */
const HEX_LIMIT = 4096;

export function fromBase64(b64) {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** How to show some bytes: {kind: 'json'|'text'|'binary'|'null', text}. */
export function decode(b64) {
  if (b64 === null || b64 === undefined) return { kind: 'null', text: '', size: 0 };
  const raw = fromBase64(b64);
  let text;
  try {
    text = utf8.decode(raw);
  } catch {
    const shown = raw.subarray(0, HEX_LIMIT);
    const hex = Array.from(shown, (b) => b.toString(16).padStart(2, '0')).join(' ');
    return { kind: 'binary', text: hex + (raw.length > HEX_LIMIT ? ' …' : ''), base64: b64, size: raw.length };
  }
  const t = text.trimStart();
  if (t && '{["-0123456789tfn'.includes(t[0])) {
    try { return { kind: 'json', text: JSON.stringify(JSON.parse(text), null, 2), size: raw.length }; } catch { /* text */ }
  }
  return { kind: 'text', text, size: raw.length };
}

/** Bytes of key, value and headers: what a record costs against the size limits. */
export function recordSize(r) {
  let n = 0;
  const len = (b64) => (b64 ? Math.floor((b64.length * 3) / 4) - (b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0) : 0);
  n += len(r.key) + len(r.value);
  for (const hd of r.headers || []) n += new TextEncoder().encode(hd.name).length + len(hd.value);
  return n;
}

function shown(d, what) {
  if (d.kind === 'null') return h('span', { class: 'muted' }, what === 'value' ? 'null (tombstone)' : 'none');
  if (d.kind === 'binary') {
    return h('div', { class: 'binary' },
      h('pre', { class: 'val', 'aria-label': `${what} as hex` }, d.text),
      h('pre', { class: 'val b64', 'aria-label': `${what} as base64` }, d.base64));
  }
  return h('pre', { class: `val ${d.kind}` }, d.text);
}

function isoOrNull(ms) {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

/** Replaces what `dd` shows with the registry's decoding of `b64`, when it is in
 * Confluent's wire format and the registry reads it; `kind` then names the schema. */
async function decodeInto(b64, dd, kind) {
  if (!b64) return;
  const raw = fromBase64(b64);
  if (!isFramed(raw)) return;
  const d = await decodeFramed(raw);
  if (!d) return;
  const label = `${d.schemaType.toLowerCase()} · schema ${d.id}${d.message ? ` · ${d.message}` : ''}`;
  dd.replaceChildren(
    h('span', { class: 'schema-tag muted' }, label),
    h('pre', { class: 'val json decoded' }, JSON.stringify(d.value, null, 2)));
  dd.dataset.schemaId = String(d.id);
  if (kind) { kind.textContent = d.schemaType.toLowerCase(); kind.className = 'kind json'; }
}

/** A record as an <article>; `r` is a record of a format=base64 read. */
export function recordView(r) {
  const key = decode(r.key);
  const value = decode(r.value);
  const headers = (r.headers || []).map((hd) => [hd.name, decode(hd.value)]);
  const kind = h('span', { class: `kind ${value.kind}` }, value.kind === 'null' ? 'tombstone' : value.kind);
  const keyBox = h('dd', { class: 'key' }, shown(key, 'key'));
  const valueBox = h('dd', { class: 'value' }, shown(value, 'value'));
  decodeInto(r.key, keyBox, null);
  decodeInto(r.value, valueBox, kind);
  return h('article', { class: 'record', 'data-offset': r.offset, 'aria-label': `record ${r.partition}:${r.offset}` },
    h('div', { class: 'meta' },
      h('span', { class: 'offset' }, `#${r.offset}`),
      h('span', { title: 'partition' }, `p${r.partition}`),
      h('time', { datetime: isoOrNull(r.timestamp) }, time(r.timestamp)),
      h('span', { class: 'muted' }, bytes(recordSize(r))),
      kind),
    h('dl', {},
      h('dt', {}, 'key'), keyBox,
      h('dt', {}, 'value'), valueBox,
      headers.length ? [h('dt', {}, 'headers'), h('dd', {},
        h('ul', { class: 'headers' }, headers.map(([name, d]) => h('li', {}, h('b', {}, name), ': ', d.kind === 'binary' ? d.base64 : d.text))))] : null));
}
