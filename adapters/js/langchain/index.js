// langchain/index.js — LangChain.js: A2MChatMessageHistory (a conversation,
// replayed) and A2MVectorStore (searchable memory, and its retriever).
//
// Imports @langchain/core and nothing else of any framework. LangChain keeps
// chat history apart from retrieval, which is A2M's own split between
// memory/timeline and memory/recall (DECISIONS 007, 023), so each class maps
// onto one method and neither emulates the other:
//
// * The history is the timeline of one session in the working tier:
//   messages are written with `session` and `role`, read back in creation
//   order, never searched. closeSession() ends the conversation
//   (memory/session/close): its turns leave working memory and become
//   searchable, by this vector store and by every other framework.
// * The vector store writes documents into the first semantic tier under
//   its namespace (langchain/<document id>, so adding an id again replaces
//   it) and searches every searchable record in the store, whoever wrote
//   it. With the user's embedding model the vectors are the caller's own,
//   stored verbatim and sent beside the query text (spec §3.7); without one
//   the server's own ranking decides.
import { randomUUID } from 'node:crypto';
import { BaseListChatMessageHistory } from '@langchain/core/chat_history';
import { Document } from '@langchain/core/documents';
import {
	AIMessage, ChatMessage, HumanMessage, SystemMessage,
	mapChatMessagesToStoredMessages, mapStoredMessagesToChatMessages,
} from '@langchain/core/messages';
import { VectorStore } from '@langchain/core/vectorstores';
import { Layout, Namespace, requireCapabilities, splitWhere } from '../memory.js';

/** The metadata key under which a message's own LangChain form is kept. */
export const MARKER = 'langchain';

const ROLE_OF_TYPE = { human: 'user', ai: 'assistant', system: 'system', tool: 'tool', function: 'tool' };
const CLASS_OF_ROLE = { user: HumanMessage, assistant: AIMessage, system: SystemMessage };

function roleOf(message) {
	if (ChatMessage.isInstance(message)) return message.role;
	const type = message.getType();
	return ROLE_OF_TYPE[type] ?? type;
}

/** The record's content: the message's text, or for a turn that only calls tools, the calls. */
function textOf(message) {
	let text = message.text;
	if (!text && message.tool_calls?.length) {
		text = message.tool_calls.map((c) => `${c.name}(${JSON.stringify(c.args)})`).join('; ');
	}
	return text || `(${message.getType()} message)`;
}

/** A LangChain message from a record: as it was written, or by its role for a record another framework wrote. */
export function messageOf(record) {
	const stored = record.metadata?.[MARKER];
	if (stored && typeof stored === 'object') return mapStoredMessagesToChatMessages([stored])[0];
	const role = record.role ?? 'memory';
	const Class = CLASS_OF_ROLE[role];
	if (Class) return new Class({ content: record.content ?? '', id: record.id });
	return new ChatMessage({ role, content: record.content ?? '', id: record.id });
}

/**
 * The messages of session `sessionId` in the working tier. Writes and
 * deletes touch that session only; getMessages() replays it in order. The
 * server must declare `sessions`. Tool calls and the results answering them
 * share a `group`, so the store never keeps one without the other (§3.4).
 */
export class A2MChatMessageHistory extends BaseListChatMessageHistory {
	lc_namespace = ['a2m', 'langchain', 'chat_history'];

	constructor(client, sessionId, { tier } = {}) {
		super();
		requireCapabilities(client, ['sessions'], 'A2MChatMessageHistory');
		this.client = client;
		this.sessionId = sessionId;
		this.tier = tier ?? new Layout(client).working;
		this.groups = new Map(); // tool call id -> group
	}

	async #read() {
		return (await this.client.timeline({ where: { session: this.sessionId }, tier: this.tier })).records;
	}

	async getMessages() {
		return (await this.#read()).map(messageOf);
	}

	async #group(message) {
		if (message.tool_calls?.length) {
			const group = `${this.sessionId}/tools/${message.tool_calls[0].id}`;
			for (const call of message.tool_calls) this.groups.set(call.id, group);
			return group;
		}
		if (message.tool_call_id !== undefined) {
			if (!this.groups.has(message.tool_call_id)) {
				// Written by another process: find the call in the session.
				for (const record of await this.#read()) {
					if (!record.group) continue;
					for (const call of messageOf(record).tool_calls ?? []) this.groups.set(call.id, record.group);
				}
			}
			return this.groups.get(message.tool_call_id);
		}
		return undefined;
	}

	async addMessages(messages) {
		const records = [];
		for (const message of messages) {
			const record = {
				content: textOf(message),
				role: roleOf(message),
				session: this.sessionId,
				metadata: { [MARKER]: mapChatMessagesToStoredMessages([message])[0] },
			};
			const group = await this.#group(message);
			if (group) record.group = group;
			if (this.tier) record.tier = this.tier;
			records.push(record);
		}
		if (records.length) await this.client.remember(records);
	}

	async addMessage(message) {
		await this.addMessages([message]);
	}

	/** Deletes this session's turns from the working tier (what already moved on stays). */
	async clear() {
		await this.client.forget({ where: { session: this.sessionId }, tier: this.tier });
	}

	/** Ends the conversation (memory/session/close): its turns leave working memory for the searchable tiers. */
	closeSession() {
		return this.client.sessionClose(this.sessionId);
	}
}

