// mastra/index.js — Mastra: A2MStore, the storage @mastra/memory's Memory
// keeps threads, messages and working memory in, and memoryTools, recall
// and remember as Mastra tools.
//
// Imports @mastra/core (and zod, which Mastra's tools take their schemas
// in) and nothing else of any framework. Why the storage
// rather than a vector store: every Memory has a storage (threads and the
// last messages are on by default, working memory is one option away),
// while semantic recall needs an embedding model besides, and Memory's
// semantic recall itself reads its hits back from the storage by message
// id. With the storage in A2M a Mastra agent's conversations and what it
// learnt about its user are records every other framework reads:
//
// * A thread is an A2M session (thread id = session). Its messages are
//   records of that session in the working tier, keyed
//   mastra/messages/<id> (saving a message again replaces it), role and
//   text as the record's, the whole Mastra message (format 2) in
//   metadata.mastra_message. A thread is read back across every tier,
//   ordered by Mastra's createdAt: turns the tier policy spilled out of
//   working memory, and turns another framework wrote into the session,
//   are still the thread's. Closing the session (closeThread(), spec
//   §4.11) moves the conversation where every framework's search finds it
//   (DECISIONS 007).
// * The thread itself is a record keyed mastra/threads/<id> in the same
//   session (title as content, the thread in metadata.mastra_thread).
// * A resource (the user working memory is about) is a fact: keyed
//   mastra/resources/<id> in the first semantic tier, its working memory
//   as the content, so other frameworks find what the agent learnt.
// * Deletes stay in the mastra/ namespace (DECISIONS 023): deleteThread
//   removes Mastra's records of that session, never a turn another
//   framework wrote into it.
//
// Workflows, traces, evals and scores are not memory: A2MStore refuses
// them with an error saying so. Give `new Mastra({storage})` a storage of
// its own for those, and this one to `new Memory({storage})`.
import { randomUUID } from 'node:crypto';
import { MessageList } from '@mastra/core/agent';
import { MastraStorage } from '@mastra/core/storage';
import { createTool } from '@mastra/core/tools';
import { z } from 'zod';
import { Layout, Namespace, escapeLabel, requireCapabilities } from '../memory.js';

const KIND = 'mastra_kind';
const ROLES = new Set(['user', 'assistant', 'system']);

/** The text of a Mastra message (format 2): its content string, else its text parts. */
function messageText(message) {
	const content = message.content;
	if (typeof content === 'string') return content;
	if (typeof content?.content === 'string' && content.content) return content.content;
	const parts = (content?.parts ?? []).map((p) => (p.type === 'text' ? p.text
		: p.type === 'tool-invocation' ? `${p.toolInvocation.toolName}(${JSON.stringify(p.toolInvocation.args)})` : ''));
	return parts.filter(Boolean).join('\n');
}

const time = (value) => (value instanceof Date ? value : new Date(value ?? Date.now()));
const iso = (value) => time(value).toISOString();

function notMemory(what) {
	return new Error(`A2MStore keeps Memory's threads, messages and resources; ${what} is not memory: give Mastra another storage for it`);
}

/**
 * Mastra storage over an A2M memory, for `new Memory({storage})`. `client`
 * is an A2MClient whose server declares `sessions` and `keys`. Options:
 * `namespace` (key prefix of everything written and deleted, default
 * "mastra").
 */
export class A2MStore extends MastraStorage {
	constructor(client, { namespace = 'mastra' } = {}) {
		super({ name: 'A2MStore' });
		requireCapabilities(client, ['sessions', 'keys'], 'A2MStore');
		this.client = client;
		this.layout = new Layout(client);
		this.namespace = new Namespace(namespace);
		if (!this.namespace.prefix) throw new Error('A2MStore needs a namespace: deletes stay under it');
	}

	get supports() {
		return { selectByIncludeResourceScope: true, resourceWorkingMemory: true, hasColumn: false,
			createTable: false, deleteMessages: true };
	}

	/** Nothing to create: the server has its own schema. */
	async init() {}

