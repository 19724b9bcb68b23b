// helpers.js — what the JavaScript adapters' tests share: a fresh memory
// per test (`a2m serve --memory` over stdio) and the Node client's own
// HTTP server helper. Imports no framework.
import { A2MClient } from 'a2m-client';
import { A2M, startHttp, tempDir } from '../../../clients/node/test/helpers.js';

export { A2M, startHttp, tempDir };

/** A client of a fresh `a2m serve --memory ARGS` over stdio; close() ends the server. */
export function memory(args = []) {
	return A2MClient.stdio(A2M, ['serve', '--memory', ...args], { stderr: 'pipe' });
}

/** Runs fn(client) against a fresh memory and closes it whatever happens. */
export async function withMemory(fn, args = []) {
	const client = await memory(args);
	try {
		return await fn(client);
	} finally {
		await client.close();
	}
}

/** The first tier of `kind` in the client's store. */
export function tierOf(client, kind) {
	return client.description.tiers.find((t) => t.kind === kind).name;
}
