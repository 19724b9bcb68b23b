// The types of adapters/js/mastra (index.js says what it does).
import { MastraStorage } from '@mastra/core/storage';
import type { A2MClient, SessionCloseResult } from 'a2m-client';

/**
 * Memory's storage over A2M (the server must declare `sessions` and
 * `keys`). An interface and a constructor rather than a class: the
 * implementation refuses MastraStorage's non-memory members at run time,
 * which a declared class would have to list one by one.
 */
export interface A2MStore extends MastraStorage {
	readonly client: A2MClient;
	/** memory/session/close on the thread's session: the conversation moves to the searchable tiers. */
	closeThread(threadId: string): Promise<SessionCloseResult>;
}
export declare const A2MStore: new (client: A2MClient, options?: { namespace?: string }) => A2MStore;

/** recall_memory and remember_fact as Mastra tools. */
export declare function memoryTools(client: A2MClient, options?: { namespace?: string; limit?: number }): {
	recall_memory: ReturnType<typeof import('@mastra/core/tools').createTool>;
	remember_fact: ReturnType<typeof import('@mastra/core/tools').createTool>;
};
