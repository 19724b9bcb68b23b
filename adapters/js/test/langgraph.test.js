// A2MStore (adapters/js/langgraph) against the real server and LangGraph's
// real package: BaseStore's operations, namespaces as keys, filters, vectors
// of the caller's own, and compiled graphs whose nodes remember and recall
// through the store.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { SyntheticEmbeddings } from '@langchain/core/utils/testing';
import { A2MClient, A2MError, ErrorCode } from 'a2m-client';
import { A2MStore } from '../langgraph/index.js';
import { startHttp, tempDir, withMemory } from './helpers.js';

test('put and get round-trip as a keyed semantic record', () => withMemory(async (m) => {
	const store = new A2MStore(m);
	await store.put(['users', 'alice'], 'city', { text: 'Alice moved to Lisbon', n: 2, nested: { a: [1, null] } });
	const { record } = await m.fetch('users/alice/city');
	// Without index fields the content is the whole value (LangGraph's "$").
	assert.equal(record.content, '{"n":2,"nested":{"a":[1,null]},"text":"Alice moved to Lisbon"}');
	assert.equal(record.tier, 'semantic');
	assert.equal(record.revision, 0);
	assert.equal(record.metadata.text, 'Alice moved to Lisbon');
	const item = await store.get(['users', 'alice'], 'city');
	assert.deepEqual([item.namespace, item.key], [['users', 'alice'], 'city']);
	assert.deepEqual(item.value, { text: 'Alice moved to Lisbon', n: 2, nested: { a: [1, null] } });
	assert.ok(item.createdAt instanceof Date && item.updatedAt instanceof Date);
	assert.equal(await store.get(['users', 'alice'], 'country'), null);
	assert.equal(await store.get(['users'], 'alice'), null);
}));

test('put replaces the item in place, delete removes only that item', () => withMemory(async (m) => {
	const store = new A2MStore(m);
	await store.put(['prefs'], 'lang', { v: 'fr' });
	const first = (await m.fetch('prefs/lang')).record;
	await store.put(['prefs'], 'lang', { v: 'pt' });
	const second = (await m.fetch('prefs/lang')).record;
	assert.equal(second.id, first.id);
	assert.equal(second.revision, 1);
	assert.deepEqual((await store.get(['prefs'], 'lang')).value, { v: 'pt' });
	assert.equal((await store.search(['prefs'])).length, 1);
	await store.put(['prefs'], 'lang2', { v: 'de' }); // "prefs/lang" is a byte prefix of "prefs/lang2"
	await store.delete(['prefs'], 'lang');
	assert.equal(await store.get(['prefs'], 'lang'), null);
	assert.deepEqual((await store.get(['prefs'], 'lang2')).value, { v: 'de' });
	await store.delete(['prefs'], 'missing'); // not an error
}));

test('labels with slashes do not split', () => withMemory(async (m) => {
	const store = new A2MStore(m);
	await store.put(['docs/v1', 'x%y'], 'a/b', { v: 1 });
	assert.ok((await m.fetch('docs%2Fv1/x%25y/a%2Fb')).record);
	const item = await store.get(['docs/v1', 'x%y'], 'a/b');
	assert.deepEqual([item.namespace, item.key, item.value], [['docs/v1', 'x%y'], 'a/b', { v: 1 }]);
	assert.deepEqual(await store.listNamespaces(), [['docs/v1', 'x%y']]);
}));

