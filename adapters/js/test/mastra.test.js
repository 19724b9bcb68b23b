// A2MStore and memoryTools (adapters/js/mastra) against the real server and
// Mastra's real packages: @mastra/memory's Memory keeps threads, messages
// and working memory in A2M, real Agents on a deterministic local model
// replay their thread from it, and a Mastra agent recalls what other
// frameworks stored.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Agent } from '@mastra/core/agent';
import { Memory } from '@mastra/memory';
import { A2MError, ErrorCode } from 'a2m-client';
import { A2MStore, memoryTools } from '../mastra/index.js';
import { withMemory } from './helpers.js';
import { LocalModelV2 } from './local_model_v2.js';

const noTitles = { threads: { generateTitle: false } };

const v2 = (id, threadId, role, text, at) => ({
	id, threadId, resourceId: 'u1', role, type: 'text', createdAt: new Date(at),
	content: { format: 2, parts: [{ type: 'text', text }], content: text },
});

test('an Agent replays its thread from A2M: a thread is a session in working memory', () => withMemory(async (m) => {
	const memory = new Memory({ storage: new A2MStore(m), options: { lastMessages: 10, ...noTitles } });
	const model = new LocalModelV2('Hello Ana.', 'Your name is Ana.');
	const agent = new Agent({ name: 'assistant', instructions: 'Be brief.', model, memory });
	const opts = { memory: { thread: 't1', resource: 'u1' } };
	assert.equal((await agent.generate('My name is Ana.', opts)).text, 'Hello Ana.');
	assert.equal((await agent.generate('What is my name?', opts)).text, 'Your name is Ana.');
	// The second call saw the first turn, replayed from the store.
	assert.deepEqual(model.lastPrompt, [['system', 'Be brief.'], ['user', 'My name is Ana.'], ['assistant', 'Hello Ana.'], ['user', 'What is my name?']]);
	const { records } = await m.timeline({ where: { session: 't1' } });
	assert.match(records[0].content, /^Conversation: New Thread /); // Mastra's default title
	assert.deepEqual(records.map((r) => [r.role, r.tier, r.key.split('/').slice(0, 2).join('/')])[0], ['system', 'working', 'mastra/threads']);
	assert.deepEqual(records.slice(1).map((r) => [r.role, r.content, r.tier]), [
		['user', 'My name is Ana.', 'working'], ['assistant', 'Hello Ana.', 'working'],
		['user', 'What is my name?', 'working'], ['assistant', 'Your name is Ana.', 'working']]);
	assert.ok(records.slice(1).every((r) => /^mastra\/messages\//.test(r.key)));
	const thread = await memory.getThreadById({ threadId: 't1' });
	assert.deepEqual([thread.id, thread.resourceId], ['t1', 'u1']);
	assert.ok(thread.createdAt instanceof Date && thread.updatedAt >= thread.createdAt);
}));

test('threads by resource, update, pagination, include windows, and deletes that stay in the namespace', () => withMemory(async (m) => {
	const store = new A2MStore(m);
	const memory = new Memory({ storage: store, options: { lastMessages: 3 } });
	await memory.createThread({ threadId: 'a', resourceId: 'u1', title: 'first' });
	await memory.createThread({ threadId: 'b', resourceId: 'u1', title: 'second' });
	await memory.createThread({ threadId: 'c', resourceId: 'u2', title: 'other user' });
	assert.deepEqual((await memory.getThreadsByResourceId({ resourceId: 'u1', sortDirection: 'ASC' })).map((t) => t.id), ['a', 'b']);
	await memory.updateThread({ id: 'a', title: 'renamed', metadata: { pinned: true } });
	const a = await memory.getThreadById({ threadId: 'a' });
	assert.deepEqual([a.title, a.metadata], ['renamed', { pinned: true }]);
	const page = await memory.getThreadsByResourceIdPaginated({ resourceId: 'u1', page: 0, perPage: 1 });
	assert.deepEqual([page.threads.length, page.total, page.hasMore], [1, 2, true]);

	const saved = await memory.saveMessages({ format: 'v2', messages: [1, 2, 3, 4, 5, 6].map((n) =>
		v2(`m${n}`, 'a', n % 2 ? 'user' : 'assistant', `message ${n}`, Date.UTC(2026, 0, 1, 0, 0, n))) });
	assert.equal(saved.length, 6);
	// lastMessages: 3 — Memory asks for the last three, in order.
	assert.deepEqual((await memory.rememberMessages({ threadId: 'a' })).messagesV2.map((x) => x.id), ['m4', 'm5', 'm6']);
	const last = await store.getMessages({ threadId: 'a', selectBy: { last: 3 }, format: 'v2' });
	assert.deepEqual(last.map((x) => x.id), ['m4', 'm5', 'm6']);
	// Semantic recall's include: a message and its neighbours (what a vector hit asks the storage for).
	const window = await store.getMessages({ threadId: 'a', format: 'v2',
		selectBy: { include: [{ id: 'm2', threadId: 'a', withPreviousMessages: 1, withNextMessages: 1 }] } });
	assert.deepEqual(window.map((x) => x.id), ['m1', 'm2', 'm3']);
	const paged = await store.getMessagesPaginated({ threadId: 'a', format: 'v2', selectBy: { pagination: { page: 0, perPage: 4 } } });
	assert.deepEqual([paged.messages.map((x) => x.id), paged.total, paged.hasMore], [['m3', 'm4', 'm5', 'm6'], 6, true]);
	assert.deepEqual((await store.getMessagesById({ messageIds: ['m6', 'nope'], format: 'v2' })).map((x) => x.id), ['m6']);

	// A message saved again is replaced; updateMessages merges.
	await memory.saveMessages({ format: 'v2', messages: [v2('m6', 'a', 'assistant', 'message 6, corrected', Date.UTC(2026, 0, 1, 0, 0, 6))] });
	assert.equal((await m.fetch('mastra/messages/m6')).record.content, 'message 6, corrected');
	await store.updateMessages({ messages: [{ id: 'm5', content: { metadata: { starred: true } } }] });
	const [m5] = await store.getMessagesById({ messageIds: ['m5'], format: 'v2' });
	assert.deepEqual([m5.content.metadata, m5.content.content], [{ starred: true }, 'message 5']);
	await memory.deleteMessages(['m1']);
	assert.deepEqual((await store.getMessages({ threadId: 'a', format: 'v2' })).map((x) => x.id), ['m2', 'm3', 'm4', 'm5', 'm6']);

	// Another framework's turn in the thread is one of its messages, and survives deleteThread.
	await m.remember([{ content: 'a turn LangChain wrote', role: 'user', session: 'a' }]);
	assert.equal((await store.getMessages({ threadId: 'a', format: 'v2' })).at(-1).content.content, 'a turn LangChain wrote');
	await memory.deleteThread('a');
	assert.equal(await memory.getThreadById({ threadId: 'a' }), null);
	assert.deepEqual((await m.timeline({ where: { session: 'a' } })).records.map((r) => r.content), ['a turn LangChain wrote']);
	assert.ok(await memory.getThreadById({ threadId: 'b' }));
}));

test('resource-scoped working memory is a semantic fact other frameworks find', () => withMemory(async (m) => {
	const memory = new Memory({ storage: new A2MStore(m), options: { workingMemory: { enabled: true, scope: 'resource' } } });
	await memory.createThread({ threadId: 't', resourceId: 'ana' });
	await memory.updateWorkingMemory({ threadId: 't', resourceId: 'ana', workingMemory: '# Ana\n- lives in Porto\n- allergic to cats' });
	assert.equal(await memory.getWorkingMemory({ threadId: 't', resourceId: 'ana' }), '# Ana\n- lives in Porto\n- allergic to cats');
	const { records } = await m.recall({ query: 'allergic cats', where: { tier: ['episodic', 'semantic'] } });
	assert.deepEqual(records.map((r) => [r.key, r.tier]), [['mastra/resources/ana', 'semantic']]);
}));

test('the memory tools: a Mastra agent recalls what others stored, and a closed thread', () => withMemory(async (m) => {
	const store = new A2MStore(m);
	const memory = new Memory({ storage: store, options: { lastMessages: 10, ...noTitles } });
	await m.remember([{ content: 'the office wifi is called heron-5', tier: 'semantic', key: 'langchain/wifi' }]);
	const writer = new Agent({ name: 'w', instructions: 'x', model: new LocalModelV2('ok'), memory });
	await writer.generate('ticket kestrel: the printer on floor 2 jams', { memory: { thread: 'help', resource: 'u1' } });
	const ask = async (query) => {
		const model = new LocalModelV2({ tool: 'recall_memory', input: { query } }, (prompt) => JSON.stringify(prompt.at(-1).content[0].output.value.memories));
		const reader = new Agent({ name: 'r', instructions: 'Answer from memory.', model, tools: memoryTools(m) });
		return JSON.parse((await reader.generate(`what do you know about ${query}?`)).text);
	};
	assert.deepEqual(await ask('wifi'), ['the office wifi is called heron-5']);
	assert.deepEqual(await ask('kestrel'), []); // a live conversation is replayed, not searched
	assert.equal((await store.closeThread('help')).closed, 'help');
	assert.deepEqual(await ask('kestrel'), ['ticket kestrel: the printer on floor 2 jams']);
	const tools = memoryTools(m);
	const { id } = await tools.remember_fact.execute({ context: { fact: 'standup moved to 9:30' } });
	assert.match((await m.timeline({ where: { id } })).records[0].key, /^mastra\/facts\//);
}));

test('A2MStore needs sessions and keys', () => withMemory(async (m) => {
	assert.throws(() => new A2MStore(m), (e) => e instanceof A2MError
		&& e.code === ErrorCode.CAPABILITY_NOT_SUPPORTED && e.data.capability === 'sessions');
}, ['--capabilities', 'core,tiers,keys']));

test('workflows are not memory: A2MStore says so', () => withMemory(async (m) => {
	await assert.rejects(new A2MStore(m).getWorkflowRuns(), /not memory/);
}));
