// ui_test.mjs A2M_BINARY — the memory inspector (`a2m serve --http --ui`)
// in a real browser: Debian's chromium, headless, driven by puppeteer-core
// (npm ci installs it). A server is filled through the protocol, the page
// is loaded, and what a person would see is checked: the counts, a search
// result with its score, a write by another client appearing while the
// page is open, a record whose content is HTML shown as its characters,
// forget and promote only after a confirmation; then the security around
// it (the Content-Security-Policy refusing inline script, a foreign Origin
// refused, the token asked for and kept in the tab only). Screenshots go
// to ui-test/ beside the binary. Prints "ok"/"FAIL" per check and
// "N passed, M failed".
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import puppeteer from 'puppeteer-core';
import { check, expect, fail, finish, ok } from './lib.mjs';

const a2m = resolve(process.argv[2] ?? 'build/a2m');
const shots = join(dirname(a2m), 'ui-test');
const dir = mkdtempSync(join(tmpdir(), 'a2m-ui-'));
mkdirSync(shots, { recursive: true });

// The flags the machine needs: no sandbox as root, no GPU, and nothing that
// reaches for the network (which is closed here).
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
  '--no-first-run', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--window-size=1280,900'];
const chromium = ['/usr/lib/chromium/chromium', '/usr/bin/chromium'].find((p) => existsSync(p));