test('search by query, filter and namespace prefix', () => withMemory(async (m) => {
	const store = new A2MStore(m, { index: { fields: ['text'] } });
	await store.put(['team', 'facts'], '1', { text: 'the deploy key rotates every 90 days', kind: 'ops', score: 5 });
	await store.put(['team', 'facts'], '2', { text: 'lunch is at noon on fridays', kind: 'life', score: 1 });
	await store.put(['team', 'notes'], '3', { text: 'the deploy window is tuesday', kind: 'ops', score: 3 });
	await store.put(['other'], '4', { text: 'deploy scripts live in ops/', kind: 'ops', score: 9 });
	const keys = (items) => items.map((i) => i.key);
	const set = (items) => keys(items).sort();

	const hits = await store.search(['team'], { query: 'deploy key' });
	assert.equal(hits[0].key, '1');
	assert.ok(hits.every((h) => ['1', '2', '3'].includes(h.key) && typeof h.score === 'number'));
	assert.deepEqual(set(await store.search(['team', 'facts'])), ['1', '2']);
	assert.deepEqual(set(await store.search([], { filter: { kind: 'ops' } })), ['1', '3', '4']);
	assert.deepEqual(set(await store.search(['team'], { filter: { kind: 'ops' } })), ['1', '3']);
	// Operators are applied here, after the server's equality filter.
	assert.deepEqual(set(await store.search([], { filter: { score: { $gte: 3 }, kind: 'ops' } })), ['1', '3', '4']);
	assert.deepEqual(set(await store.search([], { filter: { score: { $lt: 3 } } })), ['2']);
	assert.deepEqual(set(await store.search([], { filter: { kind: { $ne: 'ops' } } })), ['2']);
	// Without a query: newest first, with offset and limit.
	assert.deepEqual(keys(await store.search([])), ['4', '3', '2', '1']);
	assert.deepEqual(keys(await store.search([], { limit: 2, offset: 1 })), ['3', '2']);
}));

test('a filter on a record field name tests the value, not the field', () => withMemory(async (m) => {
	const store = new A2MStore(m);
	await store.put(['m'], '1', { role: 'admin', tier: 'gold' });
	await store.put(['m'], '2', { role: 'guest', tier: 'gold' });
	assert.deepEqual((await store.search(['m'], { filter: { role: 'admin' } })).map((h) => h.key), ['1']);
	assert.deepEqual((await store.search(['m'], { filter: { tier: 'gold' } })).map((h) => h.key).sort(), ['1', '2']);
}));

test('search reads what other frameworks wrote; working memory only once its session closes', () => withMemory(async (m) => {
	const store = new A2MStore(m);
	const { ids } = await m.remember([
		{ content: 'the office moved to the harbour building', tier: 'semantic', metadata: { src: 'cli' } },
		{ content: 'keyed note about the harbour', key: 'crewai/n1', tier: 'semantic' },
		{ content: 'user said the harbour code is 4711', role: 'user', session: 'chat-1' },
	]);
	const hits = await store.search([], { query: 'harbour' });
	assert.equal(hits.length, 2);
	const plain = hits.find((h) => h.key === ids[0]);
	assert.deepEqual(plain.namespace, []);
	assert.deepEqual(plain.value, { content: 'the office moved to the harbour building', metadata: { src: 'cli' } });
	const keyed = hits.find((h) => h.key === 'n1');
	assert.deepEqual([keyed.namespace, keyed.value], [['crewai'], { content: 'keyed note about the harbour' }]);
	assert.equal((await store.get([], ids[0])).value.content, 'the office moved to the harbour building');
	assert.deepEqual(await store.listNamespaces(), [['crewai']]);
	assert.deepEqual(await store.search([], { query: 'code 4711' }), []);
	await m.sessionClose('chat-1');
	const after = await store.search([], { query: 'code 4711' });
	assert.deepEqual(after.map((h) => [h.value.content, h.value.role]), [['user said the harbour code is 4711', 'user']]);
}));

test('listNamespaces with prefix, suffix, wildcards, maxDepth, limit and offset', () => withMemory(async (m) => {
	const store = new A2MStore(m);
	for (const ns of [['a', 'b', 'c'], ['a', 'b', 'd'], ['a', 'e'], ['x', 'b', 'c']]) await store.put(ns, 'k', { v: 1 });
	assert.deepEqual(await store.listNamespaces(), [['a', 'b', 'c'], ['a', 'b', 'd'], ['a', 'e'], ['x', 'b', 'c']]);
	assert.deepEqual(await store.listNamespaces({ prefix: ['a'] }), [['a', 'b', 'c'], ['a', 'b', 'd'], ['a', 'e']]);
	assert.deepEqual(await store.listNamespaces({ suffix: ['c'] }), [['a', 'b', 'c'], ['x', 'b', 'c']]);
	assert.deepEqual(await store.listNamespaces({ prefix: ['*', 'b'] }), [['a', 'b', 'c'], ['a', 'b', 'd'], ['x', 'b', 'c']]);
	assert.deepEqual(await store.listNamespaces({ maxDepth: 1 }), [['a'], ['x']]);
	assert.deepEqual(await store.listNamespaces({ prefix: ['a'], maxDepth: 2, limit: 1, offset: 1 }), [['a', 'e']]);
}));

