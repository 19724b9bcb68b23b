// methods.test.js — every method of the spec through the client, against a
// fresh `a2m serve --memory` each: results as the spec shapes them, errors
// typed with their code and data, timestamps kept as RFC 3339 strings, and
// fields the client does not know kept as they came.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { A2MClient, A2MError, ErrorCode, errorName } from '../index.js';
import { A2M, RFC3339 } from './helpers.js';

async function withClient(fn, args = []) {
	const c = await A2MClient.stdio(A2M, ['serve', '--memory', ...args]);
	try {
		await fn(c);
	} finally {
		await c.close();
	}
}

// Runs fn, which must throw an A2MError, and returns it.
async function a2mError(fn) {
	const err = await fn().then(() => null, (e) => e);
	assert.ok(err instanceof A2MError, `expected an A2MError, got ${err}`);
	return err;
}

test('describe: the result as sent, unknown fields included', () => withClient(async (c) => {
	const d = c.description;
	assert.equal(d.protocol, 'a2m/0.1');
	assert.ok(d.capabilities.includes('core'));
	assert.ok(d.methods.includes('memory/summarize'));
	assert.equal(d.events.push, true);
	assert.equal(c.canPush, true);
	// `scorer` is not in the spec: kept, not dropped.
	assert.equal(typeof d.scorer, 'object');
	assert.deepEqual(d.tiers.map((t) => t.kind), ['working', 'episodic', 'semantic', 'procedural']);
	assert.equal(c.supports('keys'), true);
	assert.equal(c.supports('no-such-capability'), false);
}));

test('remember: ids in order; a client-supplied id makes the write idempotent', () => withClient(async (c) => {
	const r = await c.remember([{ content: 'first' }, { content: 'second', id: 'my-id-1' }]);
	assert.equal(r.ids.length, 2);
	assert.equal(typeof r.ids[0], 'string');
	assert.equal(r.ids[1], 'my-id-1');
	const again = await c.remember({ records: [{ content: 'second, again', id: 'my-id-1' }] });
	assert.deepEqual(again.ids, ['my-id-1']);
	assert.equal((await c.timeline()).records.length, 2);
}));

test('records: metadata round-trips, timestamps stay RFC 3339 strings', () => withClient(async (c) => {
	const metadata = { source: 'chat', nested: { n: 1.5, list: [1, 'two', null, true] } };
	await c.remember([{ content: 'the deploy key rotates every 90 days', role: 'user', metadata }]);
	const [rec] = (await c.recall('deploy key rotation')).records;
	assert.deepEqual(rec.metadata, metadata);
	assert.equal(rec.role, 'user');
	assert.equal(typeof rec.created_at, 'string');
	assert.match(rec.created_at, RFC3339);
	assert.match(rec.accessed_at, RFC3339);
	assert.equal(typeof rec.score, 'number');
}));

test('recall: descending score, limit, where, and prompt alongside the records', () => withClient(async (c) => {
	await c.remember([
		{ content: 'cats purr when content', metadata: { animal: 'cat' } },
		{ content: 'cats and dogs and cats again', metadata: { animal: 'both' } },
		{ content: 'dogs bark at the mail carrier', metadata: { animal: 'dog' } },
	]);
	const all = (await c.recall({ query: 'cats', limit: 10 })).records;
	assert.ok(all.length >= 2);
	for (let i = 1; i < all.length; i++) assert.ok(all[i - 1].score >= all[i].score);
	assert.equal((await c.recall({ query: 'cats', limit: 1 })).records.length, 1);
	const dogs = (await c.recall({ query: 'dogs', where: { animal: ['dog'] } })).records;
	assert.deepEqual(dogs.map((r) => r.metadata.animal), ['dog']);
	const withPrompt = await c.recall({ query: 'dogs', prompt: { style: 'facts' } });
	assert.equal(typeof withPrompt.prompt, 'string');
	assert.ok(withPrompt.prompt.includes('dogs bark'));
	assert.ok(withPrompt.prompt_ids.every((id) => withPrompt.records.some((r) => r.id === id)));
	assert.equal('prompt' in (await c.recall('dogs')), false);
}));