// Starts `a2m serve --http 127.0.0.1:0 ARGS...`; resolves to {url, proc}.
function serve(args) {
  return new Promise((res, rej) => {
    const proc = spawn(a2m, ['serve', '--http', '127.0.0.1:0', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    const timer = setTimeout(() => rej(new Error(`no start-up line: ${log}`)), 20000);
    proc.stderr.on('data', (d) => {
      log += d;
      const m = /listening on (\S+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        res({ url: m[1], proc, log: () => log });
      }
    });
    proc.on('exit', (code) => rej(new Error(`server exited ${code}: ${log}`)));
  });
}

// One JSON-RPC call from another client (node, no Origin: an agent).
async function rpc(url, method, params = {}, tok) {
  const headers = { 'Content-Type': 'application/json' };
  if (tok) headers.Authorization = `Bearer ${tok}`;
  const r = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const msg = await r.json();
  if (msg.error) throw new Error(`${method}: ${msg.error.message}`);
  return msg.result;
}

const HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"><b>bold?</b>';

async function fill(url, tok) {
  await rpc(url, 'memory/remember', { records: [
    { content: 'The lighthouse keeper logs the weather at dawn', session: 'harbour', key: 'notes/lighthouse',
      metadata: { source: 'logbook', tags: ['weather', 'dawn'], nested: { depth: { three: true } } } },
    { content: 'Ships arriving after dusk must signal twice', session: 'harbour', role: 'assistant' },
    { content: HOSTILE, session: 'html', metadata: { note: '<i>also text</i>' } },
    { content: 'Gulls nest on the north breakwater', tier: 'semantic', salience: 3 },
    { content: 'Fog horn test every Tuesday', tier: 'semantic', group: 'maintenance' },
    { content: 'Replace the lens gasket in spring', tier: 'semantic', group: 'maintenance' },
  ] }, tok);
}

// The wait only bounds how long a broken page may hold the run: on a loaded
// machine a sanitizer build answers slowly, and 15 s was seen to run out.
async function waitFor(page, fn, arg, what, timeout = 60000) {
  try {
    await page.waitForFunction(fn, { timeout, polling: 100 }, arg);
    return true;
  } catch (e) {
    fail(what, `timed out: ${e.message.split('\n')[0]}`);
    return false;
  }
}

const texts = (page, sel) => page.$$eval(sel, (els) => els.map((e) => e.textContent));

async function openSuite(browser) {
  const { url, proc } = await serve(['--memory', '--ui']);
  try {
    await fill(url, null);
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const resp = await page.goto(`${url}ui/`, { waitUntil: 'load' });
    expect('the page is served', resp.status(), 200);
    const csp = resp.headers()['content-security-policy'] ?? '';
    check('the page carries a CSP without inline script', /script-src 'self'/.test(csp) && !/unsafe-inline/.test(csp), csp);
    if (!await waitFor(page, () => document.body.dataset.ready === 'yes', null, 'the page starts')) return;

    // ---- the store at a glance ----
    const d = await rpc(url, 'memory/describe');
    const total = d.tiers.reduce((n, t) => n + t.count, 0);
    expect('the total shown is the store\'s', (await texts(page, '#total'))[0], `${total} records`);
    const shown = Object.fromEntries(await page.$$eval('#tiers tbody tr', (rows) =>
      rows.map((r) => [r.dataset.tier, Number(r.querySelector('.count').textContent)])));
    expect('each tier\'s count is shown', shown, Object.fromEntries(d.tiers.map((t) => [t.name, t.count])));
    const sessions = (await texts(page, '#sessions li')).join('|');
    check('the sessions are listed with their records', /harbour 2 records/.test(sessions) && /html 1 record/.test(sessions), sessions);

    // ---- the timeline, newest first ----
    const rows = await texts(page, '#records .record .content');
    expect('the timeline shows every record, newest first', rows[0], 'Replace the lens gasket in spring');
    expect('... and the oldest last', rows[rows.length - 1], 'The lighthouse keeper logs the weather at dawn');

    // ---- HTML in a record is text ----
    check('a record whose content is <script> shows those characters', rows.includes(HOSTILE), JSON.stringify(rows));
    expect('no script, image or bold element came from a record',
      await page.$$eval('#records script, #records img, #records b, #records i', (e) => e.length), 0);
    expect('nothing the record held ran', await page.evaluate(() => window.__pwned ?? null), null);
    await page.screenshot({ path: join(shots, 'timeline.png') });

    // ---- search ----
    await page.type('#q', 'lighthouse weather');
    await page.click('#search-form button');
    if (await waitFor(page, () => document.querySelectorAll('#results .record').length > 0, null, 'a search shows results')) {
      const first = await page.$eval('#results .record', (e) => ({
        content: e.querySelector('.content').textContent, score: e.querySelector('.score')?.textContent ?? '',
        why: e.querySelector('.why').textContent }));
      expect('the best result is the lighthouse note', first.content, 'The lighthouse keeper logs the weather at dawn');
      check('its score is shown', /^score 0\.\d+|^score 1$/.test(first.score), first.score);
      check('why it is where it is: tier, salience, recalls, key', /in working/.test(first.why) &&
        /salience 1/.test(first.why) && /recalled 0×/.test(first.why) && /key notes\/lighthouse rev 0/.test(first.why), first.why);
      const { records } = await rpc(url, 'memory/timeline', { where: { key: 'notes/lighthouse' } });
      expect('searching from the page counted no access (touch: false)', records[0].access_count, 0);
      await page.screenshot({ path: join(shots, 'search.png') });
    }

    // ---- a record's detail ----
    await page.click('#results .record');
    if (await waitFor(page, () => !document.getElementById('detail').hidden &&
      document.querySelector('#detail-body dl'), null, 'a record opens')) {
      const body = await page.$eval('#detail-body', (e) => e.textContent);
      check('the detail shows every field', ['created_at', 'session', 'harbour', 'key', 'notes/lighthouse', 'revision', 'access_count'].every((w) => body.includes(w)), body);
      check('metadata is a tree down to its leaves', await page.$$eval('#detail-body details.tree', (e) => e.length) >= 3 &&
        body.includes('three') && body.includes('"logbook"'), body);
      await page.screenshot({ path: join(shots, 'detail.png') });
    }

    // ---- a write by another client, live ----
    await rpc(url, 'memory/remember', { records: [{ content: 'A live write from another client', session: 'harbour' }] });
    if (await waitFor(page, () => [...document.querySelectorAll('#records .record .content')]
      .some((e) => e.textContent === 'A live write from another client'), null, 'a live write appears in the timeline')) {
      ok('a live write appears in the timeline');
      const events = (await texts(page, '#event-list li')).join('|');
      check('... and in the live changes as written', /wrote/.test(events), events);
      const t2 = (await rpc(url, 'memory/describe')).tiers.reduce((n, t) => n + t.count, 0);
      await waitFor(page, (want) => document.getElementById('total').textContent === want, `${t2} records`, 'the total follows the write');
      expect('the total follows the write', (await texts(page, '#total'))[0], `${t2} records`);
      await page.evaluate(() => { document.getElementById('detail').hidden = true; window.scrollTo(0, 0); });
      await page.screenshot({ path: join(shots, 'live.png') });
    }

    // ---- forget and promote, each only after a confirmation ----
    const { records: gull } = await rpc(url, 'memory/timeline', { where: { content: 'Gulls nest on the north breakwater' } });
    await page.evaluate((id) => document.querySelector(`#records [data-id="${id}"]`).click(), gull[0].id);
    await waitFor(page, (id) => document.getElementById('detail-id').textContent === id && !document.getElementById('forget').disabled, gull[0].id, 'the record to forget opens');
    await page.click('#forget');
    check('forget asks first', await page.$eval('#confirm', (e) => !e.hidden), 'no dialog');
    await page.click('#confirm-no');
    let still = (await rpc(url, 'memory/timeline', { where: { id: gull[0].id } })).records.length;
    expect('cancelled: the record stays', still, 1);
    await page.click('#forget');
    await page.screenshot({ path: join(shots, 'confirm.png') });
    await page.click('#confirm-yes');
    await waitFor(page, () => /Forgotten/.test(document.getElementById('detail-body').textContent), null, 'forget says it is done');
    still = (await rpc(url, 'memory/timeline', { where: { id: gull[0].id } })).records.length;
    expect('confirmed: the record is forgotten', still, 0);

    const { records: ships } = await rpc(url, 'memory/timeline', { where: { role: 'assistant' } });
    await page.evaluate((id) => document.querySelector(`#records [data-id="${id}"]`).click(), ships[0].id);
    await waitFor(page, (id) => document.getElementById('detail-id').textContent === id && !document.getElementById('promote').disabled, ships[0].id, 'the record to promote opens');
    await page.select('#promote-tier', 'semantic');
    await page.click('#promote');
    await page.click('#confirm-yes');
    await waitFor(page, () => /tier\s*semantic/.test(document.getElementById('detail-body').textContent), null, 'the promoted record shows its new tier');
    const moved = (await rpc(url, 'memory/timeline', { where: { id: ships[0].id } })).records[0];
    expect('confirmed: the record is promoted', moved.tier, 'semantic');

    // ---- what the page may not do ----
    const inline = await page.evaluate(() => {
      const s = document.createElement('script');
      s.textContent = 'window.__inline = 1';
      document.body.append(s);
      return window.__inline ?? null;
    });
    expect('an inline script is refused by the CSP', inline, null);
    const foreign = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', Origin: 'http://evil.example' },
      body: '{"jsonrpc":"2.0","id":1,"method":"memory/describe"}' });
    expect('a foreign Origin is refused', foreign.status, 403);
    const own = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', Origin: new URL(url).origin },
      body: '{"jsonrpc":"2.0","id":1,"method":"memory/describe"}' });
    expect('the page\'s own Origin is accepted', own.status, 200);
    expect('no script error on the page', errors, []);
    await page.close();
  } finally {
    proc.kill('SIGTERM');
  }
}