/**
 * A LangChain VectorStore over A2M's searchable memory. `embeddings` is
 * optional (null: the server's own ranking); with it vectors are computed
 * here and stored verbatim (the server must declare `embeddings`).
 * Options: `namespace` (the key prefix documents are written and deleted
 * under, default "langchain"; searches read the whole store), `tier`. The
 * server must declare `keys`.
 */
export class A2MVectorStore extends VectorStore {
	constructor(client, embeddings = null, { namespace = 'langchain', tier } = {}) {
		super(embeddings, {});
		requireCapabilities(client, ['keys'], 'A2MVectorStore');
		if (embeddings) requireCapabilities(client, ['embeddings'], 'A2MVectorStore with embeddings');
		this.client = client;
		this.namespace = new Namespace(namespace);
		this.layout = new Layout(client);
		this.tier = tier ?? this.layout.tierOf('semantic');
	}

	_vectorstoreType() {
		return 'a2m';
	}

	async #write(documents, vectors, ids) {
		if (ids && ids.length !== documents.length) throw new Error('ids must have one entry per document');
		const out = documents.map((d, n) => ids?.[n] ?? d.id ?? randomUUID());
		const records = documents.map((d, n) => {
			const record = { content: d.pageContent, key: this.namespace.key(out[n]) };
			if (d.metadata && Object.keys(d.metadata).length) record.metadata = d.metadata;
			if (this.tier) record.tier = this.tier;
			if (vectors) record.embedding = vectors[n];
			return record;
		});
		if (records.length) await this.client.remember(records);
		return out;
	}

	/** Writes documents (their ids, or options.ids, are keys in the namespace: written again, replaced). */
	async addDocuments(documents, options = {}) {
		const vectors = this.embeddings && documents.length
			? await this.embeddings.embedDocuments(documents.map((d) => d.pageContent)) : undefined;
		return this.#write(documents, vectors, options.ids);
	}

	async addVectors(vectors, documents, options = {}) {
		requireCapabilities(this.client, ['embeddings'], 'A2MVectorStore.addVectors');
		return this.#write(documents, vectors, options.ids);
	}

	/** Deletes documents of this namespace by id; with no ids, every document the namespace holds. */
	async delete({ ids } = {}) {
		if (ids === undefined) {
			if (!this.namespace.prefix) throw new Error('delete() without ids deletes a namespace; this store has none');
			await this.client.forget({ key_prefix: this.namespace.prefix });
			return;
		}
		const found = (await this.#fetch(ids)).filter(Boolean).map((r) => r.id);
		if (found.length) await this.client.forget({ ids: found });
	}

	async #fetch(ids) {
		return Promise.all(ids.map(async (id) => (await this.client.fetch(this.namespace.key(id))).record));
	}

	/** A Document: the record's content and metadata; its id is the id in this namespace, else the key or record id. */
	#document(record) {
		const id = this.namespace.local(record.key) ?? record.key ?? record.id;
		return new Document({ pageContent: record.content ?? '', metadata: { ...(record.metadata ?? {}) }, id });
	}

	/** The documents of this namespace with these ids (those that exist). */
	async getByIds(ids) {
		return (await this.#fetch(ids)).filter(Boolean).map((r) => this.#document(r));
	}

	async #recall(query, embedding, k, filter) {
		const { server, rest } = splitWhere(filter);
		const { records } = await this.client.recall({
			query, embedding, limit: rest ? this.layout.maxRecall : k, where: this.layout.searchWhere(server),
		});
		const out = [];
		for (const record of records) {
			const doc = this.#document(record);
			if (rest && !Object.entries(filter).every(([key, v]) => JSON.stringify(doc.metadata[key]) === JSON.stringify(v))) continue;
			out.push([doc, Number(record.score ?? 0)]);
		}
		return out.slice(0, k);
	}

	/** The k best records for the query text (and its vector, with embeddings), with the server's score. */
	async similaritySearchWithScore(query, k = 4, filter = undefined) {
		const embedding = this.embeddings ? await this.embeddings.embedQuery(query) : undefined;
		return this.#recall(query, embedding, k, filter);
	}

	async similaritySearch(query, k = 4, filter = undefined) {
		return (await this.similaritySearchWithScore(query, k, filter)).map(([doc]) => doc);
	}

	async similaritySearchVectorWithScore(query, k, filter = undefined) {
		return this.#recall(undefined, query, k, filter);
	}

	static async fromTexts(texts, metadatas, embeddings, { client, ids, ...options }) {
		const store = new A2MVectorStore(client, embeddings, options);
		const docs = texts.map((t, n) => new Document({
			pageContent: t, metadata: (Array.isArray(metadatas) ? metadatas[n] : metadatas) ?? {},
		}));
		await store.addDocuments(docs, { ids });
		return store;
	}

	static async fromDocuments(docs, embeddings, { client, ids, ...options }) {
		const store = new A2MVectorStore(client, embeddings, options);
		await store.addDocuments(docs, { ids });
		return store;
	}
}
