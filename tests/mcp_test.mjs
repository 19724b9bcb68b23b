// mcp_test.mjs A2M_BINARY — `a2m mcp` end to end, driven by the official MCP
// TypeScript SDK client (@modelcontextprotocol/sdk, installed by `npm ci`):
// the handshake, tools/list derived from the capabilities the memory
// declares, tool calls and their results, errors as isError results, an
// unknown tool as a protocol error, the embedded store and remote servers
// (stdio, and HTTP when `a2m serve --http` exists). Then the few things the
// SDK cannot send (an old protocol version, a batch) over a raw pipe.
// Prints "ok"/"FAIL" per check and "N passed, M failed".
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ErrorCode, McpError, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { check, expect, fail, finish, ok } from './lib.mjs';

const a2m = resolve(process.argv[2] ?? 'build/a2m');
const dir = mkdtempSync(join(tmpdir(), 'a2m-mcp-'));

// Connects the SDK client to `a2m mcp ARGS...`; stderr is kept for the logs.
async function connect(args) {
	const transport = new StdioClientTransport({ command: a2m, args: ['mcp', ...args], stderr: 'pipe' });
	let stderr = '';
	transport.stderr?.on('data', (d) => { stderr += d; });
	const client = new Client({ name: 'a2m-mcp-test', version: '1.0.0' });
	await client.connect(transport);
	return { client, stderr: () => stderr };
}

