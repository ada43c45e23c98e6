// Consumer groups: the list, and one group's members, generation, assignment, committed
// offsets and lag per partition (with the lag over the last minute); seek a group.

import { call, get } from './api.js';
import { h, fill, field, errorBox, showError, num, enc, fromLocalInput, every } from './dom.js';
import { sparkline, Series } from './spark.js';

const POLL_MS = 2000;
const lagHistory = new Series(60_000);

export function mountList(main) {
  const rows = h('tbody');
  const empty = h('p', { class: 'muted', hidden: true }, 'No groups yet. A group appears when it first polls a topic (POST /v1/groups/{group}/topics/{topic}/poll).');
  let err = errorBox(null);
  fill(main,
    h('div', { class: 'page-head' }, h('h1', {}, 'Consumer groups')),
    err, empty,
    h('div', { class: 'scroll panel' }, h('table', { id: 'groups' },
      h('thead', {}, h('tr', {}, ['group', 'topics', 'members'].map((c) => h('th', { scope: 'col' }, c)))),
      rows)));
  return every(POLL_MS, async () => {
    let groups;
    try {
      groups = (await get('/v1/groups')).groups;
      err = showError(err, null);
    } catch (e) { err = showError(err, e); return; }
    empty.hidden = groups.length > 0;
    fill(rows, groups.map((g) => h('tr', {},
      h('th', { scope: 'row' }, h('a', { href: `#/group/${enc(g.group)}` }, g.group)),
      h('td', {}, g.topics.map((t, i) => [i ? ', ' : '', h('a', { href: `#/topic/${enc(t)}` }, t)])),
      h('td', {}, num(g.members), g.protocol_type ? ' (Kafka clients)' : ''))));
  });
}

export function mountGroup(main, _params, group) {
  const sections = new Map();
  const container = h('div', { id: 'group-topics' });
  const config = h('p', { class: 'muted', id: 'group-config' });
  let err = errorBox(null);
  fill(main,
    h('div', { class: 'page-head' }, h('h1', {}, h('a', { href: '#/groups', class: 'crumb' }, 'Groups'), ' / ', group)),
    config, err, container);
  return every(POLL_MS, async () => {
    let d;
    try {
      d = await get(`/v1/groups/${enc(group)}`);
      err = showError(err, null);
    } catch (e) { err = showError(err, e); return; }
    const kafka = d.kafka ? ` · Kafka clients (${d.kafka.protocol || d.kafka.protocol_type}) · ${d.kafka.state}` : '';
    config.textContent = `Offset reset: ${d.config.offset_reset ?? 'earliest'} · generation ${d.generation} · ${d.topics.length} topic${d.topics.length === 1 ? '' : 's'}${kafka}`;
    config.dataset.kafka = d.kafka ? d.kafka.state : '';
    const now = Date.now();
    const seen = new Set();
    for (const t of d.topics) {
      seen.add(t.topic);
      let s = sections.get(t.topic);
      if (!s) {
        s = topicSection(group, t.topic);
        sections.set(t.topic, s);
        container.append(s.el);
      }
      for (const p of t.partitions) if (p.lag !== null && p.lag !== undefined) lagHistory.add(`${group}\n${t.topic}\n${p.partition}`, now, p.lag);
      s.update(t, Boolean(d.kafka));
    }
    for (const [name, s] of sections) if (!seen.has(name)) { s.el.remove(); sections.delete(name); }
  });
}

