// http.test.js — the HTTP transport against `a2m serve --http`: plain, with
// bearer tokens, read-only, core-only; kept-alive connections; the headers
// sent; push refused and polling instead; statuses as TransportError.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { A2MClient, A2MError, ErrorCode, HttpTransport, TimeoutError, TransportError } from '../index.js';
import { A2M, RFC3339, recordRequests, resume, startHttp, suspend, tempDir, tokenFile } from './helpers.js';

const dir = tempDir();
const servers = {};
before(async () => {
	// The read-only server serves a file written beforehand over stdio.
	const db = join(dir, 'ro.db');
	const writer = await A2MClient.stdio(A2M, ['serve', '--db', db]);
	await writer.remember([{ content: 'a fact loaded before the store turned read-only', key: 'ro/fact' }]);
	await writer.close();
	const tokens = tokenFile(dir, [['token-alice', 'alice'], ['token-bob', 'bob']]);
	[servers.plain, servers.tokens, servers.readOnly, servers.core, servers.idle] = await Promise.all([
		startHttp(['--memory']),
		startHttp(['--memory', '--tokens', tokens]),
		startHttp(['--db', db, '--read-only']),
		startHttp(['--memory', '--capabilities', 'core']),
		startHttp(['--memory', '--timeout', '1']),
	]);
});
after(async () => {
	for (const s of Object.values(servers)) assert.equal(await s.stop(), 0);
});

test('the methods over HTTP: remember, recall, timeline, fetch, forget', async () => {
	const c = await A2MClient.http(servers.plain.url);
	const { ids } = await c.remember([{ content: 'over http we go', key: 'h/1', metadata: { via: 'http' } }]);
	const [rec] = (await c.recall('over http')).records;
	assert.equal(rec.id, ids[0]);
	assert.deepEqual(rec.metadata, { via: 'http' });
	assert.match(rec.created_at, RFC3339);
	assert.equal((await c.fetch('h/1')).record.content, 'over http we go');
	assert.equal((await c.timeline({ limit: 1 })).records[0].id, ids[0]);
	assert.deepEqual(await c.forget({ ids }), { forgotten: 1 });
	await c.close();
});

test('describe over HTTP reports push false; subscribe is refused without being sent', async () => {
	const c = await A2MClient.http(servers.plain.url);
	assert.equal(c.description.events.push, false);
	assert.equal(c.canPush, false);
	const sent = recordRequests(c.transport);
	for (const call of [() => c.subscribe(), () => c.eventsSubscribe()]) {
		const err = await call().catch((e) => e);
		assert.ok(err instanceof A2MError);
		assert.equal(err.code, ErrorCode.CAPABILITY_NOT_SUPPORTED);
		assert.deepEqual(err.data, { capability: 'events', push: false });
	}
	assert.equal(sent.length, 0);
	// The server says the same when asked anyway (§8.3).
	const raw = await c.transport.request({ jsonrpc: '2.0', id: 'sub', method: 'memory/events/subscribe', params: {} });
	assert.equal(raw.id, 'sub');
	assert.equal(raw.error.code, ErrorCode.CAPABILITY_NOT_SUPPORTED);
	await c.close();
});

test('watch polls memory/events over HTTP', async () => {
	const c = await A2MClient.http(servers.plain.url);
	const watch = c.watch({ interval: 20, kinds: ['written'] });
	const it = watch[Symbol.asyncIterator]();
	const next = it.next();
	await new Promise((r) => setTimeout(r, 50));
	const { ids } = await c.remember([{ content: 'watched over http' }]);
	const { value } = await next;
	assert.equal(value.kind, 'written');
	assert.equal(value.id, ids[0]);
	watch.close();
	await c.close();
});

test('one kept-alive connection carries every call', async () => {
	const c = await A2MClient.http(servers.plain.url);
	for (let i = 0; i < 20; i++) await c.recall(`query ${i}`);
	assert.equal(c.transport.connections, 1);
	await c.close();
});

test('concurrent calls over HTTP each get their own answer', async () => {
	const c = await A2MClient.http(servers.plain.url);
	await c.remember(Array.from({ length: 32 }, (_, i) => ({ content: `pooled value ${i}`, key: `pool/${i}` })));
	const got = await Promise.all(Array.from({ length: 32 }, (_, i) => c.fetch(`pool/${i}`)));
	got.forEach((r, i) => assert.equal(r.record.content, `pooled value ${i}`));
	assert.ok(c.transport.connections >= 1 && c.transport.connections <= 16);
	await c.close();
});

test('a connection the server closed while idle is replaced for a read', async () => {
	const c = await A2MClient.http(servers.idle.url);
	await c.recall('before');
	await new Promise((r) => setTimeout(r, 1500)); // past the server's --timeout 1
	assert.ok(Array.isArray((await c.recall('after')).records));
	assert.ok(Array.isArray((await c.timeline()).records));
	await c.close();
});

test('the id of a response is the id of its request', async () => {
	const t = new HttpTransport(servers.plain.url);
	for (const id of ['abc', 42, 'x'.repeat(100)]) {
		const r = await t.request({ jsonrpc: '2.0', id, method: 'memory/describe', params: {} });
		assert.equal(r.id, id);
	}
	await t.close();
});