const text = (result) => (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');

// ---- the embedded store, every capability declared ----
async function embeddedSuite() {
	const { client } = await connect(['--memory']);
	expect('serverInfo names a2m', client.getServerVersion()?.name, 'a2m');
	check('serverInfo carries a version', typeof client.getServerVersion()?.version === 'string');
	check('capabilities declare tools', client.getServerCapabilities()?.tools !== undefined);
	check('instructions point at memory_recall', /memory_recall/.test(client.getInstructions() ?? ''));
	await client.ping();
	ok('ping answers');

	const { tools } = await client.listTools();
	const names = tools.map((t) => t.name).sort();
	expect('tools follow the declared capabilities', names, [
		'memory_consolidate', 'memory_events', 'memory_fetch', 'memory_forget', 'memory_promote',
		'memory_recall', 'memory_reinforce', 'memory_remember', 'memory_session_close',
		'memory_session_list', 'memory_summarize', 'memory_timeline',
	]);
	const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
	check('every inputSchema is an object schema', tools.every((t) => t.inputSchema?.type === 'object'));
	check('every tool has a description', tools.every((t) => (t.description ?? '').length > 40));
	expect('remember requires content', byName.memory_remember.inputSchema.required, ['content']);
	expect('remember tier is an enum of the real tiers', byName.memory_remember.inputSchema.properties.tier.enum,
		['working', 'episodic', 'semantic', 'procedural']);
	expect('fetch requires key', byName.memory_fetch.inputSchema.required, ['key']);
	check('recall says it searches by relevance', /search memory by relevance/i.test(byName.memory_recall.description));
	check('timeline says it replays in order', /replay/i.test(byName.memory_timeline.description));
	check('recall is annotated read-only', byName.memory_recall.annotations?.readOnlyHint === true);
	check('forget is annotated destructive', byName.memory_forget.annotations?.destructiveHint === true);
	check('tools carry an outputSchema (2025-06-18 and later)', tools.every((t) => t.outputSchema?.type === 'object'));
	check('recall limit has the server maximum', byName.memory_recall.inputSchema.properties.limit.maximum === 1000);

	// remember, then recall what was remembered
	let r = await client.callTool({ name: 'memory_remember', arguments: {
		content: 'The deploy key rotates every 90 days', role: 'user', metadata: { topic: 'ops' } } });
	check('remember succeeds', !r.isError, text(r));
	const id = r.structuredContent?.ids?.[0];
	check('remember returns the id as structuredContent', typeof id === 'string' && id.length > 0);
	check('remember says the id in its text', text(r).includes(id));
	await client.callTool({ name: 'memory_remember', arguments: { content: 'The office plant needs water on Mondays' } });

	r = await client.callTool({ name: 'memory_recall', arguments: { query: 'how often does the deploy key rotate?' } });
	check('recall succeeds', !r.isError, text(r));
	expect('recall finds what was remembered first', r.structuredContent?.records?.[0]?.content,
		'The deploy key rotates every 90 days');
	expect('recall returns the same id', r.structuredContent?.records?.[0]?.id, id);
	expect('metadata round-trips', r.structuredContent?.records?.[0]?.metadata, { topic: 'ops' });
	check('recall text shows content and id', text(r).includes('deploy key rotates') && text(r).includes(id));
	check('recall text shows a score', /score \d\.\d{3}/.test(text(r)));

	r = await client.callTool({ name: 'memory_timeline', arguments: {} });
	expect('timeline replays oldest first', r.structuredContent?.records?.map((x) => x.content),
		['The deploy key rotates every 90 days', 'The office plant needs water on Mondays']);
	r = await client.callTool({ name: 'memory_timeline', arguments: { limit: 1 } });
	expect('timeline limit takes the newest', r.structuredContent?.records?.map((x) => x.content),
		['The office plant needs water on Mondays']);

	// a client id makes a retry safe (DECISIONS 011)
	for (let i = 0; i < 2; i++)
		r = await client.callTool({ name: 'memory_remember', arguments: { content: 'said once', id: 'retry-1' } });
	expect('a retried remember with the same id returns it', r.structuredContent?.ids, ['retry-1']);
	r = await client.callTool({ name: 'memory_recall', arguments: { query: 'said once', where: { id: 'retry-1' } } });
	expect('a retried remember stores one record', r.structuredContent?.records?.length, 1);

	// keys: fetch and replacement
	await client.callTool({ name: 'memory_remember', arguments: { content: 'The user lives in Rome', key: 'user/city' } });
	await client.callTool({ name: 'memory_remember', arguments: { content: 'The user lives in Milan', key: 'user/city' } });
	r = await client.callTool({ name: 'memory_fetch', arguments: { key: 'user/city' } });
	expect('fetch reads the replaced fact', r.structuredContent?.record?.content, 'The user lives in Milan');
	expect('fetch shows the revision', r.structuredContent?.record?.revision, 1);
	r = await client.callTool({ name: 'memory_fetch', arguments: { key: 'user/unknown' } });
	check('fetch of an unused key is not an error', !r.isError && r.structuredContent?.record === null, JSON.stringify(r));

	// invalid arguments are tool errors, not protocol errors
	r = await client.callTool({ name: 'memory_recall', arguments: { limit: 'ten' } });
	check('a wrong argument type is an isError result', r.isError === true);
	expect('its structuredContent carries INVALID_PARAMS', r.structuredContent?.error?.code, -32602);
	check('its text names the argument', /'limit'/.test(text(r)), text(r));
	r = await client.callTool({ name: 'memory_remember', arguments: { role: 'user' } });
	check('a missing required argument is an isError result', r.isError === true && /'content' is required/.test(text(r)), text(r));
	r = await client.callTool({ name: 'memory_remember', arguments: { content: 'x', tier: 'attic' } });
	check('a tier outside the enum is an isError result', r.isError === true && /working/.test(text(r)), text(r));

	// an A2M error becomes an isError result with its code
	r = await client.callTool({ name: 'memory_forget', arguments: {} });
	check('forget without a selector is an isError result', r.isError === true);
	expect('the A2M code reaches structuredContent', r.structuredContent?.error?.code, -32602);
	check('the A2M code is in the text', text(r).includes('-32602'), text(r));
	r = await client.callTool({ name: 'memory_recall', arguments: { where: { topic: { deep: 1 } } } });
	check('an A2M refusal of a where value is an isError result', r.isError === true && r.structuredContent?.error?.code === -32602, JSON.stringify(r));

	// forget by id
	r = await client.callTool({ name: 'memory_forget', arguments: { ids: [id] } });
	expect('forget by id removes one record', r.structuredContent?.forgotten, 1);
	r = await client.callTool({ name: 'memory_recall', arguments: { query: 'deploy key' } });
	check('a forgotten record is not recalled', !(r.structuredContent?.records ?? []).some((x) => x.id === id));

	// events, sessions, tiers, salience
	r = await client.callTool({ name: 'memory_events', arguments: {} });
	const cursor = r.structuredContent?.cursor;
	check('events without a cursor returns one', typeof cursor === 'string', JSON.stringify(r));
	await client.callTool({ name: 'memory_remember', arguments: { content: 'Ticket 7 was closed', session: 's-1' } });
	r = await client.callTool({ name: 'memory_events', arguments: { cursor } });
	expect('events since the cursor show the write', r.structuredContent?.events?.map((e) => e.kind), ['written']);
	r = await client.callTool({ name: 'memory_timeline', arguments: { session: 's-1' } });
	expect('timeline of one session', r.structuredContent?.records?.map((x) => x.content), ['Ticket 7 was closed']);
	r = await client.callTool({ name: 'memory_session_list', arguments: {} });
	expect('session list names the session', r.structuredContent?.sessions?.map((s) => s.session), ['s-1']);
	r = await client.callTool({ name: 'memory_session_close', arguments: { session: 's-1' } });
	check('session close flushes working memory', !r.isError && r.structuredContent?.flushed === 1, JSON.stringify(r.structuredContent));
	r = await client.callTool({ name: 'memory_remember', arguments: { content: 'Promote me', tier: 'episodic' } });
	const pid = r.structuredContent?.ids?.[0];
	r = await client.callTool({ name: 'memory_promote', arguments: { ids: [pid], tier: 'semantic' } });
	expect('promote moves the record', r.structuredContent?.promoted, 1);
	r = await client.callTool({ name: 'memory_reinforce', arguments: { ids: [pid], amount: 2 } });
	expect('reinforce counts the record', r.structuredContent?.reinforced, 1);
	r = await client.callTool({ name: 'memory_consolidate', arguments: {} });
	check('consolidate reports counts', !r.isError && typeof r.structuredContent?.counts === 'object', JSON.stringify(r));

	// an unknown tool is a protocol error (-32602 per MCP)
	try {
		await client.callTool({ name: 'memory_teleport', arguments: {} });
		fail('an unknown tool is a JSON-RPC error', 'it answered');
	} catch (e) {
		check('an unknown tool is a JSON-RPC error -32602', e instanceof McpError && e.code === ErrorCode.InvalidParams, String(e));
	}
	await client.close();
}

// ---- capabilities decide the tools ----
async function coreSuite() {
	const { client } = await connect(['--memory', '--capabilities', 'core']);
	const { tools } = await client.listTools();
	expect('a core-only memory has the four core tools', tools.map((t) => t.name).sort(),
		['memory_forget', 'memory_recall', 'memory_remember', 'memory_timeline']);
	check('fetch is absent without keys', !tools.some((t) => t.name === 'memory_fetch'));
	const remember = tools.find((t) => t.name === 'memory_remember');
	check('no tier argument without tiers', remember && !('tier' in remember.inputSchema.properties));
	check('no key argument without keys', remember && !('key' in remember.inputSchema.properties));
	try {
		await client.callTool({ name: 'memory_fetch', arguments: { key: 'a' } });
		fail('an undeclared capability\'s tool is unknown', 'it answered');
	} catch (e) {
		check('an undeclared capability\'s tool is unknown (-32602)', e instanceof McpError && e.code === -32602, String(e));
	}
	const r = await client.callTool({ name: 'memory_remember', arguments: { content: 'core works' } });
	check('remember works on a core-only memory', !r.isError, text(r));
	await client.close();
}

// ---- --owner: the bridge, not the model, says whose memory it is ----
// ---- a read-only memory: only the tools that read ----
async function readOnlySuite() {
	const db = join(dir, 'read-only.db');
	const writer = (await connect(['--db', db])).client;
	await writer.callTool({ name: 'memory_remember', arguments: { content: 'Read me, do not write me' } });
	await writer.close();
	const { client } = await connect(['--db', db, '--read-only']);
	const names = (await client.listTools()).tools.map((t) => t.name).sort();
	expect('a read-only memory offers only the tools that read', names, [
		'memory_events', 'memory_fetch', 'memory_recall', 'memory_session_list', 'memory_timeline',
	]);
	const r = await client.callTool({ name: 'memory_remember', arguments: { content: 'x' } })
		.catch((e) => e);
	check('remember is an unknown tool there (-32602)', r instanceof McpError && r.code === ErrorCode.InvalidParams,
		String(r?.message ?? JSON.stringify(r)));
	const found = await client.callTool({ name: 'memory_recall', arguments: { query: 'read me' } });
	expect('recall still reads it', found.structuredContent?.records?.[0]?.content, 'Read me, do not write me');
	await client.close();
}

async function ownerSuite() {
	const { client } = await connect(['--memory', '--owner', 'alice']);
	const { tools } = await client.listTools();
	check('no tool takes an owner argument', tools.every((t) => !('owner' in (t.inputSchema.properties ?? {}))));
	await client.callTool({ name: 'memory_remember', arguments: { content: 'alice prefers tea', tier: 'semantic' } });
	const r = await client.callTool({ name: 'memory_recall', arguments: { query: 'tea' } });
	expect('--owner is the owner of what the model remembers', r.structuredContent?.records?.[0]?.owner, 'alice');
	await client.close();
}

// ---- a remote server over stdio ----
async function stdioSuite() {
	const { client } = await connect(['--stdio', a2m, 'serve', '--memory']);
	const { tools } = await client.listTools();
	check('over --stdio the tools come from the remote describe', tools.some((t) => t.name === 'memory_fetch'));
	let r = await client.callTool({ name: 'memory_remember', arguments: { content: 'remote memory works', role: 'user' } });
	check('remember through a remote stdio server', !r.isError, text(r));
	r = await client.callTool({ name: 'memory_recall', arguments: { query: 'remote memory' } });
	expect('recall through a remote stdio server', r.structuredContent?.records?.[0]?.content, 'remote memory works');
	r = await client.callTool({ name: 'memory_forget', arguments: {} });
	expect('a remote A2M error is an isError result', [r.isError, r.structuredContent?.error?.code], [true, -32602]);
	await client.close();
}

// ---- a remote server over HTTP, when this build serves HTTP ----
async function httpSuite() {
	const server = spawn(a2m, ['serve', '--http', '127.0.0.1:0', '--memory'], { stdio: ['ignore', 'ignore', 'pipe'] });
	let log = '';
	const url = await new Promise((res) => {
		const timer = setTimeout(() => res(null), 5000);
		server.stderr.on('data', (d) => {
			log += d;
			const m = /listening on (http:\/\/\S+)/.exec(log);
			if (m) { clearTimeout(timer); res(m[1]); }
		});
		server.on('exit', () => { clearTimeout(timer); res(null); });
	});
	if (!url) {
		console.log('skip the HTTP suite: this build does not serve HTTP');
		server.kill();
		return;
	}
	try {
		const { client } = await connect(['--http', url]);
		const { tools } = await client.listTools();
		check('over --http the tools come from the remote describe', tools.some((t) => t.name === 'memory_recall'));
		let r = await client.callTool({ name: 'memory_remember', arguments: { content: 'remembered over http' } });
		check('remember through an HTTP server', !r.isError, text(r));
		r = await client.callTool({ name: 'memory_recall', arguments: { query: 'remembered over http' } });
		expect('recall through an HTTP server', r.structuredContent?.records?.[0]?.content, 'remembered over http');
		await client.close();
	} finally {
		server.kill('SIGTERM');
	}
}

// ---- persistence: the default embedded store is a file ----
async function persistenceSuite() {
	const db = join(dir, 'sub', 'memory.db');
	let { client } = await connect(['--db', db]);
	await client.callTool({ name: 'memory_remember', arguments: { content: 'kept across restarts' } });
	await client.close();
	({ client } = await connect(['--db', db]));
	const r = await client.callTool({ name: 'memory_recall', arguments: { query: 'kept across restarts' } });
	expect('a --db store keeps memories across restarts (its directory created)', r.structuredContent?.records?.[0]?.content,
		'kept across restarts');
	await client.close();
}

// ---- what the SDK never sends: raw lines over a pipe ----
function raw(lines, args = ['--memory']) {
	return new Promise((res) => {
		const p = spawn(a2m, ['mcp', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
		let out = '';
		p.stdout.on('data', (d) => { out += d; });
		// A bridge that refuses its arguments exits before reading: the
		// write then fails with EPIPE, which is its answer, not the test's.
		p.stdin.on('error', () => {});
		p.on('exit', (code) => res({ code, lines: out.split('\n').filter(Boolean) }));
		p.stdin.end(lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l)) + '\n').join(''));
	});
}