test('timeline: ascending, limit takes the newest, where replays one session, prompt', () => withClient(async (c) => {
	for (const content of ['t1', 't2', 't3', 't4']) await c.remember([{ content, session: content === 't3' ? 'other' : 'main' }]);
	const last2 = (await c.timeline({ limit: 2 })).records;
	assert.deepEqual(last2.map((r) => r.content), ['t3', 't4']);
	const main = (await c.timeline({ where: { session: 'main' } })).records;
	assert.deepEqual(main.map((r) => r.content), ['t1', 't2', 't4']);
	const t = await c.timeline({ where: { session: 'main' }, prompt: { style: 'transcript' } });
	assert.equal(typeof t.prompt, 'string');
	assert.equal(t.prompt_ids.length, 3);
}));

test('forget: a count; no selector is INVALID_PARAMS from the server', () => withClient(async (c) => {
	const { ids } = await c.remember([{ content: 'a' }, { content: 'b' }]);
	assert.deepEqual(await c.forget({ ids: [ids[0]] }), { forgotten: 1 });
	const err = await a2mError(() => c.forget({}));
	assert.equal(err.code, ErrorCode.INVALID_PARAMS);
	assert.equal(err.codeName, 'INVALID_PARAMS');
	assert.equal(err.method, 'memory/forget');
}));

test('promote, consolidate, reinforce (tiers, salience)', () => withClient(async (c) => {
	const { ids } = await c.remember([{ content: 'worth keeping' }]);
	assert.deepEqual(await c.promote({ ids, tier: 'semantic' }), { promoted: 1 });
	const err = await a2mError(() => c.promote({ ids, tier: 'no-such-tier' }));
	assert.equal(err.code, ErrorCode.UNKNOWN_TIER);
	const cons = await c.consolidate();
	for (const k of ['moved', 'promoted', 'dropped', 'summarized']) assert.equal(typeof cons[k], 'number');
	assert.equal(cons.counts.semantic, 1);
	assert.deepEqual(await c.reinforce({ ids, amount: 2 }), { reinforced: 1 });
	const [rec] = (await c.timeline()).records;
	assert.equal(rec.tier, 'semantic');
	assert.ok(rec.salience > 1);
}));

test('fetch: a key replaced keeps its id and advances revision; an unused key is null', () => withClient(async (c) => {
	const first = await c.remember([{ content: 'Paris', key: 'user/city' }]);
	const second = await c.remember([{ content: 'Lyon', key: 'user/city' }]);
	assert.deepEqual(second.ids, first.ids);
	const { record } = await c.fetch('user/city');
	assert.equal(record.content, 'Lyon');
	assert.equal(record.revision, 1);
	assert.deepEqual(await c.fetch({ key: 'user/unknown' }), { record: null });
	const err = await a2mError(() => c.fetch({ key: '' }));
	assert.equal(err.code, ErrorCode.INVALID_PARAMS);
}));

test('session list and close', () => withClient(async (c) => {
	await c.remember([{ content: 'hello', session: 'chat-1' }, { content: 'hi back', session: 'chat-1' }]);
	const { sessions } = await c.sessionList();
	assert.equal(sessions.length, 1);
	assert.equal(sessions[0].session, 'chat-1');
	assert.equal(sessions[0].records, 2);
	const closed = await c.sessionClose('chat-1');
	assert.equal(closed.closed, 'chat-1');
	assert.equal(closed.flushed, 2);
	assert.equal(typeof closed.counts, 'object');
	const missing = await c.sessionClose({ session: 'never-opened' });
	assert.equal(missing.flushed, 0);
}));

test('events: a poll from now, then every event once, in order', () => withClient(async (c) => {
	const head = await c.events();
	assert.deepEqual(head.events, []);
	assert.equal(typeof head.cursor, 'string');
	const { ids } = await c.remember([{ content: 'e1' }, { content: 'e2' }]);
	await c.forget({ ids: [ids[0]] });
	const page = await c.events({ cursor: head.cursor });
	assert.deepEqual(page.events.map((e) => e.kind), ['written', 'written', 'forgotten']);
	assert.deepEqual(page.events.slice(0, 2).map((e) => e.id), ids);
	for (const e of page.events) assert.match(e.at, RFC3339);
	assert.deepEqual((await c.events({ cursor: page.cursor })).events, []);
}));

