// Interop participant: the Node client (clients/node) itself.
import { A2MClient } from '../../../clients/node/index.js';
import { main } from './interop_protocol.mjs';

async function write(url, token, text) {
	const memory = await A2MClient.http(url);
	try {
		const tier = memory.description.tiers.find((t) => t.kind === 'semantic').name;
		await memory.remember([{ content: text, tier }]);
	} finally {
		await memory.close();
	}
}

async function read(url, tokens) {
	const memory = await A2MClient.http(url);
	try {
		const out = {};
		for (const t of tokens) out[t] = (await memory.recall({ query: t, limit: 5 })).records.map((r) => r.content);
		return out;
	} finally {
		await memory.close();
	}
}

await main(write, read);
