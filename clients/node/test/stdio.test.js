// stdio.test.js — the stdio transport against `a2m serve --memory`: describe
// first, ids echoed and matched, notifications interleaved with responses,
// push as an async iterator, timeouts, a dead or hung server, shutdown.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, test } from 'node:test';
import { A2MClient, A2MError, ErrorCode, StdioTransport, TimeoutError, TransportError } from '../index.js';
import { A2M, recordRequests, resume, suspend } from './helpers.js';

let client;
before(async () => {
	client = await A2MClient.stdio(A2M, ['serve', '--memory']);
});
after(() => client?.close());

test('connect sends memory/describe, with the protocol, before anything else', async () => {
	const t = await StdioTransport.spawn(A2M, ['serve', '--memory']);
	const sent = recordRequests(t);
	const c = new A2MClient(t);
	await c.recall('anything');
	assert.deepEqual(sent.map((m) => m.method), ['memory/describe', 'memory/recall']);
	assert.deepEqual(sent[0].params, { protocol: 'a2m/0.1' });
	assert.equal(await c.close(), 0);
});

test('the response id is the request id, string or number, unchanged', async () => {
	const t = client.transport;
	const [a, b, c] = await Promise.all([
		t.request({ jsonrpc: '2.0', id: 'req-7', method: 'memory/timeline', params: { limit: 1 } }),
		t.request({ jsonrpc: '2.0', id: 7, method: 'memory/describe', params: {} }),
		t.request({ jsonrpc: '2.0', id: '7', method: 'memory/forget', params: {} }),
	]);
	assert.equal(a.id, 'req-7');
	assert.ok(Array.isArray(a.result.records));
	// 7 and "7" are two requests in flight at once, each answered on its own.
	assert.equal(b.id, 7);
	assert.equal(b.result.protocol, 'a2m/0.1');
	assert.equal(c.id, '7');
	assert.equal(c.error.code, ErrorCode.INVALID_PARAMS);
});

test('concurrent calls are each answered with their own result', async () => {
	const n = 40;
	await client.remember(Array.from({ length: n }, (_, i) => ({ content: `value number ${i}`, key: `conc/${i}` })));
	const got = await Promise.all(Array.from({ length: n }, (_, i) => client.fetch(`conc/${i}`)));
	got.forEach((r, i) => assert.equal(r.record.content, `value number ${i}`));
});

test('notifications interleaved with a response are tolerated and kept', async () => {
	const sub = await client.subscribe({ kinds: ['written'] });
	const { ids } = await client.remember([{ content: 'one' }, { content: 'two' }, { content: 'three' }]);
	// The server sends each event before the response that caused it, on the
	// same pipe: all three were read while the client awaited the response.
	assert.equal(sub.buffered, 3);
	const seen = [];
	for await (const event of sub) {
		assert.equal(event.kind, 'written');
		assert.equal(typeof event.at, 'string');
		seen.push(event.id);
		if (seen.length === 3) break; // ending the iteration unsubscribes
	}
	assert.deepEqual(seen, ids);
	// Unsubscribed: nothing more is pushed.
	let pushed = 0;
	const stop = client.transport.onNotification(() => pushed++);
	await client.remember([{ content: 'after unsubscribe' }]);
	await client.recall('x');
	stop();
	assert.equal(pushed, 0);
});

test('a subscription with kinds receives only those kinds', async () => {
	const sub = await client.subscribe({ kinds: ['forgotten'] });
	const { ids } = await client.remember([{ content: 'soon gone' }]);
	await client.forget({ ids });
	const { value } = await sub.next();
	assert.equal(value.kind, 'forgotten');
	assert.equal(value.count, 1);
	assert.equal(sub.buffered, 0);
	await sub.close();
});

test('one push subscription at a time per client', async () => {
	const sub = await client.subscribe();
	await assert.rejects(client.subscribe(), /already subscribed/);
	await sub.close();
	const again = await client.subscribe();
	await again.close();
});

test('a call the server does not answer in time fails with TimeoutError, and the client goes on', async () => {
	const c = await A2MClient.stdio(A2M, ['serve', '--memory']);
	await suspend(c.transport.pid);
	try {
		const err = await c.recall('late', { timeout: 200 }).catch((e) => e);
		assert.ok(err instanceof TimeoutError);
		assert.ok(err instanceof TransportError);
		assert.equal(err.timeout, 200);
	} finally {
		resume(c.transport.pid);
	}
	// The late answer is dropped; the next call gets its own.
	const r = await c.remember([{ content: 'still here' }]);
	assert.equal(r.ids.length, 1);
	assert.equal(await c.close(), 0);
});