test('watch: polling as an async iterator, resuming from its cursor', () => withClient(async (c) => {
	const watch = c.watch({ interval: 20 });
	const it = watch[Symbol.asyncIterator]();
	const first = it.next();
	await new Promise((r) => setTimeout(r, 50));
	const { ids } = await c.remember([{ content: 'w1' }, { content: 'w2' }]);
	assert.equal((await first).value.id, ids[0]);
	assert.equal((await it.next()).value.id, ids[1]);
	const cursor = watch.cursor;
	watch.close();
	assert.equal((await it.next()).done, true);
	// A new watch from the kept cursor sees only what came after.
	const more = await c.remember([{ content: 'w3' }]);
	const resumed = c.watch({ cursor, interval: 20 });
	for await (const e of resumed) {
		assert.equal(e.id, more.ids[0]);
		break;
	}
}));

test('watch: a cursor from another server is reset, and onReset is told', async () => {
	const other = await A2MClient.stdio(A2M, ['serve', '--memory']);
	const foreign = (await other.events()).cursor;
	await other.close();
	await withClient(async (c) => {
		await c.remember([{ content: 'r1' }]);
		let resets = 0;
		const watch = c.watch({ cursor: foreign, interval: 20, onReset: (reply) => { resets += reply.reset ? 1 : 0; } });
		for await (const e of watch) {
			assert.equal(e.kind, 'written');
			break;
		}
		assert.equal(resets, 1);
	});
});

test('summarize: records, read, written; the sources stay', () => withClient(async (c) => {
	await c.remember([
		{ content: 'The deploy key rotates every 90 days.', metadata: { topic: 'ops' } },
		{ content: 'Rotation of the deploy key is automated by the vault.', metadata: { topic: 'ops' } },
	]);
	const r = await c.summarize({ where: { topic: 'ops' }, into: 'semantic' });
	assert.equal(typeof r.read, 'number');
	assert.equal(r.written, r.records.length);
	assert.equal((await c.timeline({ where: { topic: 'ops' } })).records.length, 2);
	const err = await a2mError(() => c.summarize({}));
	assert.equal(err.code, ErrorCode.INVALID_PARAMS);
}));

test('errors carry the server data: EMBEDDING_MISMATCH with widths', () => withClient(async (c) => {
	await c.remember([{ content: 'v', embedding: [1, 0, 0] }]);
	const err = await a2mError(() => c.remember([{ content: 'w', embedding: [1, 0] }]));
	assert.equal(err.code, ErrorCode.EMBEDDING_MISMATCH);
	assert.equal(errorName(err.code), 'EMBEDDING_MISMATCH');
	assert.deepEqual(err.data, { expected: 3, got: 2 });
	assert.equal(typeof err.message, 'string');
}));

test('a field of an undeclared capability is refused by the server with its data', () => withClient(async (c) => {
	const err = await a2mError(() => c.remember([{ content: 'x', tier: 'semantic' }]));
	assert.equal(err.code, ErrorCode.CAPABILITY_NOT_SUPPORTED);
	assert.deepEqual(err.data, { capability: 'tiers' });
}, ['--capabilities', 'core']));

test('record and result fields the client does not know are kept as they came', async () => {
	// The real server, with every record given a field a later version
	// might add (and one result field), as a 0.2 server would send them.
	const script = '"$0" serve --memory | sed -u -e \'s/"content":/"x_future":{"n":1,"tags":["a"]},"content":/g\' ' +
		'-e \'s/"result":{"records":/"result":{"x_page":2,"records":/\'';
	const c = await A2MClient.stdio('sh', ['-c', script, A2M]);
	try {
		await c.remember([{ content: 'tolerant' }]);
		const r = await c.recall('tolerant');
		assert.equal(r.x_page, 2);
		assert.equal(r.records[0].content, 'tolerant');
		assert.deepEqual(r.records[0].x_future, { n: 1, tags: ['a'] });
		const t = await c.timeline();
		assert.deepEqual(t.records[0].x_future, { n: 1, tags: ['a'] });
	} finally {
		await c.close();
	}
});
