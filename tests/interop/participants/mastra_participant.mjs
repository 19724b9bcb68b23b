// Interop participant: Mastra. Writes by an Agent turn whose Memory keeps
// its thread in A2MStore (a session in working memory: the grid closes it
// before anyone searches); reads by an Agent calling the recall_memory tool
// and answering with what it returned. The model is the adapters'
// deterministic local one.
import { Agent } from '@mastra/core/agent';
import { Memory } from '@mastra/memory';
import { A2MStore, memoryTools } from '../../../adapters/js/mastra/index.js';
import { LocalModelV2 } from '../../../adapters/js/test/local_model_v2.js';
import { eachToken, main, withClient } from './interop_protocol.mjs';

async function write(url, token, text) {
	const thread = `interop-mastra-${token}`;
	await withClient(url, (m) => {
		const memory = new Memory({ storage: new A2MStore(m), options: { threads: { generateTitle: false } } });
		const agent = new Agent({ name: 'scribe', instructions: 'Take notes.', model: new LocalModelV2('Noted.'), memory });
		return agent.generate(text, { memory: { thread, resource: 'interop' } });
	});
	return { session: thread };
}

async function read(url, tokens) {
	return withClient(url, (m) => eachToken(tokens, async (t) => {
		const model = new LocalModelV2({ tool: 'recall_memory', input: { query: t } },
			(prompt) => JSON.stringify(prompt.at(-1).content[0].output.value.memories));
		const agent = new Agent({ name: 'reader', instructions: 'Answer from memory.', model, tools: memoryTools(m) });
		return JSON.parse((await agent.generate(`What do you remember about ${t}?`)).text);
	}));
}

await main(write, read);
