// view.js — how the inspector draws: elements made with text nodes only.
// Nothing from the store ever passes through innerHTML or an attribute
// that a browser would run or load: a record whose content is <script>
// shows those characters (and the page's Content-Security-Policy would
// refuse an inline script anyway).

// el('li', {class: 'x', onclick: f}, child, 'text', ...): an element with
// attributes and listeners, its children appended (strings as text nodes).
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  append(e, children);
  return e;
}

function append(e, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// Replaces what e holds with children.
export function fill(e, ...children) {
  e.replaceChildren();
  append(e, children);
  return e;
}

// "2026-07-28 10:15:30" in the reader's time zone, the UTC original as title.
export function when(ts) {
  if (!ts) return el('span', { class: 'muted' }, 'never');
  const d = new Date(ts);
  const pad = (n) => String(n).padStart(2, '0');
  const local = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return el('time', { datetime: ts, title: ts }, local);
}

// A number without trailing noise: 1, 2.5, 0.125.
export function num(x, digits = 3) {
  if (typeof x !== 'number') return String(x);
  return Number.isInteger(x) ? String(x) : String(Number(x.toFixed(digits)));
}

// A JSON value as a tree: objects and arrays fold, scalars show typed.
export function tree(value, name) {
  const label = name === undefined ? [] : [el('span', { class: 'key' }, name), ': '];
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v])
      : Object.entries(value);
    const kind = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
    return el('details', { class: 'tree', open: entries.length <= 12 },
      el('summary', {}, ...label, el('span', { class: 'muted' }, kind)),
      el('ul', {}, entries.map(([k, v]) => el('li', {}, tree(v, k)))));
  }
  const cls = value === null ? 'null' : typeof value;
  const text = typeof value === 'string' ? JSON.stringify(value) : String(value);
  return el('span', {}, ...label, el('span', { class: `v-${cls}` }, text));
}

// Why a record is where it is: its tier and that tier's rules, its
// salience, how often it was recalled (and when that promotes it), its key.
export function whyHere(r, tiers) {
  const t = tiers.get(r.tier);
  const parts = [];
  if (r.tier) {
    let where = `in ${r.tier}`;
    if (t) {
      const rules = [];
      if (t.kind && t.kind !== r.tier) rules.push(t.kind);
      if (t.capacity) rules.push(`capacity ${t.capacity}${t.per_session ? ' per session' : ''}`);
      if (t.spill_to) rules.push(`spills to ${t.spill_to}`);
      if (rules.length) where += ` (${rules.join(', ')})`;
    }
    parts.push(where);
  }
  if (r.salience !== undefined) parts.push(`salience ${num(r.salience)}`);
  if (r.access_count !== undefined) {
    let rec = `recalled ${r.access_count}×`;
    if (t && t.promote_to && t.promote_after) {
      rec += ` (to ${t.promote_to} at ${t.promote_after})`;
    }
    parts.push(rec);
  }
  if (r.key) parts.push(`key ${r.key} rev ${r.revision ?? 0}`);
  if (r.session) parts.push(`session ${r.session}`);
  if (r.group) parts.push(`group ${r.group}`);
  return parts.join(' · ');
}

// One record as a list entry: time, tier, role, its text (as text), why.
export function recordItem(r, tiers, { score, onopen } = {}) {
  const head = [when(r.created_at)];
  if (r.tier) head.push(el('span', { class: 'tier' }, r.tier));
  if (r.role) head.push(el('span', { class: 'role' }, r.role));
  if (score !== undefined) head.push(el('span', { class: 'score' }, `score ${num(score)}`));
  return el('li', { class: 'record', dataset: { id: r.id }, tabindex: 0,
    onclick: () => onopen && onopen(r),
    onkeydown: (e) => { if (e.key === 'Enter' && onopen) onopen(r); } },
  el('div', { class: 'head' }, head),
  el('div', { class: 'content' }, r.content === '' && r.uri ? `→ ${r.uri}` : r.content),
  el('div', { class: 'why muted' }, whyHere(r, tiers)));
}

// Every field of a record, metadata as a tree.
export function recordFields(r, tiers) {
  const order = ['id', 'created_at', 'role', 'tier', 'session', 'group', 'owner', 'key',
    'revision', 'salience', 'access_count', 'accessed_at', 'uri', 'media_type'];
  const dl = el('dl', { class: 'fields' });
  const row = (k, v) => dl.append(el('dt', {}, k), el('dd', {}, v));
  row('content', el('pre', { class: 'content' }, r.content));
  for (const k of order) {
    if (!(k in r)) continue;
    const v = r[k];
    if (k.endsWith('_at')) row(k, when(v));
    else row(k, v === null ? el('span', { class: 'v-null' }, 'null') : String(v));
  }
  if (r.key) {
    row('revisions', el('span', { class: 'muted' },
      `revision ${r.revision ?? 0}; this store keeps a key's current record only, ` +
      'not the records it replaced'));
  }
  if (r.embedding) {
    const head = r.embedding.slice(0, 6).map((x) => num(x, 4)).join(', ');
    row('embedding', `${r.embedding.length} dimensions: [${head}${r.embedding.length > 6 ? ', …' : ''}]`);
  }
  row('metadata', r.metadata === undefined ? el('span', { class: 'muted' }, 'none')
    : tree(r.metadata));
  row('why here', whyHere(r, tiers));
  return dl;
}

// One event of memory/events as a line.
export function eventItem(ev) {
  const what = [];
  if (ev.kind === 'written') {
    what.push(ev.revision ? `rewrote ${ev.key} (rev ${ev.revision})` : 'wrote');
    what.push(el('span', { class: 'mono' }, ev.id));
    if (ev.tier) what.push(`in ${ev.tier}`);
  } else if (ev.kind === 'forgotten') {
    what.push(`forgot ${ev.count}`);
  } else if (ev.kind === 'promoted') {
    what.push(`promoted ${(ev.ids || []).length} to ${ev.tier}`);
  } else if (ev.kind === 'consolidated') {
    what.push(`consolidated: moved ${ev.moved}, promoted ${ev.promoted}, dropped ${ev.dropped}`);
  } else if (ev.kind === 'session_closed') {
    what.push(`closed session ${ev.session}`);
  } else {
    what.push(ev.kind);
  }
  return el('li', { class: `event ${ev.kind}` }, when(ev.at), ' ', ...what.flatMap((w) => [w, ' ']));
}