test('tokens: the bearer token is the caller; no token or a wrong one is a 401 TransportError', async () => {
	const c = await A2MClient.http(servers.tokens.url, { token: 'token-alice' });
	assert.ok(c.supports('scopes'));
	const { ids } = await c.remember([{ content: 'alice writes this' }]);
	const [rec] = (await c.recall('alice writes')).records;
	assert.equal(rec.id, ids[0]);
	assert.equal(rec.owner, 'alice');
	// Another owner than the principal is refused (docs/HTTP.md).
	const err = await c.recall({ query: 'x', owner: 'bob' }).catch((e) => e);
	assert.ok(err instanceof A2MError);
	assert.equal(err.code, ErrorCode.SCOPE_DENIED);
	await c.close();
	const bob = await A2MClient.http(servers.tokens.url, { token: 'token-bob' });
	assert.deepEqual((await bob.recall('alice writes')).records.filter((r) => r.owner === 'alice' && r.tier === 'working'), []);
	await bob.close();
	for (const options of [{}, { token: 'not-a-token' }]) {
		const e = await A2MClient.http(servers.tokens.url, options).catch((x) => x);
		assert.ok(e instanceof TransportError);
		assert.ok(!(e instanceof A2MError));
		assert.equal(e.status, 401);
	}
});

test('read-only: remember and forget are READ_ONLY errors, sent once, never retried', async () => {
	const c = await A2MClient.http(servers.readOnly.url);
	const sent = recordRequests(c.transport);
	// Ids on every record make the write safe to repeat: it is still sent once.
	for (const call of [() => c.remember([{ content: 'refused', id: 'r-1' }]), () => c.forget({ ids: ['x'] })]) {
		const err = await call().catch((e) => e);
		assert.ok(err instanceof A2MError, `got ${err}`);
		assert.equal(err.code, ErrorCode.READ_ONLY);
		assert.equal(err.codeName, 'READ_ONLY');
	}
	assert.deepEqual(sent.map((m) => m.method), ['memory/remember', 'memory/forget']);
	// Reads work as usual (§2.1), and so does the connection.
	const [rec] = (await c.recall('fact loaded')).records;
	assert.equal(rec.key, 'ro/fact');
	assert.equal((await c.timeline()).records.length, 1);
	await c.close();
});

test('core only: every method of an undeclared capability is refused here, unsent, with -32003', async () => {
	const c = await A2MClient.http(servers.core.url);
	assert.deepEqual(c.capabilities, ['core']);
	const sent = recordRequests(c.transport);
	const calls = {
		tiers: [() => c.promote({ ids: ['x'], tier: 'semantic' }), () => c.consolidate()],
		salience: [() => c.reinforce({ ids: ['x'] })],
		keys: [() => c.fetch('k')],
		sessions: [() => c.sessionList(), () => c.sessionClose('s')],
		events: [() => c.events(), () => c.eventsSubscribe(), () => c.eventsUnsubscribe(), () => c.subscribe()],
		summarize: [() => c.summarize({ query: 'x' })],
	};
	for (const [capability, fns] of Object.entries(calls)) {
		for (const fn of fns) {
			const err = await fn().catch((e) => e);
			assert.ok(err instanceof A2MError, `${capability}: ${err}`);
			assert.equal(err.code, ErrorCode.CAPABILITY_NOT_SUPPORTED);
			assert.deepEqual(err.data, { capability });
		}
	}
	assert.throws(() => c.watch(), (e) => e.code === ErrorCode.CAPABILITY_NOT_SUPPORTED);
	assert.equal(sent.length, 0);
	// The core methods go through.
	const { ids } = await c.remember([{ content: 'core only' }]);
	assert.equal((await c.recall('core')).records[0].id, ids[0]);
	assert.deepEqual(await c.forget({ ids }), { forgotten: 1 });
	assert.deepEqual(sent.map((m) => m.method), ['memory/remember', 'memory/recall', 'memory/forget']);
	await c.close();
});

test('a version the server does not speak is PROTOCOL_NOT_SUPPORTED (400 with -32007)', async () => {
	const err = await A2MClient.http(servers.plain.url, { protocol: 'a2m/0.9' }).catch((e) => e);
	assert.ok(err instanceof A2MError);
	assert.equal(err.code, ErrorCode.PROTOCOL_NOT_SUPPORTED);
	assert.deepEqual(err.data, { supported: ['a2m/0.1'] });
});

test('a server that does not answer in time is a TimeoutError', async () => {
	const s = await startHttp(['--memory']);
	const c = await A2MClient.http(s.url);
	try {
		// The real server, stopped: connections stay open, nothing is answered.
		await suspend(s.pid);
		try {
			const err = await c.recall('x', { timeout: 200 }).catch((e) => e);
			assert.ok(err instanceof TimeoutError, `got ${JSON.stringify(err)}`);
		} finally {
			resume(s.pid);
		}
		assert.ok(Array.isArray((await c.recall('x')).records));
	} finally {
		await c.close();
		assert.equal(await s.stop(), 0);
	}
});

