// Interop participant: LangChain.js. Writes a conversation turn through
// A2MChatMessageHistory (working memory: the grid closes the session before
// anyone searches); reads through A2MVectorStore's retriever.
import { A2MChatMessageHistory, A2MVectorStore } from '../../../adapters/js/langchain/index.js';
import { eachToken, main, withClient } from './interop_protocol.mjs';

async function write(url, token, text) {
	const session = `interop-langchain-js-${token}`;
	await withClient(url, (m) => new A2MChatMessageHistory(m, session).addUserMessage(text));
	return { session };
}

async function read(url, tokens) {
	return withClient(url, (m) => {
		const retriever = new A2MVectorStore(m).asRetriever({ k: 5 });
		return eachToken(tokens, async (t) => (await retriever.invoke(t)).map((d) => d.pageContent));
	});
}

await main(write, read);
