// The participant side of the interop grid's protocol (tests/interop/
// README.md), for participants written in JavaScript; the same contract as
// interop_protocol.py:
//
//   CMD write   stdin {"token": T, "text": X}   stdout {"session": S?}
//   CMD read    stdin {"tokens": [T, ...]}      stdout {"read": {T: [text, ...]}}
//
// with the server's URL in $A2M_URL.
import { A2MClient } from '../../../clients/node/index.js';

// Standard output carries the answer alone: what a framework logs through
// the console goes to standard error (console methods are looked up when
// called, so this covers modules imported before this one).
for (const level of ['log', 'info', 'debug']) console[level] = console.error;

export async function main(write, read) {
	const chunks = [];
	for await (const chunk of process.stdin) chunks.push(chunk);
	const request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
	const url = process.env.A2M_URL;
	let out;
	if (process.argv[2] === 'write' && process.argv.length === 3) {
		out = (await write(url, request.token, request.text)) ?? {};
	} else if (process.argv[2] === 'read' && process.argv.length === 3) {
		out = { read: await read(url, request.tokens) };
	} else {
		console.error('usage: PARTICIPANT write|read  (JSON on stdin)');
		process.exit(2);
	}
	process.stdout.write(JSON.stringify(out) + '\n');
}

/** Runs fn(client) on a Node client of the server at `url`, closed whatever happens. */
export async function withClient(url, fn) {
	const memory = await A2MClient.http(url);
	try {
		return await fn(memory);
	} finally {
		await memory.close();
	}
}

/** {token: await fn(token)} for every token, one after the other. */
export async function eachToken(tokens, fn) {
	const out = {};
	for (const t of tokens) out[t] = await fn(t);
	return out;
}
