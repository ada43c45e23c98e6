// The schema registry (Confluent's API, served on this port): the subjects with their
// latest version, and one subject's versions with each version's schema; and the
// decoding of records in Confluent's wire format by the schema id they carry.

import { raw } from './api.js';
import { h, fill, errorBox, showError, num, enc, every } from './dom.js';

const POLL_MS = 2000;

/** A registry call: the parsed answer; throws with the registry's message otherwise. */
async function registry(method, path, body) {
  const init = body === undefined ? {} : { body, headers: { 'content-type': 'application/octet-stream' } };
  const resp = await raw(method, path, init);
  const text = await resp.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
  if (!resp.ok) {
    const detail = parsed?.message || parsed?.detail || text || `HTTP ${resp.status}`;
    const err = new Error(detail);
    err.detail = detail;
    err.code = parsed?.error_code ? String(parsed.error_code) : parsed?.code || '';
    throw err;
  }
  return parsed;
}

const typeOf = (v) => v.schemaType || 'AVRO';

/** A schema's text as shown: JSON pretty-printed, anything else (Protobuf) as sent. */
function schemaText(text) {
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return text; }
}

export function mountList(main) {
  const rows = h('tbody');
  const empty = h('p', { class: 'muted', hidden: true }, 'No subjects yet. Register a schema with POST /subjects/{subject}/versions, or let a serializer do it.');
  let err = errorBox(null);
  fill(main,
    h('div', { class: 'page-head' }, h('h1', {}, 'Schemas')),
    err, empty,
    h('div', { class: 'scroll panel' }, h('table', { id: 'subjects' },
      h('thead', {}, h('tr', {}, ['subject', 'type', 'latest version', 'id'].map((c) => h('th', { scope: 'col' }, c)))),
      rows)));
  return every(POLL_MS, async () => {
    let latest;
    try {
      latest = await registry('GET', '/schemas?latestOnly=true');
      err = showError(err, null);
    } catch (e) { err = showError(err, e); return; }
    empty.hidden = latest.length > 0;
    fill(rows, latest.map((v) => h('tr', { 'data-subject': v.subject },
      h('th', { scope: 'row' }, h('a', { href: `#/subject/${enc(v.subject)}` }, v.subject)),
      h('td', {}, typeOf(v)),
      h('td', {}, num(v.version)),
      h('td', {}, num(v.id)))));
  });
}

export function mountSubject(main, params, subject) {
  const picker = h('select', { id: 'version', 'aria-label': 'Version' });
  const meta = h('p', { class: 'muted', id: 'schema-meta' });
  const text = h('pre', { class: 'val json', id: 'schema-text', 'aria-label': 'Schema' });
  let err = errorBox(null);
  let shown = '';
  fill(main,
    h('div', { class: 'page-head' },
      h('h1', {}, h('a', { href: '#/schemas', class: 'crumb' }, 'Schemas'), ' / ', subject),
      picker),
    err, meta, h('section', { class: 'card panel' }, text));
  picker.addEventListener('change', () => {
    location.hash = `#/subject/${enc(subject)}?v=${enc(picker.value)}`;
  });

  const show = async (version) => {
    let v;
    try {
      v = await registry('GET', `/subjects/${enc(subject)}/versions/${enc(version)}`);
      err = showError(err, null);
    } catch (e) { err = showError(err, e); return; }
    const key = `${v.version}/${v.id}`;
    if (shown === key) return;
    shown = key;
    const refs = (v.references || []).map((r) => `${r.name} → ${r.subject} v${r.version}`);
    meta.textContent = `Version ${v.version} · id ${v.id} · ${typeOf(v)}${refs.length ? ` · references: ${refs.join(', ')}` : ''}`;
    text.textContent = schemaText(v.schema);
  };

  let wanted = params.get('v') || 'latest';
  const stop = every(POLL_MS, async () => {
    let versions;
    try {
      versions = await registry('GET', `/subjects/${enc(subject)}/versions`);
    } catch (e) { err = showError(err, e); return; }
    const values = ['latest', ...versions.map(String)].join(',');
    if (picker.dataset.values !== values) {
      picker.dataset.values = values;
      fill(picker,
        h('option', { value: 'latest' }, `latest (v${versions[versions.length - 1]})`),
        [...versions].reverse().map((n) => h('option', { value: String(n) }, `version ${n}`)));
    }
    picker.value = wanted;
    await show(wanted);
  });
  return {
    stop,
    update(p) {
      wanted = p.get('v') || 'latest';
      picker.value = wanted;
      show(wanted);
    },
  };
}

/** Whether `raw` (a key or value's bytes) looks like Confluent's wire format. */
export function isFramed(bytes) {
  return bytes.length >= 5 && bytes[0] === 0;
}

/** `bytes` decoded by the registry: {id, schemaType, message?, value}; null when the
 * registry cannot (no such id, not the schema's encoding). */
export async function decodeFramed(bytes) {
  try {
    return await registry('POST', '/schemas/decode', bytes);
  } catch {
    return null;
  }
}