async function rawSuite() {
	const init = (v) => ({ jsonrpc: '2.0', id: 1, method: 'initialize',
		params: { protocolVersion: v, capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });
	let { code, lines } = await raw([init('2024-11-05'), { jsonrpc: '2.0', method: 'notifications/initialized' },
		{ jsonrpc: '2.0', id: 2, method: 'tools/list' }]);
	let msgs = lines.map((l) => JSON.parse(l));
	expect('end of input exits 0', code, 0);
	expect('a notification gets no reply', msgs.length, 2);
	expect('a supported older version is echoed', msgs[0]?.result?.protocolVersion, '2024-11-05');
	check('2024-11-05 tools carry no outputSchema', msgs[1]?.result?.tools?.every((t) => !('outputSchema' in t)));
	check('2024-11-05 tools carry no annotations', msgs[1]?.result?.tools?.every((t) => !('annotations' in t)));

	// A whole session of calls, successes and failures, ends with exit 0 —
	// which under the sanitizer build also means nothing leaked.
	const call = (id, name, args) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
	({ code, lines } = await raw([init('2025-11-25'), call(2, 'memory_remember', { content: 'a', key: 'k/1', metadata: { x: [1, 2.5] } }),
		call(3, 'memory_recall', { query: 'a', limit: 3.0 }), call(4, 'memory_recall', { limit: 'x' }),
		call(5, 'memory_teleport', {}), call(6, 'memory_forget', {}), call(7, 'memory_fetch', { key: 'k/1' }),
		call(8, 'memory_timeline', { session: 's', where: { role: 'user' } }), call(9, 'memory_events', {}),
		call(10, 'memory_summarize', { query: 'a' }), { jsonrpc: '2.0', id: 11, method: 'tools/call', params: { name: 'memory_fetch', arguments: [1] } }],
		['--db', join(dir, 'session.db')]));
	expect('a session of tool calls answers every request', lines.length, 11);
	expect('a session of tool calls ends with exit 0', code, 0);

	({ lines } = await raw([init('1999-01-01')]));
	expect('an unknown version is answered with our latest', JSON.parse(lines[0]).result?.protocolVersion, LATEST_PROTOCOL_VERSION);
	({ lines } = await raw([init('2025-03-26'), { jsonrpc: '2.0', id: 2, method: 'tools/list' }]));
	msgs = lines.map((l) => JSON.parse(l));
	check('2025-03-26 tools carry annotations but no outputSchema',
		msgs[1]?.result?.tools?.every((t) => t.annotations && !('outputSchema' in t)));

	({ lines } = await raw(['{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}', 'not json',
		'[{"jsonrpc":"2.0","id":3,"method":"ping"}]', '{"jsonrpc":"2.0","id":"s","method":"resources/list"}',
		'{"jsonrpc":"2.0","id":5,"method":"ping"}']));
	msgs = lines.map((l) => JSON.parse(l));
	expect('initialize without protocolVersion is -32602', msgs[0]?.error?.code, -32602);
	expect('bad JSON is -32700 with id null', [msgs[1]?.error?.code, msgs[1]?.id], [-32700, null]);
	expect('a batch is -32600', msgs[2]?.error?.code, -32600);
	expect('another method is -32601, echoing a string id', [msgs[3]?.error?.code, msgs[3]?.id], [-32601, 's']);
	expect('serving goes on after errors', msgs[4]?.result, {});
	check('stdout carries only JSON-RPC', lines.every((l) => JSON.parse(l).jsonrpc === '2.0'));

	// SIGTERM ends the bridge cleanly, like end of input.
	code = await new Promise((res) => {
		const p = spawn(a2m, ['mcp', '--db', join(dir, 'term.db')], { stdio: ['pipe', 'pipe', 'ignore'] });
		p.stdout.once('data', () => p.kill('SIGTERM'));
		p.on('exit', (c, sig) => res(sig ?? c));
		p.stdin.write(JSON.stringify(init('2025-06-18')) + '\n');
	});
	expect('SIGTERM exits 0', code, 0);

	({ code } = await raw([], ['--bogus']));
	expect('a bad option exits 2', code, 2);
	({ code } = await raw([], ['--db', join(dir, 'x.db'), '--capabilities', 'nonsense']));
	expect('a store that cannot open exits 1', code, 1);
}

try {
	for (const suite of [embeddedSuite, coreSuite, readOnlySuite, ownerSuite, stdioSuite, httpSuite, persistenceSuite, rawSuite]) {
		try {
			await suite();
		} catch (e) {
			fail(suite.name, e?.stack ?? String(e));
		}
	}
} finally {
	rmSync(dir, { recursive: true, force: true });
}
finish();
