// langgraph/index.js — LangGraph.js: A2MStore, a BaseStore whose items are
// A2M records, so a graph's long-term memory (`graph.compile({store})`,
// `config.store` in a node) is a memory every other framework reads.
//
// Imports LangGraph (@langchain/langgraph and its checkpoint package) and
// nothing else of any framework. The mapping is the Python A2MStore's
// (docs/FRAMEWORKS.md):
//
// * namespace + key is the record's A2M key, the labels and the key joined
//   by "/" ("/" and "%" inside a label escaped as %2F, %25): ["users",
//   "ana"] + "city" is users/ana/city, and put on an existing item replaces
//   it (spec §3.6, revision + 1).
// * value is the record's metadata (its keys stay filterable server-side),
//   with the namespace, key and update time under "a2m_langgraph"; the
//   content is the text LangGraph would index (index.fields, else the whole
//   value as JSON).
// * Items go into the first semantic tier, and search leaves working memory
//   out (DECISIONS 007); search reads the whole store, and a namespace
//   prefix narrows it only when the caller passes one. A record someone else
//   wrote without a key is an item of namespace [] whose key is its id.
// * With index {dims, embeddings} the vectors are the caller's own (spec
//   §3.7): stored verbatim with put, sent beside the query text on search.
import { BaseStore } from '@langchain/langgraph';
import { getTextAtPath } from '@langchain/langgraph-checkpoint';
import { Layout, escapeLabel, now, requireCapabilities, splitWhere, unescapeLabel } from '../memory.js';

/** The metadata key under which an item's own address is kept. */
export const MARKER = 'a2m_langgraph';

const pathOf = (namespace) => namespace.map(escapeLabel).join('/');

/** The A2M key of item `key` in `namespace`. */
export function keyOf(namespace, key) {
	return [...namespace, key].map(escapeLabel).join('/');
}

function stableJson(value) {
	if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
	if (value && typeof value === 'object') {
		return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${stableJson(value[k])}`).join(',')}}`;
	}
	return JSON.stringify(value);
}

function equal(a, b) {
	return stableJson(a) === stableJson(b);
}

/** LangGraph's filter semantics: equality, nested objects, $eq $ne $gt $gte $lt $lte. */
function compare(value, wanted) {
	if (wanted && typeof wanted === 'object' && !Array.isArray(wanted)) {
		const ops = Object.keys(wanted);
		if (ops.some((k) => k.startsWith('$'))) return ops.every((op) => operator(value, op, wanted[op]));
		return !!value && typeof value === 'object' && ops.every((k) => compare(value[k], wanted[k]));
	}
	return equal(value, wanted);
}

function operator(value, op, arg) {
	switch (op) {
	case '$eq': return equal(value, arg);
	case '$ne': return !equal(value, arg);
	case '$gt': return value != null && Number(value) > Number(arg);
	case '$gte': return value != null && Number(value) >= Number(arg);
	case '$lt': return value != null && Number(value) < Number(arg);
	case '$lte': return value != null && Number(value) <= Number(arg);
	default: throw new Error(`Unsupported operator: ${op}`);
	}
}

function matches(condition, namespace) {
	const path = condition.path;
	if (namespace.length < path.length) return false;
	const ns = condition.matchType === 'prefix' ? namespace : namespace.slice(namespace.length - path.length);
	return path.every((p, i) => p === '*' || ns[i] === p);
}

/**
 * A LangGraph BaseStore over an A2M memory. `client` is an A2MClient
 * (a2m-client) whose server declares `keys`. Options: `index` (LangGraph's
 * IndexConfig: `fields`, and with `embeddings` vectors computed here and
 * stored verbatim — the server must declare `embeddings`), `tier` (where
 * items are written; default the first semantic tier).
 */
export class A2MStore extends BaseStore {
	constructor(client, { index, tier } = {}) {
		super();
		requireCapabilities(client, ['keys'], 'A2MStore');
		this.client = client;
		this.layout = new Layout(client);
		this.tier = tier ?? this.layout.tierOf('semantic');
		this.fields = index?.fields ?? ['$'];
		this.embeddings = index?.embeddings;
		if (this.embeddings) requireCapabilities(client, ['embeddings'], 'A2MStore with index.embeddings');
	}