	#key(kind, id) {
		return this.namespace.key(`${kind}/${escapeLabel(id)}`);
	}

	// ------------------------------------------------------------ threads

	#threadOf(record) {
		const t = record.metadata.mastra_thread;
		return { ...t, createdAt: time(t.createdAt), updatedAt: time(t.updatedAt) };
	}

	async #writeThread(thread) {
		const stored = { ...thread, createdAt: iso(thread.createdAt), updatedAt: iso(thread.updatedAt) };
		const record = {
			key: this.#key('threads', thread.id),
			content: thread.title ? `Conversation: ${thread.title}` : `Conversation ${thread.id}`,
			role: 'system',
			session: thread.id,
			metadata: { [KIND]: 'thread', mastra_resource_id: thread.resourceId, mastra_thread: stored },
		};
		if (this.layout.working) record.tier = this.layout.working;
		await this.client.remember([record]);
		return this.#threadOf(record);
	}

	async getThreadById({ threadId }) {
		const { record } = await this.client.fetch(this.#key('threads', threadId));
		return record?.metadata?.mastra_thread ? this.#threadOf(record) : null;
	}

	async saveThread({ thread }) {
		return this.#writeThread(thread);
	}

	async updateThread({ id, title, metadata }) {
		const thread = await this.getThreadById({ threadId: id });
		if (!thread) throw new Error(`Thread with id ${id} not found`);
		return this.#writeThread({ ...thread, title, metadata: { ...thread.metadata, ...metadata }, updatedAt: new Date() });
	}

	async #threads(resourceId, orderBy = 'createdAt', sortDirection = 'DESC') {
		const { records } = await this.client.timeline({
			where: { [KIND]: 'thread', mastra_resource_id: resourceId },
			key_prefix: this.namespace.key('threads/'), limit: this.layout.maxRecall,
		});
		const field = orderBy === 'updatedAt' ? 'updatedAt' : 'createdAt';
		const sign = sortDirection === 'ASC' ? 1 : -1;
		return records.map((r) => this.#threadOf(r)).sort((a, b) => sign * (a[field] - b[field]));
	}

	async getThreadsByResourceId({ resourceId, orderBy, sortDirection }) {
		return this.#threads(resourceId, orderBy, sortDirection);
	}

	async getThreadsByResourceIdPaginated({ resourceId, page = 0, perPage = 100, orderBy, sortDirection }) {
		const threads = await this.#threads(resourceId, orderBy, sortDirection);
		return { threads: threads.slice(page * perPage, (page + 1) * perPage), total: threads.length, page, perPage,
			hasMore: threads.length > (page + 1) * perPage };
	}

	/** Deletes the thread and Mastra's messages in it; turns other frameworks wrote into the session stay. */
	async deleteThread({ threadId }) {
		await this.client.forget({ where: { session: threadId }, key_prefix: this.namespace.prefix });
	}

	/** Ends the conversation (memory/session/close): it leaves working memory for the searchable tiers. */
	closeThread(threadId) {
		return this.client.sessionClose(threadId);
	}

	// ------------------------------------------------------------ messages

	/** A Mastra message (format 2) from a record: as saved, or for another framework's turn, one by its role. */
	#messageOf(record) {
		const stored = record.metadata?.mastra_message;
		if (stored && typeof stored === 'object') return { ...stored, createdAt: time(stored.createdAt) };
		const text = record.content ?? '';
		return {
			id: record.id,
			role: ROLES.has(record.role) ? record.role : 'user',
			createdAt: time(record.created_at),
			threadId: record.session ?? undefined,
			resourceId: record.owner ?? undefined,
			type: 'text',
			content: { format: 2, parts: [{ type: 'text', text }], content: text },
		};
	}

	/** Every message of a thread, in Mastra's order (createdAt), whatever tier each is in now. */
	async #threadMessages(threadId) {
		const { records } = await this.client.timeline({ where: { session: threadId }, limit: this.layout.maxRecall });
		return records.filter((r) => r.metadata?.[KIND] !== 'thread').map((r) => this.#messageOf(r))
			.sort((a, b) => a.createdAt - b.createdAt);
	}

	#format(messages, format) {
		const list = new MessageList().add(messages, 'memory');
		return format === 'v2' ? list.get.all.v2() : list.get.all.v1();
	}

	/** The messages `include` names, each with its neighbours in its own thread. */
	async #included(include, threadId) {
		const out = new Map();
		const threads = new Map();
		for (const item of include ?? []) {
			const tid = item.threadId ?? threadId;
			if (!threads.has(tid)) threads.set(tid, await this.#threadMessages(tid));
			const messages = threads.get(tid);
			const at = messages.findIndex((msg) => msg.id === item.id);
			if (at < 0) continue;
			const from = Math.max(0, at - (item.withPreviousMessages ?? 0));
			for (const msg of messages.slice(from, at + (item.withNextMessages ?? 0) + 1)) out.set(msg.id, msg);
		}
		return out;
	}

	async getMessages({ threadId, selectBy, format }) {
		if (!threadId?.trim()) throw new Error('threadId must be a non-empty string');
		const chosen = await this.#included(selectBy?.include, threadId);
		if (!selectBy?.include?.length || selectBy?.last) {
			let rest = (await this.#threadMessages(threadId)).filter((msg) => !chosen.has(msg.id));
			if (selectBy?.last) rest = rest.slice(-selectBy.last);
			for (const msg of rest) chosen.set(msg.id, msg);
		}
		return this.#format([...chosen.values()].sort((a, b) => a.createdAt - b.createdAt), format);
	}

	async getMessagesPaginated({ threadId, selectBy, format }) {
		if (!threadId?.trim()) throw new Error('threadId must be a non-empty string');
		const { page = 0, perPage = 40, dateRange } = selectBy?.pagination ?? {};
		const chosen = await this.#included(selectBy?.include, threadId);
		let rest = (await this.#threadMessages(threadId)).filter((msg) => !chosen.has(msg.id));
		if (dateRange?.start) rest = rest.filter((msg) => msg.createdAt >= time(dateRange.start));
		if (dateRange?.end) rest = rest.filter((msg) => msg.createdAt <= time(dateRange.end));
		// Pages count back from the newest, as Mastra's own stores do.
		const newestFirst = [...rest].reverse().slice(page * perPage, (page + 1) * perPage);
		const messages = [...chosen.values(), ...newestFirst].sort((a, b) => a.createdAt - b.createdAt);
		return { messages: this.#format(messages, format), total: rest.length, page, perPage,
			hasMore: rest.length > (page + 1) * perPage };
	}

	async getMessagesById({ messageIds, format }) {
		const found = await Promise.all(messageIds.map(async (id) => (await this.client.fetch(this.#key('messages', id))).record));
		return this.#format(found.filter(Boolean).map((r) => this.#messageOf(r)), format);
	}

	#messageRecord(msg) {
		const record = {
			key: this.#key('messages', msg.id),
			content: messageText(msg) || `(${msg.role} message)`,
			role: msg.role,
			session: msg.threadId,
			metadata: {
				[KIND]: 'message', mastra_resource_id: msg.resourceId ?? null,
				mastra_message: { ...msg, createdAt: iso(msg.createdAt) },
			},
		};
		if (this.layout.working) record.tier = this.layout.working;
		return record;
	}

	/** Saves messages (v1 or v2) into their threads; a message saved again is replaced. */
	async saveMessages({ messages, format = 'v1' }) {
		if (!messages.length) return [];
		const v2 = new MessageList().add(messages, 'memory').get.all.v2();
		await this.client.remember(v2.map((msg) => this.#messageRecord(msg)));
		for (const threadId of new Set(v2.map((msg) => msg.threadId).filter(Boolean))) {
			const thread = await this.getThreadById({ threadId });
			if (thread) await this.#writeThread({ ...thread, updatedAt: new Date() });
		}
		return format === 'v2' ? v2 : new MessageList().add(v2, 'memory').get.all.v1();
	}

	async updateMessages({ messages }) {
		const out = [];
		for (const update of messages) {
			const { record } = await this.client.fetch(this.#key('messages', update.id));
			if (!record) continue;
			const old = this.#messageOf(record);
			const msg = { ...old, ...update, content: old.content };
			if (update.content) {
				msg.content = { ...old.content, ...update.content };
				if (old.content.metadata && update.content.metadata) msg.content.metadata = { ...old.content.metadata, ...update.content.metadata };
			}
			await this.client.remember([this.#messageRecord(msg)]);
			out.push(msg);
		}
		return out;
	}

	async deleteMessages(messageIds) {
		if (!messageIds?.length) return;
		await this.client.forget({ where: { key: messageIds.map((id) => this.#key('messages', id)) }, key_prefix: this.namespace.prefix });
	}

	// ------------------------------------------------------------ resources (working memory)

	async getResourceById({ resourceId }) {
		const { record } = await this.client.fetch(this.#key('resources', resourceId));
		const r = record?.metadata?.mastra_resource;
		if (!r) return null;
		return { ...r, workingMemory: r.workingMemory ?? undefined, createdAt: time(r.createdAt), updatedAt: time(r.updatedAt) };
	}

	async saveResource({ resource }) {
		const stored = { ...resource, createdAt: iso(resource.createdAt), updatedAt: iso(resource.updatedAt) };
		const record = {
			key: this.#key('resources', resource.id),
			content: resource.workingMemory || `(working memory of ${resource.id})`,
			metadata: { [KIND]: 'resource', mastra_resource: stored },
		};
		const tier = this.layout.tierOf('semantic');
		if (tier) record.tier = tier;
		await this.client.remember([record]);
		return resource;
	}

	async updateResource({ resourceId, workingMemory, metadata }) {
		const old = await this.getResourceById({ resourceId });
		const now = new Date();
		const resource = old
			? { ...old, workingMemory: workingMemory ?? old.workingMemory, metadata: { ...old.metadata, ...metadata }, updatedAt: now }
			: { id: resourceId, workingMemory, metadata: metadata ?? {}, createdAt: now, updatedAt: now };
		return this.saveResource({ resource });
	}

	// ------------------------------------------------------------ not memory

	async createTable() { throw notMemory('a table'); }
	async clearTable() { throw notMemory('a table'); }
	async dropTable() { throw notMemory('a table'); }
	async alterTable() { throw notMemory('a table'); }
	async insert() { throw notMemory('a table'); }
	async batchInsert() { throw notMemory('a table'); }
	async load() { throw notMemory('a table'); }
	async getTraces() { throw notMemory('a trace'); }
	async getTracesPaginated() { throw notMemory('a trace'); }
	async getEvals() { throw notMemory('an eval'); }
	async getEvalsByAgentName() { throw notMemory('an eval'); }
	async persistWorkflowSnapshot() { throw notMemory('a workflow'); }
	async loadWorkflowSnapshot() { throw notMemory('a workflow'); }
	async updateWorkflowResults() { throw notMemory('a workflow'); }
	async updateWorkflowState() { throw notMemory('a workflow'); }
	async getWorkflowRuns() { throw notMemory('a workflow'); }
	async getWorkflowRunById() { throw notMemory('a workflow'); }
	async getScoreById() { throw notMemory('a score'); }
	async saveScore() { throw notMemory('a score'); }
	async getScoresByScorerId() { throw notMemory('a score'); }
	async getScoresByRunId() { throw notMemory('a score'); }
	async getScoresByEntityId() { throw notMemory('a score'); }
}

/**
 * recall_memory and remember_fact as Mastra tools (createTool), for
 * `new Agent({tools})`: recall reads every searchable record, whoever wrote
 * it (working memory left out, DECISIONS 007); remember writes a fact into
 * the first semantic tier under `namespace`/facts/.
 */
export function memoryTools(client, { namespace = 'mastra', limit = 5 } = {}) {
	const layout = new Layout(client);
	const where = layout.searchWhere();
	const tier = layout.tierOf('semantic');
	const ns = new Namespace(namespace);
	const keyed = client.supports('keys');
	return {
		recall_memory: createTool({
			id: 'recall_memory',
			description: 'Search long-term memory, shared with other agents, for facts relevant to the query.',
			inputSchema: z.object({ query: z.string().describe('What to look for, in a few words.') }),
			execute: async ({ context }) => {
				const { records } = await client.recall({ query: context.query, limit, where });
				return { memories: records.map((r) => r.content) };
			},
		}),
		remember_fact: createTool({
			id: 'remember_fact',
			description: 'Store a fact in long-term memory, shared with other agents.',
			inputSchema: z.object({ fact: z.string().describe('One self-contained sentence.') }),
			execute: async ({ context }) => {
				const record = { content: context.fact };
				if (tier) record.tier = tier;
				if (keyed) record.key = ns.key(`facts/${randomUUID()}`);
				const { ids } = await client.remember([record]);
				return { id: ids[0] };
			},
		}),
	};
}
