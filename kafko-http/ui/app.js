// The console's shell: hash routes to pages (topics, groups, schemas), the server's
// health and version in the header, and the bearer-token prompt.

import { get, setTokenPrompt, hasToken, forgetToken, onTokenChange } from './api.js';
import { h, fill, every } from './dom.js';
import * as overview from './overview.js';
import * as topicPage from './topic.js';
import * as groupsPage from './groups.js';
import * as schemasPage from './schemas.js';

const main = document.getElementById('main');

/** `#/topic/NAME?p=0` → {page: 'topic', arg: 'NAME', params}. */
function parseHash() {
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path, query = ''] = hash.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { page: parts[0] || 'overview', arg: parts[1] || '', params: new URLSearchParams(query) };
}

let current = null; // {key, stop, update?}

function route() {
  const { page, arg, params } = parseHash();
  const key = `${page}/${arg}`;
  if (current && current.key === key && current.update) {
    current.update(params);
    return;
  }
  if (current) current.stop();
  let mounted;
  switch (page) {
    case 'topic': mounted = topicPage.mount(main, params, arg); break;
    case 'groups': mounted = groupsPage.mountList(main, params); break;
    case 'group': mounted = groupsPage.mountGroup(main, params, arg); break;
    case 'schemas': mounted = schemasPage.mountList(main, params); break;
    case 'subject': mounted = schemasPage.mountSubject(main, params, arg); break;
    case 'overview': mounted = overview.mount(main, params); break;
    default:
      fill(main, h('h1', {}, 'Not found'), h('p', {}, h('a', { href: '#/' }, 'Back to the topics')));
      mounted = () => {};
  }
  current = typeof mounted === 'function' ? { key, stop: mounted } : { key, ...mounted };
  document.querySelectorAll('[data-nav]').forEach((a) => {
    const section = { group: 'groups', topic: 'overview', subject: 'schemas' }[page] || page;
    const on = a.dataset.nav === section;
    if (on) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  });
  document.title = `${arg ? arg + ' · ' : ''}kafko console`;
  if (moved) main.focus({ preventScroll: true });
  moved = true;
}
let moved = false; // the first page keeps the browser's focus

// ---- header: health and version ----
const health = document.getElementById('health');
const version = document.querySelector('meta[name="kafko-version"]')?.content;
document.getElementById('version').textContent = version ? `v${version}` : '';
every(5000, async () => {
  let state;
  try {
    state = (await get('/readyz')).status === 'ready' ? 'ready' : 'not ready';
  } catch (e) {
    state = e.code === 'shutting_down' ? 'shutting down' : e instanceof TypeError ? 'unreachable' : 'not ready';
  }
  health.textContent = state;
  health.dataset.state = state.replace(' ', '-');
});

// ---- bearer token ----
const dialog = document.getElementById('token-dialog');
const form = document.getElementById('token-form');
const input = document.getElementById('token-input');
const why = document.getElementById('token-why');
const signout = document.getElementById('signout');
dialog.addEventListener('cancel', (e) => e.preventDefault()); // the console is useless without it
setTokenPrompt((refused) => new Promise((resolve) => {
  why.textContent = refused
    ? 'The server refused that token. Enter it again.'
    : 'This server asks for a bearer token. It is kept for this browser tab only.';
  input.value = '';
  const onSubmit = (e) => {
    e.preventDefault();
    if (!input.value) return;
    form.removeEventListener('submit', onSubmit);
    dialog.close();
    resolve(input.value);
  };
  form.addEventListener('submit', onSubmit);
  if (!dialog.open) dialog.showModal();
  input.focus();
}));
const syncSignout = () => { signout.hidden = !hasToken(); };
onTokenChange(syncSignout);
syncSignout();
signout.addEventListener('click', () => { forgetToken(); location.reload(); });

window.addEventListener('hashchange', route);
route();