test('what is sent: POST, JSON, the version header, the token, and never Origin', async () => {
	const seen = [];
	const fake = http.createServer((req, res) => {
		let body = '';
		req.on('data', (d) => { body += d; });
		req.on('end', () => {
			seen.push({ method: req.method, headers: req.headers, body: JSON.parse(body) });
			const id = JSON.parse(body).id;
			res.setHeader('content-type', 'application/json');
			res.end(JSON.stringify({
				jsonrpc: '2.0', id: seen.length === 2 ? 'not-the-id' : id,
				result: { protocol: 'a2m/0.1', name: 'header-check', capabilities: ['core'], methods: [] },
			}));
		});
	});
	await new Promise((r) => fake.listen(0, '127.0.0.1', r));
	try {
		const c = await A2MClient.http(`http://127.0.0.1:${fake.address().port}/`, { token: 'tok-1' });
		const h = seen[0].headers;
		assert.equal(seen[0].method, 'POST');
		assert.equal(h['content-type'], 'application/json');
		assert.equal(h['a2m-protocol-version'], 'a2m/0.1');
		assert.equal(h.authorization, 'Bearer tok-1');
		assert.equal(h.origin, undefined);
		assert.equal(seen[0].body.jsonrpc, '2.0');
		assert.deepEqual(seen[0].body.params, { protocol: 'a2m/0.1' });
		// A response bound to another id is not this call's answer.
		const err = await c.recall('x').catch((e) => e);
		assert.ok(err instanceof TransportError);
		assert.match(err.message, /id/);
		await c.close();
		assert.throws(() => new HttpTransport('http://127.0.0.1:1/', { headers: { Origin: 'http://evil' } }), TypeError);
	} finally {
		fake.close();
	}
});

test('a request reset on a reused connection is sent again only when it is safe to repeat', async () => {
	// A server that answers the first request of each connection and resets
	// the connection on the second, before answering: what a kept-alive
	// connection closing under a request looks like.
	const got = [];
	const fake = http.createServer((req, res) => {
		let body = '';
		req.on('data', (d) => { body += d; });
		req.on('end', () => {
			const msg = JSON.parse(body);
			got.push(msg.method);
			req.socket.served = (req.socket.served ?? 0) + 1;
			if (req.socket.served > 1) {
				req.socket.resetAndDestroy();
				return;
			}
			res.setHeader('content-type', 'application/json');
			const result = msg.method === 'memory/describe'
				? { protocol: 'a2m/0.1', name: 'reset', capabilities: ['core'], methods: [] }
				: msg.method === 'memory/remember' ? { ids: ['a'] } : { records: [] };
			res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
		});
	});
	await new Promise((r) => fake.listen(0, '127.0.0.1', r));
	try {
		const c = await A2MClient.http(`http://127.0.0.1:${fake.address().port}/`);
		// A read: reset on the reused connection, sent again on a new one.
		assert.deepEqual(await c.recall('x'), { records: [] });
		// A remember without ids: reset, and not sent again.
		const err = await c.remember([{ content: 'no id' }]).catch((e) => e);
		assert.ok(err instanceof TransportError, `got ${err}`);
		// With an id on every record it is idempotent (§3.2): sent again.
		await c.recall('on a new connection');
		assert.deepEqual(await c.remember([{ content: 'with id', id: 'a' }]), { ids: ['a'] });
		assert.deepEqual(got, ['memory/describe', 'memory/recall', 'memory/recall', 'memory/remember',
			'memory/recall', 'memory/remember', 'memory/remember']);
		await c.close();
	} finally {
		fake.close();
	}
});

test('HTTPS with a certificate the client is told to trust, and a bearer token', async () => {
	const key = join(dir, 'key.pem');
	const cert = join(dir, 'cert.pem');
	const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost',
		'-days', '1', '-keyout', key, '-out', cert], { stdio: 'ignore' });
	assert.equal(made.status, 0, 'openssl could not make a certificate');
	const tokens = tokenFile(dir, [['tls-token', 'carol']]);
	const s = await startHttp(['--memory', '--tokens', tokens, '--tls-cert', cert, '--tls-key', key]);
	// The certificate names localhost, not the address.
	const url = s.url.replace('http://127.0.0.1', 'https://localhost').replace('https://127.0.0.1', 'https://localhost');
	try {
		const c = await A2MClient.http(url, { token: 'tls-token', ca: readFileSync(cert) });
		const { ids } = await c.remember([{ content: 'over TLS' }]);
		assert.equal((await c.recall('TLS')).records[0].id, ids[0]);
		assert.equal((await c.recall('TLS')).records[0].owner, 'carol');
		await c.close();
		// Without the certificate the connection is refused, as a TransportError.
		const err = await A2MClient.http(url, { token: 'tls-token' }).catch((e) => e);
		assert.ok(err instanceof TransportError && !(err instanceof A2MError), `got ${err}`);
	} finally {
		assert.equal(await s.stop(), 0);
	}
});
