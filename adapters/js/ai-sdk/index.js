// ai-sdk/index.js — Vercel AI SDK: memoryTools, the tools remember, recall
// and forget over A2M's searchable memory, for generateText / streamText and
// agents (ToolLoopAgent) to call.
//
// Imports `ai` and nothing else of any framework. The SDK has no memory
// interface of its own: an agent's long-term memory is what its tools give
// it, so the mapping is three tools:
//
// * remember({fact}) writes a record into the first semantic tier (where a
//   search finds it, DECISIONS 007) under the key ai-sdk/<uuid>, and
//   answers with its id.
// * recall({query}) searches every searchable record in the store, whoever
//   wrote it, leaving working memory out, and answers with each record's
//   id, text and score.
// * forget({ids}) deletes records by id, but only those under the tools'
//   namespace (DECISIONS 023: a namespace scopes what an adapter deletes,
//   never what it reads): a record another framework wrote is read, never
//   deleted, whatever id the model names.
import { randomUUID } from 'node:crypto';
import { jsonSchema, tool } from 'ai';
import { Layout, Namespace, requireCapabilities, stringParameter } from '../memory.js';

/**
 * The tool set { remember, recall, forget } over `client`'s store, for
 * `generateText({tools})` or `new ToolLoopAgent({tools})`. Options:
 * `namespace` (key prefix written and deleted under, default "ai-sdk"),
 * `tier` (default: the first semantic tier), `limit` (records a recall
 * returns, default 5). The server must declare `keys`.
 */
export function memoryTools(client, { namespace = 'ai-sdk', tier, limit = 5 } = {}) {
	requireCapabilities(client, ['keys'], 'the AI SDK memory tools');
	const layout = new Layout(client);
	const where = layout.searchWhere();
	const into = tier ?? layout.tierOf('semantic');
	const ns = new Namespace(namespace);
	if (!ns.prefix) throw new Error('memoryTools needs a namespace: forget deletes only under it');

	const remember = tool({
		description: 'Store one fact in long-term memory, shared with other agents. Returns its id.',
		inputSchema: jsonSchema(stringParameter('fact', 'One self-contained sentence.')),
		async execute({ fact }) {
			const record = { content: fact, key: ns.key(randomUUID()) };
			if (into) record.tier = into;
			const { ids } = await client.remember([record]);
			return { id: ids[0] };
		},
	});

	const recall = tool({
		description: 'Search long-term memory, shared with other agents, for facts relevant to the query.',
		inputSchema: jsonSchema(stringParameter('query', 'What to look for, in a few words.')),
		async execute({ query }) {
			const { records } = await client.recall({ query, limit, where });
			return { memories: records.map((r) => ({ id: r.id, content: r.content, score: r.score })) };
		},
	});

	const forget = tool({
		description: 'Delete memories this agent stored, by the ids recall or remember returned.',
		inputSchema: jsonSchema({
			type: 'object',
			properties: { ids: { type: 'array', items: { type: 'string' }, description: 'Memory ids.' } },
			required: ['ids'],
			additionalProperties: false,
		}),
		async execute({ ids }) {
			if (!ids.length) return { forgotten: 0 };
			// ids AND key_prefix: only the named records that are this namespace's.
			return { forgotten: (await client.forget({ ids, key_prefix: ns.prefix })).forgotten };
		},
	});

	return { remember, recall, forget };
}