async function tokenSuite(browser) {
  const tokens = join(dir, 'tokens');
  writeFileSync(tokens, 'ui-secret-token inspector\n');
  const { url, proc } = await serve(['--memory', '--ui', '--tokens', tokens]);
  try {
    await fill(url, 'ui-secret-token');
    const ctx = await browser.createBrowserContext();
    const page = await ctx.newPage();
    await page.goto(`${url}ui/`, { waitUntil: 'load' });
    await waitFor(page, () => !document.getElementById('login').hidden, null, 'with --tokens the page asks for a token');
    check('with --tokens the page asks for a token, and shows nothing else', await page.$eval('#main', (e) => e.hidden), 'main shown');
    await page.type('#token', 'not-the-token');
    await page.click('#login-form button');
    await waitFor(page, () => !document.getElementById('login-error').hidden, null, 'a wrong token is refused');
    check('a wrong token is refused', await page.$eval('#main', (e) => e.hidden), 'main shown');
    await page.type('#token', 'ui-secret-token');
    await page.click('#login-form button');
    if (await waitFor(page, () => document.body.dataset.ready === 'yes', null, 'the right token opens the inspector')) {
      expect('the right token opens it', (await texts(page, '#total'))[0], '6 records');
      const kept = await page.evaluate(() => ({ session: Object.keys(sessionStorage), local: Object.keys(localStorage), cookie: document.cookie }));
      expect('the token is kept for this tab only', kept, { session: ['a2m-inspector-token'], local: [], cookie: '' });
      await page.screenshot({ path: join(shots, 'token.png') });
    }
    // Another tab starts without it.
    const other = await ctx.newPage();
    await other.goto(`${url}ui/`, { waitUntil: 'load' });
    await waitFor(other, () => !document.getElementById('login').hidden, null, 'another tab asks again');
    ok('another tab asks again');
    const bare = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: '{"jsonrpc":"2.0","id":1,"method":"memory/describe"}' });
    expect('the endpoint still wants the token', bare.status, 401);
    await ctx.close();
  } finally {
    proc.kill('SIGTERM');
  }
}

async function withoutUi() {
  const { url, proc } = await serve(['--memory']);
  try {
    const r = await fetch(`${url}ui/`);
    expect('without --ui there is no page', r.status, 404);
    const o = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', Origin: new URL(url).origin },
      body: '{"jsonrpc":"2.0","id":1,"method":"memory/describe"}' });
    expect('without --ui its own Origin is refused as any other', o.status, 403);
  } finally {
    proc.kill('SIGTERM');
  }
}

let browser;
try {
  if (!chromium) throw new Error('chromium is not installed (scripts/deps.sh test)');
  await withoutUi();
  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    defaultViewport: { width: 1280, height: 860 },
    args: CHROMIUM_FLAGS,
    userDataDir: mkdtempSync(join(dir, 'profile-')),
  });
  await openSuite(browser);
  await tokenSuite(browser);
} catch (e) {
  fail('the browser suite ran', e.stack ?? String(e));
} finally {
  if (browser) await browser.close();
  rmSync(dir, { recursive: true, force: true });
}
console.log(`screenshots in ${shots}`);
finish();