	/** Runs each operation in order: one result per operation (a put's is undefined). */
	async batch(operations) {
		const results = [];
		for (const op of operations) {
			if ('value' in op) results.push(await this.#put(op));
			else if ('namespacePrefix' in op) results.push(await this.#search(op));
			else if ('key' in op) results.push(await this.#get(op));
			else if ('limit' in op || 'matchConditions' in op) results.push(await this.#listNamespaces(op));
			else throw new Error(`Unknown operation: ${JSON.stringify(op)}`);
		}
		return results;
	}

	/** The record's content: the indexed fields' text, else the value as JSON. */
	#text(value, index) {
		const fields = Array.isArray(index) ? index : this.fields;
		const texts = [];
		for (const field of fields) {
			if (field === '$') texts.push(stableJson(value));
			else texts.push(...getTextAtPath(value, field).map((t) => (typeof t === 'string' ? t : JSON.stringify(t))));
		}
		return texts.filter(Boolean).join('\n') || stableJson(value);
	}

	#item(record, withScore = false) {
		const metadata = record.metadata;
		let item;
		const created = new Date(record.created_at ?? Date.now());
		if (metadata && typeof metadata[MARKER] === 'object' && metadata[MARKER] !== null) {
			const mark = metadata[MARKER];
			const value = { ...metadata };
			delete value[MARKER];
			item = { namespace: [...(mark.namespace ?? [])], key: String(mark.key), value,
				createdAt: created, updatedAt: mark.updated_at ? new Date(mark.updated_at) : created };
		} else {
			// Written by someone else: its text, and its metadata if any.
			let namespace = [];
			let key = String(record.id);
			if (record.key) {
				const parts = record.key.split('/').map(unescapeLabel);
				key = parts.pop();
				namespace = parts;
			}
			const value = { content: record.content ?? '' };
			if (record.role) value.role = record.role;
			if (metadata && Object.keys(metadata).length) value.metadata = metadata;
			item = { namespace, key, value, createdAt: created, updatedAt: created };
		}
		if (withScore && typeof record.score === 'number') item.score = record.score;
		return item;
	}

	async #record(namespace, key) {
		const { record } = await this.client.fetch(keyOf(namespace, key));
		if (record || namespace.length) return record;
		// Namespace [] holds the records written without a key: the item's key is the record's id.
		const { records } = await this.client.timeline({ where: { id: key }, limit: 1 });
		return records.length && !records[0].key ? records[0] : null;
	}

	async #get(op) {
		const record = await this.#record(op.namespace, op.key);
		return record ? this.#item(record) : null;
	}

	async #put(op) {
		if (op.value === null) {
			const old = await this.#record(op.namespace, op.key);
			if (old) await this.client.forget({ ids: [old.id] });
			return undefined;
		}
		const text = this.#text(op.value, op.index);
		const record = {
			content: text,
			key: keyOf(op.namespace, op.key),
			metadata: { ...op.value, [MARKER]: { namespace: op.namespace, key: op.key, updated_at: now() } },
		};
		if (this.tier) record.tier = this.tier;
		if (this.embeddings && op.index !== false) record.embedding = (await this.embeddings.embedDocuments([text]))[0];
		await this.client.remember([record]);
		return undefined;
	}

	async #search(op) {
		const { filter, limit = 10, offset = 0, query } = op;
		const { server, rest } = splitWhere(filter);
		const where = this.layout.searchWhere(server);
		const n = rest ? this.layout.maxRecall : Math.min(Math.max(offset + limit, 1), this.layout.maxRecall);
		const key_prefix = op.namespacePrefix.length ? `${pathOf(op.namespacePrefix)}/` : undefined;
		let records;
		if (query) {
			const embedding = this.embeddings ? await this.embeddings.embedQuery(query) : undefined;
			({ records } = await this.client.recall({ query, limit: n, where, key_prefix, embedding }));
		} else {
			// Without a query: newest first, by timeline, which counts no access.
			({ records } = await this.client.timeline({ limit: n, where, key_prefix }));
			records = records.reverse();
		}
		let items = records.map((r) => this.#item(r, true));
		if (filter) items = items.filter((i) => Object.entries(filter).every(([k, v]) => compare(i.value[k], v)));
		return items.slice(offset, offset + limit);
	}

	async #listNamespaces(op) {
		const conditions = op.matchConditions ?? [];
		let key_prefix;
		const prefix = conditions.find((c) => c.matchType === 'prefix' && c.path.length);
		if (prefix) {
			const fixed = [];
			for (const label of prefix.path) {
				if (label === '*') break;
				fixed.push(label);
			}
			if (fixed.length) key_prefix = `${pathOf(fixed)}/`;
		}
		const { records } = await this.client.timeline({ limit: this.layout.maxRecall, where: this.layout.searchWhere(), key_prefix });
		const found = new Map();
		for (const record of records) {
			const { namespace } = this.#item(record);
			if (!namespace.length || !conditions.every((c) => matches(c, namespace))) continue;
			const ns = op.maxDepth !== undefined ? namespace.slice(0, op.maxDepth) : namespace;
			found.set(JSON.stringify(ns), ns);
		}
		const sorted = [...found.values()].sort((a, b) => (a.join('\u0000') < b.join('\u0000') ? -1 : a.join('\u0000') > b.join('\u0000') ? 1 : 0));
		const { offset = 0, limit = 100 } = op;
		return sorted.slice(offset, offset + limit);
	}
}
