// memory.js — what every JavaScript adapter needs to know about a store,
// and nothing about any framework: which tier facts are written into, which
// tier holds conversations, how a search leaves conversations out, and how
// a namespace becomes a key prefix. The Python adapters' _memory.py keeps
// the same two rules (docs/FRAMEWORKS.md, DECISIONS 007 and 023):
//
// * A conversation in working memory is replayed, not searched, until its
//   session closes. `a2m serve` ranks every tier on a recall unless told
//   otherwise, so a searching adapter asks for the non-working tiers
//   (`where: {tier: [...]}`, spec §5.2), and an adapter that stores facts
//   writes them where a search finds them (the first tier of kind
//   `semantic`), not into the default working tier.
// * A namespace scopes what an adapter writes and deletes, never what it
//   reads. Namespace only builds keys to write and prefixes to delete
//   under; searches pass no namespace unless the framework's own call names
//   one.
import { A2MError, ErrorCode } from 'a2m-client';

/**
 * The record fields of spec §3.1. A `where` key naming one of them tests the
 * field, not metadata (§5.2), so a metadata filter on such a key cannot be
 * sent to the server as it is.
 */
export const RECORD_FIELDS = new Set([
	'id', 'content', 'created_at', 'role', 'metadata', 'group', 'tier', 'salience',
	'accessed_at', 'access_count', 'owner', 'session', 'key', 'revision', 'embedding',
	'uri', 'media_type', 'score',
]);

/**
 * Throws the A2MError a server gives for an undeclared capability (-32003,
 * data {capability}) when `client`'s server lacks one of `capabilities`,
 * which `adapter` cannot work without.
 */
export function requireCapabilities(client, capabilities, adapter) {
	for (const capability of capabilities) {
		if (!client.supports(capability)) {
			throw new A2MError(ErrorCode.CAPABILITY_NOT_SUPPORTED,
				`${adapter} needs the '${capability}' capability, which this server does not declare`,
				{ capability }, undefined);
		}
	}
}

/**
 * The tiers of one store, read from the describe answer the client already
 * holds (spec §4.7: `kind` says what a tier is for, whatever its name).
 * Without `tiers` every name is undefined and no filter is added: such a
 * store has nothing to keep apart.
 */
export class Layout {
	constructor(client) {
		const tiers = client.supports('tiers') ? (client.description.tiers ?? []) : [];
		const named = tiers.filter((t) => typeof t.name === 'string');
		this.names = named.map((t) => t.name);
		this.kinds = new Map(named.map((t) => [t.name, t.kind]));
		const working = this.names.filter((n) => this.kinds.get(n) === 'working');
		/** The tier conversations are kept in (undefined: the server's default). */
		this.working = working[0];
		/** Every tier a search may look in: all but the working ones (undefined: no tiers). */
		this.searchable = working.length ? this.names.filter((n) => !working.includes(n)) : undefined;
		/** The most records one recall or timeline may return (§4.1 limits). */
		this.maxRecall = Number(client.description.limits?.max_recall_limit) || 1000;
	}

	/** The first tier of `kind`, else the first searchable tier, else undefined. */
	tierOf(kind) {
		const found = this.names.find((n) => this.kinds.get(n) === kind);
		return found ?? this.searchable?.[0];
	}

	/**
	 * `where` plus the filter that keeps working memory out of a search. A
	 * `tier` the caller already named is narrowed, never widened. Returns
	 * undefined for an empty filter.
	 */
	searchWhere(where = {}) {
		const out = { ...where };
		if (this.searchable !== undefined) {
			if ('tier' in out) {
				const asked = Array.isArray(out.tier) ? out.tier : [out.tier];
				out.tier = asked.filter((t) => this.searchable.includes(t));
			} else {
				out.tier = [...this.searchable];
			}
		}
		return Object.keys(out).length ? out : undefined;
	}
}

/**
 * A key prefix under which an adapter writes and deletes: new
 * Namespace('mastra') writes `mastra/<id>`; new Namespace('') writes keys as
 * the framework gives them. Never applied to a read.
 */
export class Namespace {
	constructor(prefix) {
		this.prefix = prefix ? (prefix.endsWith('/') ? prefix : `${prefix}/`) : '';
	}

	/** The store key of `local` in this namespace. */
	key(local) {
		return this.prefix + local;
	}

	/** The part of `key` after this namespace, or undefined when `key` is not in it. */
	local(key) {
		if (!key || !key.startsWith(this.prefix) || key.length === this.prefix.length) return undefined;
		return key.slice(this.prefix.length);
	}
}

/**
 * Splits a framework's metadata filter into what the server can test (plain
 * equality on a metadata key that is not a record field, §5.2) and whether
 * anything is left for the adapter to test itself. Arrays and objects are
 * left to the adapter: in `where` an array means "any of".
 */
export function splitWhere(filter) {
	const server = {};
	let rest = false;
	for (const [k, v] of Object.entries(filter ?? {})) {
		if (!RECORD_FIELDS.has(k) && ['string', 'number', 'boolean'].includes(typeof v)) server[k] = v;
		else rest = true;
	}
	return { server, rest };
}

/** A label safe inside a key: "%" and "/" escaped as %25 and %2F, so "/" only ever separates labels. */
export function escapeLabel(label) {
	return String(label).replaceAll('%', '%25').replaceAll('/', '%2F');
}

/** The inverse of escapeLabel. */
export function unescapeLabel(label) {
	return label.replaceAll('%2F', '/').replaceAll('%25', '%');
}

/** Now as spec §3.3 writes a timestamp: UTC, milliseconds, Z. */
export function now() {
	return new Date().toISOString();
}

/**
 * The JSON Schema of a tool's parameters: one required string property
 * (strict-mode friendly: no other properties).
 */
export function stringParameter(name, description) {
	return {
		type: 'object',
		properties: { [name]: { type: 'string', description } },
		required: [name],
		additionalProperties: false,
	};
}
