// app.js — the a2m memory inspector (docs/UI.md). It reads the store
// through the protocol alone: memory/describe and memory/session/list for
// the view at a glance, memory/timeline for the pages, memory/recall
// (touch: false) for the search, memory/events polled for live changes;
// and it writes only what a person confirms: memory/forget and
// memory/promote of one record.
import { AuthError, call, config, token } from './rpc.js';
import { el, eventItem, fill, recordFields, recordItem } from './view.js';

const PAGE = 20;          // records per timeline page
const POLL_MS = 1000;     // how often memory/events is asked
const EVENTS_SHOWN = 50;  // live changes kept on screen

const $ = (id) => document.getElementById(id);

const state = {
  endpoint: '/',
  describe: null,
  tiers: new Map(),     // name -> describe's tier entry
  session: '',          // the timeline's filter; '' = all
  page: 0,              // 0 = newest
  cursor: null,         // memory/events
  open: null,           // the record in the detail panel
  refreshing: false,
  polling: false,       // one poller, however often start() runs
};

const rpc = (method, params) => call(state.endpoint, method, params);
const has = (cap) => state.describe && state.describe.capabilities.includes(cap);

// ---- errors and the token --------------------------------------------------

function showError(e) {
  if (e instanceof AuthError) return askToken(token.get() ? 'That token was refused.' : '');
  const box = $('error');
  fill(box, String(e && e.message ? e.message : e));
  box.hidden = false;
}

function clearError() {
  $('error').hidden = true;
}

function askToken(why) {
  $('main').hidden = true;
  $('login').hidden = false;
  $('signout').hidden = true;
  const err = $('login-error');
  fill(err, why || '');
  err.hidden = !why;
  $('token').focus();
}

$('login-form').addEventListener('submit', (e) => {
  e.preventDefault();
  token.set($('token').value.trim());
  $('token').value = '';
  start();
});

$('signout').addEventListener('click', () => {
  token.clear();
  askToken('');
});

// ---- at a glance -----------------------------------------------------------

async function glance() {
  const d = await rpc('memory/describe', { protocol: 'a2m/0.1' });
  state.describe = d;
  state.tiers = new Map((d.tiers || []).map((t) => [t.name, t]));
  fill($('server'), `${d.name} · ${d.protocol}${d.read_only ? ' · read-only' : ''}`);
  const total = (d.tiers || []).reduce((n, t) => n + t.count, 0);
  fill($('total'), d.tiers ? `${total} record${total === 1 ? '' : 's'}` : 'no tiers declared');
  fill($('tiers').tBodies[0], (d.tiers || []).map((t) => el('tr', { dataset: { tier: t.name } },
    el('td', {}, t.name), el('td', {}, t.kind || ''),
    el('td', { class: 'num count' }, String(t.count)),
    el('td', { class: 'num' }, t.capacity ? `${t.capacity}${t.per_session ? ' / session' : ''}` : '∞'),
    el('td', {}, [t.spill_to && `spills → ${t.spill_to}`,
      t.promote_to && `promotes → ${t.promote_to} after ${t.promote_after}`].filter(Boolean).join('; ')))));
  fill($('capabilities'), 'Capabilities: ', d.capabilities.join(', '));
  fill($('limits'), Object.entries(d.limits || {}).flatMap(([k, v]) =>
    [el('dt', {}, k), el('dd', {}, String(v))]));
  const tierOptions = (first) => [el('option', { value: '' }, first),
    ...(d.tiers || []).map((t) => el('option', { value: t.name }, t.name))];
  const keep = $('search-tier').value;
  fill($('search-tier'), tierOptions('every tier'));
  $('search-tier').value = keep;
  // A live refresh refills the lists; the tiers a person picked stay picked
  // (a reset here once sent a promotion to the record's own tier).
  const target = $('promote-tier').value;
  fill($('promote-tier'), (d.tiers || []).map((t) => el('option', { value: t.name }, t.name)));
  if (target) $('promote-tier').value = target;
  $('search-tier').hidden = !has('tiers');
  $('promote-tier').hidden = $('promote').hidden = !has('tiers') || d.read_only;
  $('forget').hidden = !!d.read_only;
  await sessions();
}

async function sessions() {
  const list = $('sessions');
  if (!has('sessions')) {
    fill(list, el('li', { class: 'muted' }, 'this server does not declare sessions'));
    return;
  }
  const { sessions: all } = await rpc('memory/session/list', {});
  fill(list, all.length ? all.map((s) => el('li', {},
    el('a', { href: '#', onclick: (e) => { e.preventDefault(); pickSession(s.session); } },
      s.session), ` ${s.records} record${s.records === 1 ? '' : 's'}`))
    : el('li', { class: 'muted' }, 'none yet'));
  const keep = state.session;
  fill($('session'), el('option', { value: '' }, 'all sessions'),
    all.map((s) => el('option', { value: s.session }, `session ${s.session}`)));
  $('session').value = all.some((s) => s.session === keep) ? keep : '';
  $('session').hidden = false;
}

function pickSession(s) {
  state.session = s;
  state.page = 0;
  $('session').value = s;
  timeline().catch(showError);
}

// ---- the timeline ----------------------------------------------------------

// Newest first, PAGE at a time. memory/timeline answers the newest N in
// ascending order, so page k asks for (k + 1) × PAGE and shows its oldest
// PAGE, newest first: the protocol has no other cursor into the past.
async function timeline() {
  const params = { limit: (state.page + 1) * PAGE };
  if (state.session) params.where = { session: state.session };
  const { records } = await rpc('memory/timeline', params);
  const newestFirst = records.slice().reverse();
  const shown = newestFirst.slice(state.page * PAGE, (state.page + 1) * PAGE);
  fill($('records'), shown.length ? shown.map((r) => recordItem(r, state.tiers, { onopen: openRecord }))
    : el('li', { class: 'muted' }, state.page ? 'nothing older' : 'no records yet'));
  fill($('page'), `page ${state.page + 1}`);
  $('newer').disabled = state.page === 0;
  $('older').disabled = records.length < params.limit;
}

