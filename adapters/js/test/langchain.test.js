// A2MChatMessageHistory and A2MVectorStore (adapters/js/langchain) against
// the real server and @langchain/core's real package: a history driven by
// RunnableWithMessageHistory and LangChain's fake chat model, and a
// VectorStore / retriever with LangChain's fake embeddings as the caller's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Document } from '@langchain/core/documents';
import { AIMessage, ChatMessage, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { ChatPromptTemplate, MessagesPlaceholder } from '@langchain/core/prompts';
import { RunnableLambda, RunnableWithMessageHistory } from '@langchain/core/runnables';
import { FakeEmbeddings, FakeListChatModel, SyntheticEmbeddings } from '@langchain/core/utils/testing';
import { A2MClient, A2MError, ErrorCode } from 'a2m-client';
import { A2MChatMessageHistory, A2MVectorStore } from '../langchain/index.js';
import { startHttp, tempDir, withMemory } from './helpers.js';

const types = (msgs) => msgs.map((m) => m.getType());
const texts = (msgs) => msgs.map((m) => m.content);

test('the history is the session timeline in working memory', () => withMemory(async (m) => {
	const history = new A2MChatMessageHistory(m, 'chat-1');
	await history.addMessages([new SystemMessage('be brief'), new HumanMessage("hi, I'm Ana"), new AIMessage('hello Ana')]);
	await history.addUserMessage("what's my name?");
	const other = new A2MChatMessageHistory(m, 'chat-2');
	await other.addUserMessage('a different conversation');
	const msgs = await history.getMessages();
	assert.deepEqual(types(msgs), ['system', 'human', 'ai', 'human']);
	assert.deepEqual(texts(msgs), ['be brief', "hi, I'm Ana", 'hello Ana', "what's my name?"]);
	const { records } = await m.timeline({ where: { session: 'chat-1' } });
	assert.deepEqual(records.map((r) => [r.role, r.tier]),
		[['system', 'working'], ['user', 'working'], ['assistant', 'working'], ['user', 'working']]);
	assert.deepEqual(texts(await other.getMessages()), ['a different conversation']);
	// A message of a role of its own keeps it.
	await other.addMessage(new ChatMessage({ role: 'critic', content: 'too long' }));
	assert.equal((await m.timeline({ where: { session: 'chat-2' } })).records[1].role, 'critic');
	assert.equal((await other.getMessages())[1].role, 'critic');
}));

test('messages round-trip with their fields; a tool call and its result share a group', () => withMemory(async (m) => {
	const history = new A2MChatMessageHistory(m, 's');
	const call = new AIMessage({ content: '', tool_calls: [{ name: 'weather', args: { city: 'Oslo' }, id: 'call-1', type: 'tool_call' }],
		additional_kwargs: { x: 1 }, id: 'm1' });
	const result = new ToolMessage({ content: 'rain, 4C', tool_call_id: 'call-1' });
	await history.addMessages([new HumanMessage('weather in Oslo?'), call]);
	await history.addMessage(result);
	const msgs = await history.getMessages();
	assert.deepEqual(msgs[1].tool_calls, call.tool_calls);
	assert.deepEqual([msgs[1].id, msgs[1].additional_kwargs.x], ['m1', 1]);
	assert.deepEqual([msgs[2].getType(), msgs[2].content, msgs[2].tool_call_id], ['tool', 'rain, 4C', 'call-1']);
	const { records } = await m.timeline({ where: { session: 's' } });
	assert.equal(records[1].content, 'weather({"city":"Oslo"})');
	assert.ok(records[1].group);
	assert.equal(records[2].group, records[1].group);
	assert.equal(records[0].group ?? null, null);
	// A second history object (another process) finds the call's group.
	await new A2MChatMessageHistory(m, 's').addMessage(new ToolMessage({ content: 'late answer', tool_call_id: 'call-1' }));
	assert.equal((await m.timeline({ where: { session: 's' } })).records[3].group, records[1].group);
}));

test('the history reads turns other frameworks wrote; clear deletes this session only', () => withMemory(async (m) => {
	await m.remember([{ content: 'from the CLI', role: 'user', session: 'mixed' },
		{ content: 'an answer', role: 'assistant', session: 'mixed' },
		{ content: 'a note', role: 'memory', session: 'mixed' }]);
	const msgs = await new A2MChatMessageHistory(m, 'mixed').getMessages();
	assert.deepEqual(msgs.map((x) => [x.getType(), x.content]), [['human', 'from the CLI'], ['ai', 'an answer'], ['generic', 'a note']]);
	assert.equal(msgs[2].role, 'memory');
	const a = new A2MChatMessageHistory(m, 'a');
	const b = new A2MChatMessageHistory(m, 'b');
	await a.addUserMessage('one');
	await b.addUserMessage('two');
	await a.clear();
	assert.deepEqual(await a.getMessages(), []);
	assert.deepEqual(texts(await b.getMessages()), ['two']);
	assert.equal((await m.timeline({ where: { session: 'mixed' } })).records.length, 3);
}));

test('a closed conversation becomes searchable', () => withMemory(async (m) => {
	const history = new A2MChatMessageHistory(m, 'trip');
	const store = new A2MVectorStore(m);
	await history.addMessages([new HumanMessage('my passport number ends in 0423'), new AIMessage('noted')]);
	// Replayed, not searched, while the session is open (DECISIONS 007).
	assert.deepEqual(await store.similaritySearch('passport number'), []);
	assert.equal((await history.closeSession()).flushed, 2);
	assert.deepEqual(await history.getMessages(), []); // no longer the live conversation
	const docs = await store.similaritySearch('passport number', 1);
	assert.deepEqual(docs.map((d) => d.pageContent), ['my passport number ends in 0423']);
	assert.equal(docs[0].metadata.langchain.type, 'human');
}));

test('RunnableWithMessageHistory replays the conversation to a fake chat model', () => withMemory(async (m) => {
	const seen = [];
	const prompt = ChatPromptTemplate.fromMessages([new MessagesPlaceholder('history'), ['human', '{input}']]);
	const capture = RunnableLambda.from((value) => {
		seen.push(value.toChatMessages());
		return value;
	});
	const chain = prompt.pipe(capture).pipe(new FakeListChatModel({ responses: ['hello Bo', 'your name is Bo'] }));
	const app = new RunnableWithMessageHistory({
		runnable: chain,
		getMessageHistory: (sid) => new A2MChatMessageHistory(m, sid),
		inputMessagesKey: 'input',
		historyMessagesKey: 'history',
	});
	const config = { configurable: { sessionId: 'user-bo' } };
	assert.equal((await app.invoke({ input: 'I am Bo' }, config)).content, 'hello Bo');
	assert.equal((await app.invoke({ input: 'who am I?' }, config)).content, 'your name is Bo');
	assert.deepEqual(texts(seen[1]), ['I am Bo', 'hello Bo', 'who am I?']);
	assert.deepEqual((await m.timeline({ where: { session: 'user-bo' } })).records.map((r) => [r.role, r.content]),
		[['user', 'I am Bo'], ['assistant', 'hello Bo'], ['user', 'who am I?'], ['assistant', 'your name is Bo']]);
}));

test('the history needs sessions, the vector store keys', () => withMemory(async (m) => {
	assert.throws(() => new A2MChatMessageHistory(m, 's'), (e) => e instanceof A2MError
		&& e.code === ErrorCode.CAPABILITY_NOT_SUPPORTED && e.data.capability === 'sessions');
	assert.ok(new A2MVectorStore(m));
}, ['--capabilities', 'core,tiers,keys']));

test('the vector store with caller-owned embeddings', () => withMemory(async (m) => {
	const embeddings = new SyntheticEmbeddings({ vectorSize: 16 });
	const store = new A2MVectorStore(m, embeddings);
	const docs = ['cats purr when content', 'dogs bark at strangers', 'the moon orbits the earth'].map((t, n) =>
		new Document({ pageContent: t, metadata: { topic: n < 2 ? 'pets' : 'space' } }));
	assert.deepEqual(await store.addDocuments(docs, { ids: ['c', 'd', 'm'] }), ['c', 'd', 'm']);
	const { record } = await m.fetch({ key: 'langchain/c', embeddings: true });
	assert.deepEqual([record.tier, record.metadata], ['semantic', { topic: 'pets' }]);
	const expected = await embeddings.embedQuery('cats purr when content');
	record.embedding.forEach((x, i) => assert.ok(Math.abs(x - expected[i]) < 1e-6));
	// The exact text: same vector, same words: first.
	const found = await store.similaritySearch('dogs bark at strangers', 2);
	assert.deepEqual([found[0].id, found[0].pageContent], ['d', 'dogs bark at strangers']);
	const [byVector] = await store.similaritySearchVectorWithScore(await embeddings.embedQuery('the moon orbits the earth'), 1);
	assert.equal(byVector[0].id, 'm');
	const pets = await store.similaritySearch('strangers moon cats', 5, { topic: 'pets' });
	assert.deepEqual(pets.map((d) => d.id).sort(), ['c', 'd']);
	const scored = await store.similaritySearchWithScore('cats purr when content', 3);
	assert.equal(scored[0][0].id, 'c');
	assert.ok(scored.at(-1)[1] >= 0 && scored.at(-1)[1] <= scored[0][1] && scored[0][1] <= 1);
	const retriever = store.asRetriever({ k: 1 });
	assert.deepEqual((await retriever.invoke('the moon orbits the earth')).map((d) => d.id), ['m']);
}));

test("LangChain's FakeEmbeddings vectors are stored verbatim, and a search still ranks by words", () => withMemory(async (m) => {
	// FakeEmbeddings gives every text the same vector: the words decide.
	const store = new A2MVectorStore(m, new FakeEmbeddings());
	await store.addDocuments([new Document({ pageContent: 'the boiler is serviced in march' }),
		new Document({ pageContent: 'the bins go out on thursday' })], { ids: ['b1', 'b2'] });
	assert.deepEqual((await m.fetch({ key: 'langchain/b2', embeddings: true })).record.embedding, [0.1, 0.2, 0.3, 0.4]);
	assert.deepEqual((await store.similaritySearch('when is the boiler serviced', 1)).map((d) => d.id), ['b1']);
}));

test('the vector store upserts by id and deletes in its namespace only', () => withMemory(async (m) => {
	const store = new A2MVectorStore(m);
	await store.addDocuments([new Document({ pageContent: 'v1 of the fact' })], { ids: ['f'] });
	await store.addDocuments([new Document({ pageContent: 'v2 of the fact' })], { ids: ['f'] });
	assert.deepEqual((await store.getByIds(['f', 'nope'])).map((d) => d.pageContent), ['v2 of the fact']);
	assert.equal((await m.fetch('langchain/f')).record.revision, 1);
	const other = new A2MVectorStore(m, null, { namespace: 'team-b' });
	await other.addDocuments([new Document({ pageContent: "team b's fact", metadata: { k: 1 }, id: 'f' })]);
	const [plain] = (await m.remember([{ content: 'a fact from the CLI', tier: 'semantic' }])).ids;
	// Reads are not scoped: both namespaces and the CLI's record.
	assert.deepEqual((await store.similaritySearch('fact', 10)).map((d) => d.pageContent).sort(),
		["a fact from the CLI", "team b's fact", 'v2 of the fact']);
	// Deletes are: ids outside the namespace are not this store's to delete.
	await store.delete({ ids: [plain, 'team-b/f'] });
	assert.equal((await m.recall('fact')).records.length, 3);
	await store.delete();
	assert.deepEqual((await m.recall('fact')).records.map((r) => r.content).sort(), ['a fact from the CLI', "team b's fact"]);
	assert.deepEqual((await other.getByIds(['f'])).map((d) => d.id), ['f']);
}));

test('fromTexts over HTTP and a SQLite file', async () => {
	const server = await startHttp(['--db', `${tempDir()}/a2m.db`]);
	const client = await A2MClient.http(server.url);
	try {
		const store = await A2MVectorStore.fromTexts(['sqlite keeps this across restarts'], [{}], null, { client, ids: ['p'] });
		assert.equal((await store.similaritySearch('restarts'))[0].id, 'p');
	} finally {
		await client.close();
		assert.equal(await server.stop(), 0);
	}
});
