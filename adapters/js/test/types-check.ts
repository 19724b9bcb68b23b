// types-check.ts — compiled (never run) by types.test.js: the adapters'
// declarations, used as the docs show them, type-check against the real
// frameworks' own types under --strict.
import { A2MClient } from 'a2m-client';
import { StateGraph, MessagesAnnotation } from '@langchain/langgraph';
import { Agent, run } from '@openai/agents';
import { generateText, type LanguageModel } from 'ai';
import { Memory } from '@mastra/memory';
import { A2MStore } from 'a2m-adapters/langgraph';
import { A2MChatMessageHistory, A2MVectorStore } from 'a2m-adapters/langchain';
import { A2MSession, memoryTools as agentTools } from 'a2m-adapters/openai-agents';
import { memoryTools } from 'a2m-adapters/ai-sdk';
import { A2MStore as MastraStore } from 'a2m-adapters/mastra';

export async function use(model: LanguageModel): Promise<void> {
	const memory = await A2MClient.http('http://127.0.0.1:8778/');
	const store = new A2MStore(memory, { index: { fields: ['text'] } });
	new StateGraph(MessagesAnnotation).addNode('n', () => ({})).addEdge('__start__', 'n').compile({ store });
	await store.put(['users', 'ana'], 'city', { text: 'Porto' });
	const hits = await store.search(['users'], { query: 'city', limit: 3 });
	const first: string | undefined = hits[0]?.key;
	void first;

	const history = new A2MChatMessageHistory(memory, 'session-42');
	await history.addUserMessage('hi');
	const flushed: number = (await history.closeSession()).flushed;
	void flushed;
	const docs = await new A2MVectorStore(memory, null).asRetriever({ k: 4 }).invoke('hi');
	const text: string = docs[0].pageContent;
	void text;

	const agent = new Agent({ name: 'assistant', tools: agentTools(memory) });
	await run(agent, 'hello', { session: new A2MSession(memory, 'conversation-7') });

	const result = await generateText({ model, tools: memoryTools(memory), prompt: 'hi' });
	void result.text;

	const mastra = new Memory({ storage: new MastraStore(memory) });
	void mastra;
	await memory.close();
}
