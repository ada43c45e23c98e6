// Small DOM and formatting helpers shared by the pages.

/** Builds an element: h('a', {href: '#/'}, 'text', child…). `on*` props are listeners. */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

let ids = 0;
/** A form control with its <label for> and an optional hint tied by aria-describedby. */
export function field(label, control, hint) {
  if (!control.id) control.id = `f${++ids}`;
  const small = hint ? h('small', { class: 'muted', id: `${control.id}-hint` }, hint) : null;
  if (small) control.setAttribute('aria-describedby', small.id);
  return h('div', { class: 'field' }, h('label', { for: control.id }, label), control, small);
}

/** An error box that shows the server's words verbatim (its problem `detail`). */
export function errorBox(err) {
  if (!err) return h('p', { class: 'error', role: 'alert', hidden: true });
  const code = err.code ? h('code', {}, err.code) : null;
  return h('p', { class: 'error', role: 'alert' }, h('span', { class: 'detail' }, err.detail || String(err.message || err)), code ? ' ' : null, code);
}

/** Replaces `slot` with an error box for `err` (or hides it when `err` is null). */
export function showError(slot, err) {
  const box = errorBox(err);
  slot.replaceWith(box);
  return box;
}

const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
export function bytes(n) {
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(n < 10 ? 1 : 0)) + '\u00a0' + units[i];
}

export const num = (n) => Number(n).toLocaleString('en-US');

export function rate(n) {
  if (n >= 100) return Math.round(n).toLocaleString('en-US') + '/s';
  return (Math.round(n * 10) / 10) + '/s';
}

/** Local time with milliseconds, e.g. 2026-12-01 14:03:07.123. */
export function time(ms) {
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return String(ms);
  const p = (x, w = 2) => String(x).padStart(w, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

/** Milliseconds since the epoch from an <input type="datetime-local"> value (local time). */
export function fromLocalInput(value) {
  const ms = new Date(value).getTime();
  return Number.isNaN(ms) ? null : ms;
}

export const enc = encodeURIComponent;

/** Calls `fn` every `ms` while the tab is visible; returns a stop function. */
export function every(ms, fn) {
  let timer = null;
  let stopped = false;
  const tick = async () => {
    if (stopped) return;
    if (!document.hidden) {
      try { await fn(); } catch (e) { console.warn(e); }
    }
    if (!stopped) timer = setTimeout(tick, ms);
  };
  tick();
  return () => { stopped = true; clearTimeout(timer); };
}
