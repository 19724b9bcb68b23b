// The types of adapters/js/langchain (index.js says what it does).
import { BaseListChatMessageHistory } from '@langchain/core/chat_history';
import type { DocumentInterface } from '@langchain/core/documents';
import type { EmbeddingsInterface } from '@langchain/core/embeddings';
import type { BaseMessage } from '@langchain/core/messages';
import { VectorStore } from '@langchain/core/vectorstores';
import type { A2MClient, MemoryRecord, SessionCloseResult } from 'a2m-client';

export declare const MARKER: 'langchain';
/** A LangChain message from a record (as written, or by its role). */
export declare function messageOf(record: MemoryRecord): BaseMessage;

/** One session's timeline in the working tier (the server must declare `sessions`). */
export declare class A2MChatMessageHistory extends BaseListChatMessageHistory {
	lc_namespace: string[];
	constructor(client: A2MClient, sessionId: string, options?: { tier?: string });
	readonly client: A2MClient;
	readonly sessionId: string;
	getMessages(): Promise<BaseMessage[]>;
	addMessage(message: BaseMessage): Promise<void>;
	addMessages(messages: BaseMessage[]): Promise<void>;
	clear(): Promise<void>;
	/** memory/session/close: the conversation moves to the searchable tiers. */
	closeSession(): Promise<SessionCloseResult>;
}

export interface A2MVectorStoreOptions {
	/** Key prefix documents are written and deleted under (default "langchain"). */
	namespace?: string;
	tier?: string;
}

/** A VectorStore over A2M's searchable memory (the server must declare `keys`). */
export declare class A2MVectorStore extends VectorStore {
	FilterType: Record<string, unknown>;
	constructor(client: A2MClient, embeddings?: EmbeddingsInterface | null, options?: A2MVectorStoreOptions);
	readonly client: A2MClient;
	_vectorstoreType(): string;
	addDocuments(documents: DocumentInterface[], options?: { ids?: string[] }): Promise<string[]>;
	addVectors(vectors: number[][], documents: DocumentInterface[], options?: { ids?: string[] }): Promise<string[]>;
	delete(params?: { ids?: string[] }): Promise<void>;
	getByIds(ids: string[]): Promise<DocumentInterface[]>;
	similaritySearchVectorWithScore(query: number[], k: number, filter?: Record<string, unknown>): Promise<[DocumentInterface, number][]>;
	static fromTexts(texts: string[], metadatas: object[] | object, embeddings: EmbeddingsInterface | null,
		config: A2MVectorStoreOptions & { client: A2MClient; ids?: string[] }): Promise<A2MVectorStore>;
	static fromDocuments(docs: DocumentInterface[], embeddings: EmbeddingsInterface | null,
		config: A2MVectorStoreOptions & { client: A2MClient; ids?: string[] }): Promise<A2MVectorStore>;
}
