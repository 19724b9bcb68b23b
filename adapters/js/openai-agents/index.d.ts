// The types of adapters/js/openai-agents (index.js says what it does).
import type { AgentInputItem, FunctionTool, Session } from '@openai/agents';
import type { A2MClient, MemoryRecord, SessionCloseResult } from 'a2m-client';

export declare const MARKER: 'openai_agents';
/** What a search ranks an item by. */
export declare function itemText(item: AgentInputItem): string;
/** An input item from a record (as stored, or a message in its role). */
export declare function itemOf(record: MemoryRecord): AgentInputItem;

/** A Session whose items are one A2M session's records (the server must declare `sessions`). */
export declare class A2MSession implements Session {
	constructor(client: A2MClient, sessionId: string, options?: { tier?: string });
	readonly client: A2MClient;
	readonly sessionId: string;
	getSessionId(): Promise<string>;
	getItems(limit?: number): Promise<AgentInputItem[]>;
	addItems(items: AgentInputItem[]): Promise<void>;
	popItem(): Promise<AgentInputItem | undefined>;
	clearSession(): Promise<void>;
	/** memory/session/close: the conversation moves to the searchable tiers. */
	closeSession(): Promise<SessionCloseResult>;
}

/** recall_memory and remember_fact, function tools over searchable memory. */
export declare function memoryTools(client: A2MClient, options?: { namespace?: string; tier?: string; limit?: number }): FunctionTool<unknown, any, string>[];
