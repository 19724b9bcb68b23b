// Interop participant: LangGraph.js, through adapters/js/langgraph's
// A2MStore (put into a namespace; search the whole store).
import { A2MStore } from '../../../adapters/js/langgraph/index.js';
import { eachToken, main, withClient } from './interop_protocol.mjs';

async function write(url, token, text) {
	await withClient(url, (m) => new A2MStore(m, { index: { fields: ['text'] } }).put(['interop', 'langgraph-js'], token, { text }));
}

async function read(url, tokens) {
	return withClient(url, (m) => {
		const store = new A2MStore(m);
		return eachToken(tokens, async (t) => (await store.search([], { query: t, limit: 5 })).map((i) => JSON.stringify(i.value)));
	});
}

await main(write, read);
