// A2MSession and memoryTools (adapters/js/openai-agents) against the real
// server and the OpenAI Agents SDK's real package: Runner runs on a
// deterministic local Model keep their conversation in the session and call
// the memory tools.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Agent, MemorySession, Runner, setTracingDisabled } from '@openai/agents';
import { A2MError, ErrorCode } from 'a2m-client';
import { A2MSession, memoryTools } from '../openai-agents/index.js';
import { withMemory } from './helpers.js';
import { ScriptedModel, assistantMessage, functionCall } from './scripted_model.js';

setTracingDisabled(true);

/** The text of each input item, whatever its shape. */
function texts(items) {
	return items.map((item) => {
		if (typeof item.content === 'string') return item.content;
		if (Array.isArray(item.content)) return item.content.map((p) => p.text ?? '').join('');
		if (item.type === 'function_call_result') return item.output.text ?? JSON.stringify(item.output);
		return JSON.stringify(item);
	});
}

test('a Runner keeps its conversation in the session, replayed from the store', () => withMemory(async (m) => {
	const model = new ScriptedModel([[assistantMessage('Hello Ana.')], [assistantMessage('Your name is Ana.')]]);
	const agent = new Agent({ name: 'assistant', instructions: 'Be brief.', model });
	const session = new A2MSession(m, 'conv-1');
	const runner = new Runner();
	await runner.run(agent, 'My name is Ana.', { session });
	const result = await runner.run(agent, 'What is my name?', { session });
	assert.equal(result.finalOutput, 'Your name is Ana.');
	// The second call saw the first turn, replayed from the store.
	assert.deepEqual(texts(model.lastInput), ['My name is Ana.', 'Hello Ana.', 'What is my name?']);
	const { records } = await m.timeline({ where: { session: 'conv-1' } });
	assert.deepEqual(records.map((r) => [r.role, r.content, r.tier]), [
		['user', 'My name is Ana.', 'working'], ['assistant', 'Hello Ana.', 'working'],
		['user', 'What is my name?', 'working'], ['assistant', 'Your name is Ana.', 'working']]);
	assert.equal(await session.getSessionId(), 'conv-1');
}));

test('items round-trip exactly, a call and its result share a group, and the session API works as MemorySession does', () => withMemory(async (m) => {
	const session = new A2MSession(m, 'exact');
	const reference = new MemorySession();
	const items = [
		{ role: 'user', content: 'hi' },
		{ type: 'function_call', callId: 'c1', name: 'lookup', arguments: '{"q":1}', id: 'fc1', status: 'completed' },
		{ type: 'function_call_result', callId: 'c1', name: 'lookup', status: 'completed', output: { type: 'text', text: 'found' } },
		{ type: 'message', role: 'assistant', id: 'm1', status: 'completed', content: [{ type: 'output_text', text: 'done' }] },
	];
	await session.addItems(items);
	await reference.addItems(items);
	assert.deepEqual(await session.getItems(), items);
	assert.deepEqual(await session.getItems(2), await reference.getItems(2));
	assert.deepEqual(await session.getItems(0), []);
	const { records } = await m.timeline({ where: { session: 'exact' } });
	assert.deepEqual(records.map((r) => r.content), ['hi', 'lookup({"q":1})', 'found', 'done']);
	assert.deepEqual(records.map((r) => r.role), ['user', 'assistant', 'tool', 'assistant']);
	assert.equal(records[1].group, 'exact/call/c1');
	assert.equal(records[2].group, 'exact/call/c1');
	assert.deepEqual(await session.popItem(), await reference.popItem());
	assert.deepEqual(await session.getItems(), await reference.getItems());
	const other = new A2MSession(m, 'other');
	await other.addItems([{ role: 'user', content: 'elsewhere' }]);
	await session.clearSession();
	assert.deepEqual(await session.getItems(), []);
	assert.equal(await session.popItem(), undefined);
	assert.deepEqual(texts(await other.getItems()), ['elsewhere']);
}));

test('a session replays turns another framework wrote, as messages of their role', () => withMemory(async (m) => {
	await m.remember([{ content: 'from LangChain', role: 'user', session: 'shared' },
		{ content: 'an answer', role: 'assistant', session: 'shared' }, { content: 'a tool said', role: 'tool', session: 'shared' }]);
	assert.deepEqual(await new A2MSession(m, 'shared').getItems(), [
		{ role: 'user', content: 'from LangChain' }, { role: 'assistant', content: 'an answer' }, { role: 'user', content: 'a tool said' }]);
}));

test('the memory tools: an agent remembers a fact, and a closed conversation becomes recallable', () => withMemory(async (m) => {
	const writer = new ScriptedModel([
		[functionCall('remember_fact', { fact: 'The staging database is called heron.' }, 'w1')],
		[assistantMessage('Stored.')],
	]);
	const runner = new Runner();
	const tools = memoryTools(m);
	await runner.run(new Agent({ name: 'scribe', model: writer, tools }), 'Ticket parakeet: remember the staging db name.', { session: new A2MSession(m, 'talk') });
	const { records } = await m.recall({ query: 'staging database', where: { tier: 'semantic' } });
	assert.deepEqual(records.map((r) => r.content), ['The staging database is called heron.']);
	assert.match(records[0].key, /^openai-agents\//);

	// A reader calls recall_memory and answers with what the tool returned.
	const reader = (query) => new ScriptedModel([
		[functionCall('recall_memory', { query }, 'r1')],
		(request) => [assistantMessage(request.input.filter((i) => i.type === 'function_call_result').at(-1).output.text)],
	]);
	const ask = async (query) => (await runner.run(new Agent({ name: 'reader', model: reader(query), tools }), query)).finalOutput;
	assert.equal(await ask('staging database'), '- The staging database is called heron.');
	// The conversation itself is in working memory: not recalled until its session closes.
	assert.equal(await ask('parakeet'), 'Nothing in memory matches.');
	assert.equal((await new A2MSession(m, 'talk').closeSession()).closed, 'talk');
	assert.match(await ask('parakeet'), /^- Ticket parakeet: remember the staging db name\.$/m);
}));

test('the session needs sessions', () => withMemory(async (m) => {
	assert.throws(() => new A2MSession(m, 's'), (e) => e instanceof A2MError
		&& e.code === ErrorCode.CAPABILITY_NOT_SUPPORTED && e.data.capability === 'sessions');
}, ['--capabilities', 'core,tiers,keys']));
