// memoryTools (adapters/js/ai-sdk) against the real server and the Vercel AI
// SDK's real package: generateText and a ToolLoopAgent on the SDK's own
// mock language model (ai/test) call remember, recall and forget.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ToolLoopAgent, generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { A2MError, ErrorCode } from 'a2m-client';
import { memoryTools } from '../ai-sdk/index.js';
import { withMemory } from './helpers.js';

const usage = {
	inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
	outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/** A step calling one tool. */
const call = (toolName, input, toolCallId = `${toolName}-1`) => ({
	content: [{ type: 'tool-call', toolCallId, toolName, input: JSON.stringify(input) }],
	finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [],
});

/** A step answering with text. */
const say = (text) => ({ content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] });

/** doGenerate playing `steps` in order; a step may be a function of the call's options. */
function script(...steps) {
	let n = 0;
	return async (options) => {
		const step = steps[n++];
		return typeof step === 'function' ? step(options) : step;
	};
}

/** The output of the last tool result in a call's prompt. */
function lastToolOutput(options) {
	const results = options.prompt.filter((msg) => msg.role === 'tool').flatMap((msg) => msg.content);
	return results.at(-1).output.value;
}

test('generateText: the model remembers a fact through the tool, into semantic memory under ai-sdk/', () => withMemory(async (m) => {
	const model = new MockLanguageModelV3({ doGenerate: script(call('remember', { fact: 'The release train leaves on Thursdays.' }), say('Noted.')) });
	const result = await generateText({ model, tools: memoryTools(m), prompt: 'Remember: releases on Thursdays.', stopWhen: stepCountIs(3) });
	assert.equal(result.text, 'Noted.');
	const [{ id }] = result.steps[0].toolResults.map((r) => r.output);
	const { records } = await m.timeline({ where: { id } });
	assert.deepEqual(records.map((r) => [r.content, r.tier]), [['The release train leaves on Thursdays.', 'semantic']]);
	assert.match(records[0].key, /^ai-sdk\/[0-9a-f-]{36}$/);
	// The model was handed the tool's answer.
	assert.deepEqual(lastToolOutput(model.doGenerateCalls[1]), { id });
}));

test('recall reads every searchable record, whoever wrote it, and not working memory', () => withMemory(async (m) => {
	await m.remember([
		{ content: 'the VPN certificate expires in June', tier: 'semantic', key: 'langchain/vpn' },
		{ content: 'VPN support is handled by Omar', tier: 'semantic' },
		{ content: 'user said the VPN password is swordfish', role: 'user', session: 'chat' },
	]);
	const model = new MockLanguageModelV3({
		doGenerate: script(call('recall', { query: 'VPN' }), (options) => say(lastToolOutput(options).memories.map((x) => x.content).sort().join(' | '))),
	});
	const agent = new ToolLoopAgent({ model, tools: memoryTools(m), stopWhen: stepCountIs(3) });
	const { text } = await agent.generate({ prompt: 'What do we know about the VPN?' });
	assert.equal(text, 'VPN support is handled by Omar | the VPN certificate expires in June');
	const memories = lastToolOutput(model.doGenerateCalls[1]).memories;
	assert.ok(memories.every((x) => typeof x.id === 'string' && typeof x.score === 'number'));
}));

test('forget deletes what the tools wrote, never what another framework wrote', () => withMemory(async (m) => {
	const tools = memoryTools(m);
	const { ids: [foreign] } = await m.remember([{ content: 'a CrewAI note on parking', tier: 'semantic', key: 'crewai/p' }]);
	const remembered = await tools.remember.execute({ fact: 'parking is on level 3' }, { toolCallId: 't', messages: [] });
	const model = new MockLanguageModelV3({ doGenerate: script(call('forget', { ids: [foreign, remembered.id] }), (options) => say(String(lastToolOutput(options).forgotten))) });
	const { text } = await generateText({ model, tools, prompt: 'Forget everything about parking.', stopWhen: stepCountIs(3) });
	assert.equal(text, '1');
	assert.deepEqual((await m.recall('parking')).records.map((r) => r.content), ['a CrewAI note on parking']);
	assert.deepEqual(await tools.forget.execute({ ids: [] }, { toolCallId: 't', messages: [] }), { forgotten: 0 });
}));

test('the tools need keys and a namespace', () => withMemory(async (m) => {
	assert.throws(() => memoryTools(m), (e) => e instanceof A2MError
		&& e.code === ErrorCode.CAPABILITY_NOT_SUPPORTED && e.data.capability === 'keys');
}, ['--capabilities', 'core,tiers']));

test('an empty namespace is refused: forget would reach every key', () => withMemory(async (m) => {
	assert.throws(() => memoryTools(m, { namespace: '' }), /needs a namespace/);
}));
