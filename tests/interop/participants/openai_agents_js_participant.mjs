// Interop participant: the OpenAI Agents SDK (JavaScript). Writes by a
// Runner turn whose conversation is kept in an A2MSession (working memory:
// the grid closes the session before anyone searches); reads by a Runner
// whose agent calls the recall_memory tool and answers with what it
// returned. The model is the adapters' deterministic local one (the JS SDK
// ships no fake model).
import { Agent, Runner, setTracingDisabled } from '@openai/agents';
import { A2MSession, memoryTools } from '../../../adapters/js/openai-agents/index.js';
import { ScriptedModel, assistantMessage, functionCall } from '../../../adapters/js/test/scripted_model.js';
import { eachToken, main, withClient } from './interop_protocol.mjs';

setTracingDisabled(true);

async function write(url, token, text) {
	const session = `interop-openai-agents-js-${token}`;
	await withClient(url, (m) => new Runner().run(new Agent({ name: 'scribe', model: new ScriptedModel([[assistantMessage('Noted.')]]) }),
		text, { session: new A2MSession(m, session) }));
	return { session };
}

async function read(url, tokens) {
	return withClient(url, (m) => eachToken(tokens, async (t) => {
		const model = new ScriptedModel([[functionCall('recall_memory', { query: t }, 'r')],
			(request) => [assistantMessage(request.input.filter((i) => i.type === 'function_call_result').at(-1).output.text)]]);
		const result = await new Runner().run(new Agent({ name: 'reader', model, tools: memoryTools(m) }), `What do you remember about ${t}?`);
		return String(result.finalOutput).split('\n').filter((line) => line.startsWith('- ')).map((line) => line.slice(2));
	}));
}

await main(write, read);
