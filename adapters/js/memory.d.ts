// memory.d.ts — the types of memory.js, what the JavaScript adapters share.
import type { A2MClient, Where } from 'a2m-client';

export declare const RECORD_FIELDS: ReadonlySet<string>;
/** Throws A2MError -32003 ({capability}) for the first capability the server lacks. */
export declare function requireCapabilities(client: A2MClient, capabilities: string[], adapter: string): void;

/** The tiers of one store, from the describe answer the client holds. */
export declare class Layout {
	constructor(client: A2MClient);
	readonly names: string[];
	/** The tier conversations are kept in (undefined: the server's default). */
	readonly working: string | undefined;
	/** Every tier a search may look in (undefined: the store has no tiers). */
	readonly searchable: string[] | undefined;
	readonly maxRecall: number;
	tierOf(kind: string): string | undefined;
	searchWhere(where?: Where): Where | undefined;
}

/** A key prefix for writes and deletes, never reads. */
export declare class Namespace {
	constructor(prefix: string);
	readonly prefix: string;
	key(local: string): string;
	local(key: string | null | undefined): string | undefined;
}

export declare function splitWhere(filter: Record<string, unknown> | undefined): { server: Where; rest: boolean };
export declare function escapeLabel(label: string): string;
export declare function unescapeLabel(label: string): string;
export declare function now(): string;
export declare function stringParameter(name: string, description: string): {
	type: 'object'; properties: Record<string, { type: 'string'; description: string }>; required: string[]; additionalProperties: false;
};