$('session').addEventListener('change', () => pickSession($('session').value));
$('newer').addEventListener('click', () => {
  state.page = Math.max(0, state.page - 1);
  timeline().catch(showError);
});
$('older').addEventListener('click', () => {
  state.page++;
  timeline().catch(showError);
});

// ---- search ----------------------------------------------------------------

$('search-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  clearError();
  const query = $('q').value;
  const params = { query, limit: 20, touch: false };
  if ($('search-tier').value) params.tier = $('search-tier').value;
  try {
    const { records } = await rpc('memory/recall', params);
    fill($('results'), records.length
      ? records.map((r) => recordItem(r, state.tiers, { score: r.score, onopen: openRecord }))
      : el('li', { class: 'muted' }, `nothing matches ${JSON.stringify(query)}`));
  } catch (err) {
    showError(err);
  }
});

// ---- one record ------------------------------------------------------------

async function openRecord(r) {
  clearError();
  // Read again, whole (its vector too), as it is now.
  const { records } = await rpc('memory/timeline', { where: { id: r.id }, embeddings: true })
    .catch((e) => { showError(e); return { records: [] }; });
  const rec = records[0];
  state.open = rec || null;
  $('detail').hidden = false;
  fill($('detail-id'), r.id);
  fill($('detail-body'), rec ? recordFields(rec, state.tiers)
    : el('p', { class: 'muted' }, 'This record is gone.'));
  $('forget').disabled = $('promote').disabled = !rec;
  if (rec && rec.tier) $('promote-tier').value = rec.tier;
  $('detail').scrollIntoView({ block: 'nearest' });
}

$('close-detail').addEventListener('click', () => {
  $('detail').hidden = true;
  state.open = null;
});

// Asks the person; resolves to true or false.
function confirmDialog(text) {
  return new Promise((resolve) => {
    fill($('confirm-text'), text);
    $('confirm').hidden = false;
    $('confirm-no').focus();
    const done = (answer) => {
      $('confirm').hidden = true;
      $('confirm-yes').removeEventListener('click', yes);
      $('confirm-no').removeEventListener('click', no);
      resolve(answer);
    };
    const yes = () => done(true);
    const no = () => done(false);
    $('confirm-yes').addEventListener('click', yes);
    $('confirm-no').addEventListener('click', no);
  });
}

$('forget').addEventListener('click', async () => {
  const r = state.open;
  if (!r) return;
  const ok = await confirmDialog(`Forget record ${r.id}? It is deleted from the store; this cannot be undone.`);
  if (!ok) return;
  try {
    const { forgotten } = await rpc('memory/forget', { ids: [r.id] });
    fill($('detail-body'), el('p', {}, forgotten ? 'Forgotten.' : 'It was already gone.'));
    $('forget').disabled = $('promote').disabled = true;
    state.open = null;
    await refresh();
  } catch (err) {
    showError(err);
  }
});

$('promote').addEventListener('click', async () => {
  const r = state.open;
  const to = $('promote-tier').value;
  if (!r || !to) return;
  const ok = await confirmDialog(`Promote record ${r.id} (and its group) from ${r.tier} to ${to}?`);
  if (!ok) return;
  try {
    const { promoted } = await rpc('memory/promote', { ids: [r.id], tier: to });
    if (!promoted) showError(`Not moved: it is already in ${to}, or gone.`);
    await openRecord(r);
    await refresh();
  } catch (err) {
    showError(err);
  }
});

// ---- live changes ----------------------------------------------------------

async function refresh() {
  if (state.refreshing) return;
  state.refreshing = true;
  try {
    await glance();
    await timeline();
  } finally {
    state.refreshing = false;
  }
}

async function poll() {
  try {
    const params = { limit: 100 };
    if (state.cursor) params.cursor = state.cursor;
    const res = await rpc('memory/events', params);
    state.cursor = res.cursor;
    $('live').classList.remove('stale');
    if (res.reset) fill($('events-note'), 'The server restarted or the log moved on: some changes may not be shown.');
    const list = $('event-list');
    for (const ev of res.events) list.prepend(eventItem(ev));
    while (list.children.length > EVENTS_SHOWN) list.lastChild.remove();
    if (res.events.length || res.reset) await refresh();
    setTimeout(poll, res.more ? 0 : POLL_MS);
  } catch (err) {
    $('live').classList.add('stale');
    if (err instanceof AuthError) return showError(err);
    setTimeout(poll, POLL_MS * 3);
  }
}

// ---- start -----------------------------------------------------------------

async function start() {
  clearError();
  try {
    const cfg = await config();
    state.endpoint = cfg.endpoint;
    if (cfg.auth && !token.get()) return askToken('');
    await glance();
    $('login').hidden = true;
    $('main').hidden = false;
    $('signout').hidden = !cfg.auth;
    await timeline();
    if (has('events')) {
      fill($('events-note'), 'Polling memory/events every second.');
      if (!state.polling) {
        state.polling = true;
        const head = await rpc('memory/events', {});
        state.cursor = head.cursor;
        setTimeout(poll, POLL_MS);
      }
    } else {
      $('live').hidden = true;
      fill($('events-note'), 'This server does not declare events: reload to see changes.');
    }
    document.body.dataset.ready = 'yes';
  } catch (err) {
    showError(err);
  }
}

fill($('total'), '…');
start();
