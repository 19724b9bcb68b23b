// openai-agents/index.js — OpenAI Agents SDK (JavaScript): A2MSession (a
// conversation, replayed by the Runner) and memoryTools (recall and
// remember, for an agent to call).
//
// Imports @openai/agents and nothing else of any framework. The Python
// adapter's mapping (docs/FRAMEWORKS.md):
//
// * A session's items are the records of one A2M session in the working
//   tier, in order: each item is kept whole in metadata.openai_agents, so
//   the Runner gets back exactly what it stored, and its text is the
//   record's content, so other frameworks read it once the session is
//   closed (closeSession(), spec §4.11). A function call and its result
//   share a `group` (§3.4).
// * The SDK has no long-term memory interface besides sessions, so
//   searchable memory is offered as two function tools: recall_memory
//   searches every searchable record (working memory left out, DECISIONS
//   007); remember_fact writes a fact into the semantic tier under the
//   adapter's namespace.
import { randomUUID } from 'node:crypto';
import { tool } from '@openai/agents';
import { Layout, Namespace, requireCapabilities, stringParameter } from '../memory.js';

/** The metadata key under which an item is kept as the SDK gave it. */
export const MARKER = 'openai_agents';

const ROLES = new Set(['user', 'assistant', 'system', 'developer']);

function partsText(content) {
	if (typeof content === 'string') return content;
	if (!Array.isArray(content)) return content && typeof content.text === 'string' ? content.text : '';
	return content.map((p) => (typeof p === 'string' ? p : p?.text ?? p?.refusal)).filter((t) => typeof t === 'string').join('\n');
}

/** What a search ranks an item by: a message's text, a call's name and arguments, a result's output. */
export function itemText(item) {
	const type = item.type ?? 'message';
	if (type === 'message' && 'role' in item) return partsText(item.content);
	if (type === 'function_call') return `${item.name}(${item.arguments ?? ''})`;
	if (type === 'function_call_result') return partsText(item.output);
	if (type === 'reasoning') return partsText(item.content);
	return JSON.stringify(item);
}

function roleOf(item) {
	if (typeof item.role === 'string') return item.role;
	return item.type === 'function_call_result' ? 'tool' : 'assistant';
}

/** An input item from a record: as the SDK stored it, or a message in its role for a record another framework wrote. */
export function itemOf(record) {
	const stored = record.metadata?.[MARKER];
	if (stored && typeof stored === 'object') return stored;
	const role = ROLES.has(record.role) ? record.role : 'user';
	return { role, content: record.content ?? '' };
}

/**
 * A Session (the SDK's interface) whose items are the records of session
 * `sessionId` in the working tier of an A2M memory. Writes and deletes
 * touch that session only. The server must declare `sessions`.
 */
export class A2MSession {
	constructor(client, sessionId, { tier } = {}) {
		requireCapabilities(client, ['sessions'], 'A2MSession');
		this.client = client;
		this.sessionId = sessionId;
		this.tier = tier ?? new Layout(client).working;
	}

	async getSessionId() {
		return this.sessionId;
	}

	async #records(limit) {
		return (await this.client.timeline({ where: { session: this.sessionId }, tier: this.tier, limit })).records;
	}

	/** The session's items, oldest first; with `limit`, the latest `limit` of them (still oldest first, §4.4). */
	async getItems(limit) {
		if (limit !== undefined && limit <= 0) return [];
		return (await this.#records(limit)).map(itemOf);
	}

	async addItems(items) {
		const records = items.map((item) => {
			const plain = JSON.parse(JSON.stringify(item));
			const record = {
				content: itemText(plain) || `(${plain.type ?? 'message'})`,
				role: roleOf(plain),
				session: this.sessionId,
				metadata: { [MARKER]: plain },
			};
			if (plain.callId) record.group = `${this.sessionId}/call/${plain.callId}`;
			if (this.tier) record.tier = this.tier;
			return record;
		});
		if (records.length) await this.client.remember(records);
	}

	async popItem() {
		const [last] = await this.#records(1);
		if (!last) return undefined;
		await this.client.forget({ ids: [last.id] });
		return itemOf(last);
	}

	async clearSession() {
		await this.client.forget({ where: { session: this.sessionId }, tier: this.tier });
	}

	/** Ends the conversation (memory/session/close): its items leave working memory for the searchable tiers. */
	closeSession() {
		return this.client.sessionClose(this.sessionId);
	}
}

/**
 * recall_memory and remember_fact, function tools over the store's
 * searchable memory, for `new Agent({tools})`. recall_memory reads every
 * searchable record, whoever wrote it; remember_fact writes into `tier`
 * (default: the first semantic tier) with a key under `namespace`.
 */
export function memoryTools(client, { namespace = 'openai-agents', tier, limit = 5 } = {}) {
	const layout = new Layout(client);
	const where = layout.searchWhere();
	const into = tier ?? layout.tierOf('semantic');
	const ns = new Namespace(namespace);
	const keyed = client.supports('keys');
	const recall = tool({
		name: 'recall_memory',
		description: 'Search long-term memory, shared with other agents, for facts relevant to the query.',
		parameters: stringParameter('query', 'What to look for, in a few words.'),
		strict: true,
		async execute({ query }) {
			const { records } = await client.recall({ query, limit, where });
			if (!records.length) return 'Nothing in memory matches.';
			return records.map((r) => `- ${r.content}`).join('\n');
		},
	});
	const remember = tool({
		name: 'remember_fact',
		description: 'Store a fact in long-term memory, shared with other agents.',
		parameters: stringParameter('fact', 'One self-contained sentence.'),
		strict: true,
		async execute({ fact }) {
			const record = { content: fact };
			if (into) record.tier = into;
			if (keyed) record.key = ns.key(randomUUID());
			await client.remember([record]);
			return 'Remembered.';
		},
	});
	return [recall, remember];
}
