// The types of adapters/js/ai-sdk (index.js says what it does).
import type { Tool } from 'ai';
import type { A2MClient } from 'a2m-client';

export interface MemoryTools {
	remember: Tool<{ fact: string }, { id: string }>;
	recall: Tool<{ query: string }, { memories: { id: string; content: string; score: number | undefined }[] }>;
	forget: Tool<{ ids: string[] }, { forgotten: number }>;
	[name: string]: Tool;
}

/** remember, recall and forget over searchable memory (the server must declare `keys`). */
export declare function memoryTools(client: A2MClient, options?: { namespace?: string; tier?: string; limit?: number }): MemoryTools;