function topicSection(group, topic) {
  const head = h('p', { class: 'summary' });
  const members = h('tbody');
  const parts = h('tbody');
  const membersBox = h('div', { class: 'scroll' }, h('table', { class: 'members' },
    h('caption', {}, 'Members'),
    h('thead', {}, h('tr', {}, ['member', 'assignment', 'session timeout', 'idle'].map((c) => h('th', { scope: 'col' }, c)))),
    members));
  const seek = seekForm(group, topic);
  const el = h('section', { class: 'card group-topic', 'data-topic': topic, 'aria-label': `Topic ${topic}` },
    h('header', {}, h('h2', {}, h('a', { href: `#/topic/${enc(topic)}` }, topic)), head),
    membersBox,
    h('div', { class: 'scroll' }, h('table', { class: 'lag' },
      h('caption', {}, 'Partitions'),
      h('thead', {}, h('tr', {}, ['partition', 'owner', 'committed', 'position', 'log start', 'high watermark', 'lag', 'lag, last minute'].map((c) => h('th', { scope: 'col' }, c)))),
      parts)),
    seek.el);
  return {
    el,
    update(t, kafkaMembers) {
      // Kafka clients move their own offsets; kafko's seek is for its own members.
      seek.el.hidden = kafkaMembers && t.members.length > 0;
      head.textContent = `generation ${t.generation} · ${t.members.length} member${t.members.length === 1 ? '' : 's'} · total lag ${num(t.total_lag)}`;
      head.dataset.totalLag = t.total_lag;
      membersBox.hidden = t.members.length === 0;
      fill(members, t.members.map((m) => h('tr', {},
        h('th', { scope: 'row' }, m.member_id),
        h('td', {}, m.assignment.join(', ') || '—'),
        h('td', {}, `${num(m.session_timeout_ms)} ms`),
        h('td', {}, `${num(m.idle_ms)} ms`))));
      fill(parts, t.partitions.map((p) => h('tr', { 'data-partition': p.partition },
        h('th', { scope: 'row' }, p.partition),
        h('td', {}, p.owner ?? (t.members.length ? '—' : 'implicit member')),
        h('td', {}, p.committed === null || p.committed === undefined ? '—' : num(p.committed)),
        h('td', {}, p.position === null || p.position === undefined ? '' : num(p.position)),
        h('td', {}, num(p.log_start_offset)),
        h('td', {}, num(p.high_watermark)),
        h('td', { class: 'lag-value' }, p.lag === null || p.lag === undefined ? '—' : num(p.lag)),
        h('td', {}, sparkline(lagHistory.get(`${group}\n${topic}\n${p.partition}`), { label: `lag of partition ${p.partition} over the last minute`, width: 100, height: 22 })))));
      seek.setPartitions(t.partitions.map((p) => p.partition));
      seek.setMembers(t.members.map((m) => m.member_id), t.generation);
    },
  };
}

function seekForm(group, topic) {
  const partition = h('select', { name: 'partition' }, h('option', { value: '' }, 'all'));
  const to = h('select', { name: 'to' }, ['earliest', 'latest', 'offset', 'timestamp'].map((v) => h('option', { value: v }, v)));
  const offset = h('input', { name: 'offset', type: 'number', min: '0', inputmode: 'numeric' });
  const when = h('input', { name: 'time', type: 'datetime-local', step: '1' });
  // With members joined the server takes a seek only from a member, for its partitions.
  const as = h('select', { name: 'member' });
  const asField = field('As member', as);
  let generation = 0;
  const offsetField = field('Offset', offset);
  const timeField = field('Time (local)', when);
  const note = h('p', { class: 'note', role: 'status' });
  let err = errorBox(null);
  const sync = () => {
    offsetField.hidden = to.value !== 'offset';
    timeField.hidden = to.value !== 'timestamp';
    offset.required = to.value === 'offset';
    when.required = to.value === 'timestamp';
  };
  to.addEventListener('change', sync);
  sync();
  const el = h('form', { class: 'inline-form seek', 'aria-label': `Seek group ${group} on ${topic}` },
    asField, field('Partition', partition), field('Seek to', to), offsetField, timeField,
    h('button', { type: 'submit' }, 'Seek'), note, err);
  el.addEventListener('submit', async (e) => {
    e.preventDefault();
    note.textContent = '';
    let target = to.value;
    if (target === 'offset') target = { offset: Number(offset.value) };
    if (target === 'timestamp') {
      const ms = fromLocalInput(when.value);
      if (ms === null) return;
      target = { timestamp: ms };
    }
    const body = { to: target };
    if (partition.value !== '') body.partition = Number(partition.value);
    if (!asField.hidden && as.value) { body.member_id = as.value; body.generation = generation; }
    try {
      const r = await call('POST', `/v1/groups/${enc(group)}/topics/${enc(topic)}/seek`, body);
      err = showError(err, null);
      note.textContent = 'Committed: ' + r.offsets.map((o) => `p${o.partition} → ${o.offset}`).join(', ');
    } catch (ex) { err = showError(err, ex); }
  });
  let known = '';
  let knownMembers = null;
  return {
    el,
    setMembers(ids, gen) {
      generation = gen;
      asField.hidden = ids.length === 0;
      const key = ids.join('\n');
      if (key === knownMembers) return;
      knownMembers = key;
      const keep = as.value;
      fill(as, ids.map((id) => h('option', { value: id }, id)));
      if (ids.includes(keep)) as.value = keep;
    },
    setPartitions(ps) {
      const key = ps.join(',');
      if (key === known) return;
      known = key;
      const keep = partition.value;
      fill(partition, h('option', { value: '' }, 'all'), ps.map((p) => h('option', { value: p }, p)));
      partition.value = keep;
    },
  };
}