test('an aborted call rejects with the signal reason', async () => {
	const c = await A2MClient.stdio(A2M, ['serve', '--memory']);
	await suspend(c.transport.pid);
	const ac = new AbortController();
	const p = c.recall('x', { signal: ac.signal });
	ac.abort(new Error('no longer needed'));
	await assert.rejects(p, /no longer needed/);
	resume(c.transport.pid);
	await c.close();
});

test('close() ends the server cleanly: exit status 0, later calls fail', async () => {
	const c = await A2MClient.stdio(A2M, ['serve', '--memory']);
	await c.remember([{ content: 'x' }]);
	assert.equal(await c.close(), 0);
	assert.equal(await c.close(), 0); // twice is fine
	await assert.rejects(c.recall('x'), (e) => e instanceof TransportError && /closed/.test(e.message));
});

test('close() kills a server that does not exit, and fails the calls waiting', async () => {
	const t = await StdioTransport.spawn(A2M, ['serve', '--memory'], { closeTimeout: 100 });
	const c = await A2MClient.connect(t);
	await suspend(t.pid);
	const waiting = c.recall('x', { timeout: 0 }).catch((e) => e);
	const status = await c.close();
	assert.equal(status, null); // ended by a signal
	assert.ok((await waiting) instanceof TransportError);
});

test('a server that dies fails the waiting call with TransportError, not a hang', async () => {
	const c = await A2MClient.stdio(A2M, ['serve', '--memory']);
	await suspend(c.transport.pid);
	const waiting = c.recall('x', { timeout: 0 });
	process.kill(c.transport.pid, 'SIGKILL');
	await assert.rejects(waiting, (e) => e instanceof TransportError && /exited \(signal SIGKILL\)/.test(e.message));
	await assert.rejects(c.describe(), TransportError);
});

test('a server that cannot start is a TransportError carrying its stderr', async () => {
	await assert.rejects(A2MClient.stdio('/nonexistent/a2m', ['serve']), (e) => e instanceof TransportError && /cannot start/.test(e.message));
	await assert.rejects(A2MClient.stdio(A2M, ['serve', '--no-such-flag'], { stderr: 'pipe' }),
		(e) => e instanceof TransportError && /no-such-flag/.test(e.message));
});

test('an error answered with id null goes to the oldest call waiting', async () => {
	const c = await A2MClient.stdio(A2M, ['serve', '--memory', '--max-line', '4096'], { stderr: 'ignore' });
	const err = await c.remember([{ content: 'x'.repeat(10000) }]).catch((e) => e);
	assert.ok(err instanceof A2MError);
	assert.equal(err.code, ErrorCode.INVALID_REQUEST);
	assert.equal(err.data.max_bytes, 4096);
	assert.equal((await c.remember([{ content: 'short' }])).ids.length, 1);
	await c.close();
});

test('a line on stdout that is not JSON fails the transport', async () => {
	const t = await StdioTransport.spawn('sh', ['-c', 'echo this is not json; cat >/dev/null']);
	const err = await t.request({ jsonrpc: '2.0', id: 1, method: 'memory/describe' }).catch((e) => e);
	assert.ok(err instanceof TransportError);
	assert.match(err.message, /not JSON/);
	await t.close();
});

test('an idle client does not keep the Node process alive', async () => {
	// A program that connects and never calls close() still exits, and its
	// server with it (stdin reaches EOF).
	const script = `import { A2MClient } from ${JSON.stringify(new URL('../index.js', import.meta.url).href)};
		const c = await A2MClient.stdio(${JSON.stringify(A2M)}, ['serve', '--memory']);
		await c.remember([{ content: 'x' }]);
		console.log('done', c.transport.pid);`;
	const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
	let out = '';
	child.stdout.on('data', (d) => { out += d; });
	const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
	const code = await new Promise((r) => child.on('exit', (c, s) => r(s ?? c)));
	clearTimeout(killer);
	assert.equal(code, 0);
	assert.match(out, /^done \d+/);
});
