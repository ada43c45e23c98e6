// The console's only way to the server: the public /v1 API (plus the probes), with the
// bearer token when the server asks for one. A 401 asks for a token (once for every
// request waiting on it), keeps it in sessionStorage and retries.

const TOKEN_KEY = 'kafko.console.token';

/** A problem+json answer: `detail` is the server's own wording, `code` its stable code. */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || `HTTP ${status}`);
    this.status = status;
    this.detail = problem.detail || `HTTP ${status}`;
    this.code = problem.code || '';
    this.problem = problem;
  }
}

let askToken = async () => { throw new Error('no token prompt'); };
let pendingToken = null;
const listeners = new Set();

/** Installs the prompt: `(refused: boolean) => Promise<string>`. */
export function setTokenPrompt(fn) { askToken = fn; }
export function hasToken() { return !!sessionStorage.getItem(TOKEN_KEY); }
export function forgetToken() { sessionStorage.removeItem(TOKEN_KEY); listeners.forEach((f) => f()); }
export function onTokenChange(fn) { listeners.add(fn); }

function authorize() {
  if (!pendingToken) {
    const refused = hasToken();
    sessionStorage.removeItem(TOKEN_KEY);
    pendingToken = askToken(refused).then((t) => {
      sessionStorage.setItem(TOKEN_KEY, t);
      listeners.forEach((f) => f());
    }).finally(() => { pendingToken = null; });
  }
  return pendingToken;
}

/** fetch() with the token; a 401 prompts for a (new) token and repeats the request. */
export async function raw(method, path, { body, headers = {}, signal } = {}) {
  for (;;) {
    if (pendingToken) await pendingToken;
    const h = new Headers(headers);
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) h.set('authorization', `Bearer ${token}`);
    const resp = await fetch(path, { method, headers: h, body, signal, cache: 'no-store' });
    if (resp.status !== 401) return resp;
    await resp.body?.cancel();
    await authorize();
  }
}

/** The problem in a failed response (or a stand-in with the status text). */
export async function problemOf(resp) {
  const text = await resp.text();
  try {
    const p = JSON.parse(text);
    if (p && typeof p === 'object' && p.detail) return new ApiError(resp.status, p);
  } catch { /* not JSON */ }
  return new ApiError(resp.status, { detail: text || `${resp.status} ${resp.statusText}` });
}

/** A JSON call: the parsed body, null for 204; throws ApiError otherwise. */
export async function call(method, path, json, opts = {}) {
  const init = { ...opts };
  if (json !== undefined) {
    init.body = JSON.stringify(json);
    init.headers = { 'content-type': 'application/json', ...(opts.headers || {}) };
  }
  const resp = await raw(method, path, init);
  if (!resp.ok) throw await problemOf(resp);
  if (resp.status === 204) return null;
  return resp.json();
}

export const get = (path, opts) => call('GET', path, undefined, opts);

/**
 * Follows a Server-Sent Events stream with fetch() (EventSource cannot send a bearer
 * token). On a dropped connection it reconnects after a backoff, sending the last event's
 * id as Last-Event-ID so the stream resumes after it. `onEvent({event, data, id})`,
 * `onState(state, detail)` with state live | reconnecting | failed | stopped.
 * Returns a stop function.
 */
export function follow(path, onEvent, onState) {
  const ctl = new AbortController();
  let stopped = false;
  let lastId = '';
  (async () => {
    let delay = 250;
    while (!stopped) {
      try {
        const headers = { accept: 'text/event-stream' };
        if (lastId) headers['last-event-id'] = lastId;
        const resp = await raw('GET', path, { headers, signal: ctl.signal });
        if (!resp.ok) {
          const err = await problemOf(resp);
          // A client error will not heal by retrying (deleted topic, bad partition…).
          if (resp.status < 500) { stopped = true; onState('failed', err); break; }
          onState('reconnecting', err);
        } else {
          onState('live');
          delay = 250;
          await readEvents(resp.body, (ev) => {
            if (ev.id) lastId = ev.id;
            onEvent(ev);
          });
          if (!stopped) onState('reconnecting');
        }
      } catch (e) {
        if (stopped) break;
        onState('reconnecting', e);
      }
      if (stopped) break;
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 8000);
    }
    onState('stopped');
  })();
  return () => { stopped = true; ctl.abort(); };
}

/** Parses an event stream (the HTML standard's rules) and calls `dispatch` per event. */
async function readEvents(body, dispatch) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let event = '';
  let data = [];
  let id = '';
  const line = (l) => {
    if (l === '') {
      if (data.length) dispatch({ event: event || 'message', data: data.join('\n'), id });
      event = ''; data = [];
      return;
    }
    if (l.startsWith(':')) return; // a comment: keep-alive
    const colon = l.indexOf(':');
    const name = colon < 0 ? l : l.slice(0, colon);
    let value = colon < 0 ? '' : l.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'event') event = value;
    else if (name === 'data') data.push(value);
    else if (name === 'id' && !value.includes('\0')) id = value;
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(buf);
      // A lone \r at the end may be the first half of \r\n: wait for more.
      if (!m || (m[0] === '\r' && m.index === buf.length - 1)) break;
      line(buf.slice(0, m.index));
      buf = buf.slice(m.index + m[0].length);
    }
  }
}