test('caller-owned vectors are stored verbatim and searched by; index false stores none', () => withMemory(async (m) => {
	const embeddings = new SyntheticEmbeddings({ vectorSize: 12 });
	const store = new A2MStore(m, { index: { dims: 12, embeddings, fields: ['text'] } });
	await store.put(['kb'], '1', { text: 'photosynthesis turns light into sugar' });
	await store.put(['kb'], '2', { text: 'the mitochondria is the powerhouse' });
	await store.put(['kb'], 'raw', { text: 'not embedded' }, false);
	const { record } = await m.fetch({ key: 'kb/1', embeddings: true });
	assert.equal(record.content, 'photosynthesis turns light into sugar');
	const expected = await embeddings.embedQuery('photosynthesis turns light into sugar');
	assert.equal(record.embedding.length, 12);
	record.embedding.forEach((x, i) => assert.ok(Math.abs(x - expected[i]) < 1e-6));
	assert.equal((await store.search(['kb'], { query: 'photosynthesis turns light into sugar' }))[0].key, '1');
	assert.equal((await m.describe()).embeddings.dimensions, 12);
	assert.equal((await m.fetch({ key: 'kb/raw', embeddings: true })).record.embedding, undefined);
}));

test('a server without keys is refused with -32003', () => withMemory(async (m) => {
	assert.throws(() => new A2MStore(m), (e) => e instanceof A2MError
		&& e.code === ErrorCode.CAPABILITY_NOT_SUPPORTED && e.data.capability === 'keys');
}, ['--capabilities', 'core,tiers']));

// A graph whose first node stores what the user asks it to remember, and
// whose second searches the user's namespace: the store arrives in each
// node's config, as LangGraph hands it to every node.
function buildGraph(store) {
	const State = Annotation.Root({
		user: Annotation(),
		said: Annotation(),
		recalled: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
	});
	return new StateGraph(State)
		.addNode('remember', async (state, config) => {
			if (state.said.startsWith('remember ')) {
				const fact = state.said.slice('remember '.length);
				await config.store.put(['memories', state.user], String(fact.length), { text: fact });
			}
			return {};
		})
		.addNode('recall', async (state, config) => {
			const hits = await config.store.search(['memories', state.user], { query: state.said, limit: 3 });
			return { recalled: hits.map((h) => h.value.text) };
		})
		.addEdge(START, 'remember')
		.addEdge('remember', 'recall')
		.addEdge('recall', END)
		.compile({ store });
}

test('a compiled graph remembers across runs, and what it stored is a record anyone reads', () => withMemory(async (m) => {
	const app = buildGraph(new A2MStore(m, { index: { fields: ['text'] } }));
	await app.invoke({ user: 'alice', said: 'remember my favourite colour is teal' });
	await app.invoke({ user: 'bob', said: 'remember my favourite colour is amber' });
	const out = await app.invoke({ user: 'alice', said: 'what is my favourite colour' });
	assert.deepEqual(out.recalled, ['my favourite colour is teal']);
	assert.deepEqual((await m.recall('amber')).records.map((r) => r.content), ['my favourite colour is amber']);
}));

test('a compiled graph over HTTP and a SQLite file keeps its memory across server restarts', async () => {
	const db = `${tempDir()}/a2m.db`;
	let server = await startHttp(['--db', db]);
	let client = await A2MClient.http(server.url);
	try {
		const app = buildGraph(new A2MStore(client, { index: { fields: ['text'] } }));
		await app.invoke({ user: 'carol', said: 'remember the wifi password is hunter2' });
	} finally {
		await client.close();
		assert.equal(await server.stop(), 0);
	}
	server = await startHttp(['--db', db]);
	client = await A2MClient.http(server.url);
	try {
		const app = buildGraph(new A2MStore(client, { index: { fields: ['text'] } }));
		const out = await app.invoke({ user: 'carol', said: 'wifi password' });
		assert.deepEqual(out.recalled, ['the wifi password is hunter2']);
		const [hit] = await new A2MStore(client).search(['memories'], { query: 'wifi' });
		assert.deepEqual(hit.namespace, ['memories', 'carol']);
	} finally {
		await client.close();
		assert.equal(await server.stop(), 0);
	}
});
