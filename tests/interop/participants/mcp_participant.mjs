// Interop participant: the MCP bridge, `a2m mcp --http $A2M_URL` (the
// binary in $A2M_BINARY), driven by the official MCP SDK client as any MCP
// host would drive it: the memory_remember and memory_recall tools.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { main } from './interop_protocol.mjs';

async function connect(url) {
	const transport = new StdioClientTransport({ command: process.env.A2M_BINARY, args: ['mcp', '--http', url] });
	const client = new Client({ name: 'a2m-interop', version: '1.0.0' });
	await client.connect(transport);
	return client;
}

async function call(client, name, args) {
	const result = await client.callTool({ name, arguments: args });
	if (result.isError) throw new Error(`${name}: ${JSON.stringify(result.content)}`);
	return result.structuredContent;
}

async function write(url, token, text) {
	const client = await connect(url);
	try {
		await call(client, 'memory_remember', { content: text, tier: 'semantic' });
	} finally {
		await client.close();
	}
}

async function read(url, tokens) {
	const client = await connect(url);
	try {
		const out = {};
		for (const t of tokens) out[t] = (await call(client, 'memory_recall', { query: t, limit: 5 })).records.map((r) => r.content);
		return out;
	} finally {
		await client.close();
	}
}

await main(write, read);
