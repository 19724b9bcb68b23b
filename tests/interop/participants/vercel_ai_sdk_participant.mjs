// Interop participant: the Vercel AI SDK. generateText on the SDK's own
// mock language model (ai/test) calls the remember tool to write and the
// recall tool to read, answering with what recall returned.
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { memoryTools } from '../../../adapters/js/ai-sdk/index.js';
import { eachToken, main, withClient } from './interop_protocol.mjs';

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

/** A mock model that calls `tool` with `input`, then answers with the JSON of the tool's output. */
function callThenEcho(tool, input) {
	return new MockLanguageModelV3({
		doGenerate: async (options) => {
			const results = options.prompt.filter((msg) => msg.role === 'tool').flatMap((msg) => msg.content);
			if (!results.length) {
				return { content: [{ type: 'tool-call', toolCallId: 'c1', toolName: tool, input: JSON.stringify(input) }],
					finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [] };
			}
			return { content: [{ type: 'text', text: JSON.stringify(results.at(-1).output.value) }],
				finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
		},
	});
}

async function write(url, token, text) {
	await withClient(url, (m) => generateText({ model: callThenEcho('remember', { fact: text }), tools: memoryTools(m),
		prompt: `Remember this: ${text}`, stopWhen: stepCountIs(3) }));
}

async function read(url, tokens) {
	return withClient(url, (m) => eachToken(tokens, async (t) => {
		const { text } = await generateText({ model: callThenEcho('recall', { query: t }), tools: memoryTools(m),
			prompt: `What do you remember about ${t}?`, stopWhen: stepCountIs(3) });
		return JSON.parse(text).memories.map((x) => x.content);
	}));
}

await main(write, read);
