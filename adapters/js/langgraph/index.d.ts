// The types of adapters/js/langgraph (index.js says what it does).
import { BaseStore, type Item, type Operation, type OperationResults } from '@langchain/langgraph';
import type { EmbeddingsInterface } from '@langchain/core/embeddings';
import type { A2MClient } from 'a2m-client';

export declare const MARKER: 'a2m_langgraph';
/** The A2M key of item `key` in `namespace`. */
export declare function keyOf(namespace: string[], key: string): string;

export interface A2MStoreOptions {
	/** LangGraph's IndexConfig: `fields` to index, and with `embeddings` the caller's vectors. */
	index?: { dims?: number; embeddings?: EmbeddingsInterface; fields?: string[] };
	/** Where items are written (default: the first semantic tier). */
	tier?: string;
}

/** A LangGraph BaseStore over an A2M memory (the server must declare `keys`). */
export declare class A2MStore extends BaseStore {
	constructor(client: A2MClient, options?: A2MStoreOptions);
	readonly client: A2MClient;
	readonly tier: string | undefined;
	batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>>;
}

export type { Item };
