// index.d.ts — the types of a2m-client, written by hand (there is no build
// step to generate them). They follow the A2M 0.1 specification's tables:
// every record and result type is open (an index signature), because a
// client MUST tolerate fields it does not recognise (§2) and passes them on.

/** The protocol version this client speaks and sends. */
export declare const PROTOCOL: 'a2m/0.1';

/** An RFC 3339 UTC timestamp with milliseconds, kept as the server sent it (§3.3). */
export type Timestamp = string;

/** Any JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The capabilities of §2. A server may declare others; they are strings too. */
export type Capability =
	| 'core' | 'tiers' | 'salience' | 'scopes' | 'sessions' | 'keys'
	| 'embeddings' | 'external' | 'events' | 'summarize' | 'prompt';

/** The methods of §4. */
export type Method =
	| 'memory/describe' | 'memory/remember' | 'memory/recall' | 'memory/timeline' | 'memory/forget'
	| 'memory/promote' | 'memory/consolidate' | 'memory/reinforce' | 'memory/fetch'
	| 'memory/session/list' | 'memory/session/close'
	| 'memory/events' | 'memory/events/subscribe' | 'memory/events/unsubscribe'
	| 'memory/summarize';

/** Which capability each method belongs to. */
export declare const METHOD_CAPABILITY: Readonly<Record<Method, Capability>>;

// ---------------------------------------------------------------- errors

/** The error codes of §7, by name. */
export declare const ErrorCode: Readonly<{
	PARSE_ERROR: -32700;
	INVALID_REQUEST: -32600;
	METHOD_NOT_FOUND: -32601;
	INVALID_PARAMS: -32602;
	INTERNAL_ERROR: -32603;
	UNKNOWN_RECORD: -32001;
	UNKNOWN_TIER: -32002;
	CAPABILITY_NOT_SUPPORTED: -32003;
	READ_ONLY: -32004;
	SCOPE_DENIED: -32005;
	QUOTA_EXCEEDED: -32006;
	PROTOCOL_NOT_SUPPORTED: -32007;
	EMBEDDING_MISMATCH: -32008;
}>;
export type ErrorCodeName = keyof typeof ErrorCode;

/** The spec's name for a code, or undefined for a code outside §7. */
export declare function errorName(code: number): ErrorCodeName | undefined;

/**
 * A JSON-RPC error object: from the server, or raised by this client in its
 * place (-32003 for a method of an undeclared capability, -32007 for a
 * server of another protocol version). `message` is for humans (§7).
 */
export declare class A2MError extends Error {
	constructor(code: number, message: string, data?: unknown, method?: string);
	readonly name: 'A2MError';
	readonly code: number;
	readonly codeName: ErrorCodeName | undefined;
	/** The error object's `data`, when it had one. */
	readonly data?: unknown;
	/** The method whose call failed. */
	readonly method: string | undefined;
	static fromObject(error: { code: number; message: string; data?: unknown }, method?: string): A2MError;
}

/** The connection failed: the request may or may not have reached the server. */
export declare class TransportError extends Error {
	constructor(message: string, options?: { status?: number; body?: string; cause?: unknown });
	/** HTTP only: the status of a response that was not 200 (401, 403, 413, ...). */
	readonly status?: number;
	/** HTTP only: that response's body. */
	readonly body?: string;
}

/** The server did not answer within the call's timeout. */
export declare class TimeoutError extends TransportError {
	readonly timeout: number;
}

// ---------------------------------------------------------------- records

/** A record as the server returns it (§3.1). */
export interface MemoryRecord {
	id: string;
	content: string;
	created_at: Timestamp;
	role?: string;
	metadata?: { [key: string]: Json };
	group?: string | null;
	/** tiers */
	tier?: string;
	/** salience */
	salience?: number;
	accessed_at?: Timestamp | null;
	access_count?: number;
	/** scopes */
	owner?: string | null;
	/** sessions */
	session?: string | null;
	/** keys */
	key?: string | null;
	revision?: number;
	/** embeddings (returned only when asked for with `embeddings: true`) */
	embedding?: number[];
	/** external */
	uri?: string | null;
	media_type?: string | null;
	/** recall only: ranking information, comparable only within one result (§5.3) */
	score?: number;
	[field: string]: unknown;
}

/** A record to write (§4.2): `content` and whatever the capabilities allow. */
export interface NewRecord {
	content: string;
	/** Makes the write idempotent (§3.2). */
	id?: string;
	role?: string;
	metadata?: { [key: string]: Json };
	group?: string;
	tier?: string;
	salience?: number;
	owner?: string;
	session?: string;
	key?: string;
	embedding?: number[];
	uri?: string;
	media_type?: string;
	[field: string]: unknown;
}

/** §5.2: equality on fields, then metadata; an array means "any of". */
export type Where = { [field: string]: Json };

/** §4.16: `true` for the defaults, or the options. */
export type PromptOption = boolean | {
	method?: 'template' | 'model' | 'none' | (string & {});
	style?: 'auto' | 'facts' | 'transcript' | (string & {});
	model?: string;
	budget?: number;
	cite?: boolean;
	[field: string]: unknown;
};

// ---------------------------------------------------------------- params and results

export interface DescribeParams { protocol?: string; owner?: string; [field: string]: unknown }

export interface TierInfo {
	name: string;
	count: number;
	kind?: 'working' | 'episodic' | 'semantic' | 'procedural' | (string & {});
	capacity?: number | null;
	spill_to?: string | null;
	promote_to?: string | null;
	shared?: boolean;
	per_session?: boolean;
	[field: string]: unknown;
}

export interface DescribeResult {
	protocol: string;
	name: string;
	capabilities: (Capability | (string & {}))[];
	methods: string[];
	limits?: { max_records_per_call?: number; max_recall_limit?: number; max_content_length?: number; [field: string]: unknown };
	tiers?: TierInfo[];
	embeddings?: { dimensions: number | null; metric: string; metrics?: string[]; model?: string | null; [field: string]: unknown };
	events?: { push: boolean; [field: string]: unknown };
	summarize?: { model: string | null; [field: string]: unknown };
	prompt?: { styles: string[]; methods: string[]; model?: string | null; [field: string]: unknown };
	[field: string]: unknown;
}

export interface RememberParams { records: NewRecord[]; owner?: string; [field: string]: unknown }
export interface RememberResult { ids: string[]; [field: string]: unknown }

export interface RecallParams {
	query?: string;
	tier?: string;
	limit?: number;
	where?: Where;
	min_score?: number;
	owner?: string;
	embedding?: number[];
	key_prefix?: string;
	embeddings?: boolean;
	prompt?: PromptOption;
	[field: string]: unknown;
}

export interface TimelineParams {
	tier?: string;
	limit?: number;
	owner?: string;
	where?: Where;
	key_prefix?: string;
	embeddings?: boolean;
	prompt?: PromptOption;
	[field: string]: unknown;
}

/** recall and timeline: `prompt` and `prompt_ids` only when a prompt was asked for. */
export interface RecordsResult {
	records: MemoryRecord[];
	prompt?: string;
	prompt_ids?: string[];
	[field: string]: unknown;
}

export interface ForgetParams {
	ids?: string[];
	query?: string;
	tier?: string;
	where?: Where;
	owner?: string;
	key_prefix?: string;
	[field: string]: unknown;
}
export interface ForgetResult { forgotten: number; [field: string]: unknown }

export interface PromoteParams { ids: string[]; tier: string; salience?: number; [field: string]: unknown }
export interface PromoteResult { promoted: number; [field: string]: unknown }

export interface ConsolidateResult {
	moved: number;
	promoted: number;
	dropped: number;
	summarized: number;
	counts: { [tier: string]: number };
	[field: string]: unknown;
}

export interface ReinforceParams { ids: string[]; amount?: number; [field: string]: unknown }
export interface ReinforceResult { reinforced: number; [field: string]: unknown }

export interface FetchParams { key: string; owner?: string; embeddings?: boolean; [field: string]: unknown }
export interface FetchResult { record: MemoryRecord | null; [field: string]: unknown }

export interface SessionListParams { owner?: string; [field: string]: unknown }
export interface SessionInfo {
	session: string;
	records: number;
	tiers?: { [tier: string]: number };
	opened_at?: Timestamp;
	touched_at?: Timestamp;
	[field: string]: unknown;
}
export interface SessionListResult { sessions: SessionInfo[]; [field: string]: unknown }

export interface SessionCloseParams { session: string; owner?: string; [field: string]: unknown }
export interface SessionCloseResult extends ConsolidateResult { closed: string; flushed: number }

/** An event (§4.12); `kind` may be a value of the server's own. */
export interface MemoryEvent {
	kind: 'written' | 'forgotten' | 'promoted' | 'consolidated' | 'session_closed' | (string & {});
	at: Timestamp;
	id?: string;
	ids?: string[];
	tier?: string;
	session?: string | null;
	key?: string | null;
	revision?: number;
	count?: number;
	moved?: number;
	promoted?: number;
	dropped?: number;
	summarized?: number;
	[field: string]: unknown;
}

export interface EventsParams { cursor?: string; limit?: number; kinds?: string[]; owner?: string; [field: string]: unknown }
export interface EventsResult {
	events: MemoryEvent[];
	/** Opaque: never parse it (§4.12). */
	cursor: string;
	more?: boolean;
	reset?: boolean;
	[field: string]: unknown;
}

export interface SubscribeParams { kinds?: string[]; owner?: string; [field: string]: unknown }
export interface SubscribeResult { subscribed: boolean; [field: string]: unknown }

export interface SummarizeParams {
	ids?: string[];
	query?: string;
	tier?: string;
	where?: Where;
	key_prefix?: string;
	limit?: number;
	owner?: string;
	into?: string;
	key?: string;
	[field: string]: unknown;
}
export interface SummarizeResult { records: MemoryRecord[]; read: number; written: number; [field: string]: unknown }

// ---------------------------------------------------------------- transports

/** Per-call options. */
export interface CallOptions {
	/** Milliseconds to wait for the answer (default: the transport's, 30000). 0: forever. */
	timeout?: number;
	signal?: AbortSignal;
}

/** A JSON-RPC 2.0 message as sent or received. */
export interface JsonRpcMessage {
	jsonrpc: '2.0';
	id?: string | number | null;
	method?: string;
	params?: unknown;
	result?: unknown;
	error?: { code: number; message: string; data?: unknown };
	[field: string]: unknown;
}

/** What A2MClient needs of a transport. */
export interface Transport {
	/** Whether this transport can carry notifications. */
	readonly push: boolean;
	request(message: JsonRpcMessage, options?: CallOptions & { idempotent?: boolean }): Promise<JsonRpcMessage>;
	notify(message: JsonRpcMessage): void | Promise<void>;
	onNotification(fn: (message: JsonRpcMessage) => void): () => void;
	onClose(fn: (error: TransportError, byClose: boolean) => void): () => void;
	hold(): void;
	release(): void;
	close(): Promise<number | null>;
}

export interface StdioOptions {
	cwd?: string;
	env?: NodeJS.ProcessEnv;
	/** The server's stderr: inherited (default), piped (its tail kept for errors), or ignored. */
	stderr?: 'inherit' | 'pipe' | 'ignore';
	/** Default per-call timeout in ms (30000). */
	timeout?: number;
	/** How long close() waits for the server to exit after closing stdin (5000 ms). */
	closeTimeout?: number;
	/** The longest line accepted from the server, in characters (64 MiB). */
	maxLine?: number;
}

/** The stdio binding (§8.2): the server as a child process. */
export declare class StdioTransport implements Transport {
	static spawn(command: string, args?: string[], options?: StdioOptions): Promise<StdioTransport>;
	constructor(command: string, args?: string[], options?: StdioOptions);
	readonly push: true;
	readonly pid: number | undefined;
	/** The tail of the server's stderr (with stderr: 'pipe'). */
	readonly stderr: string;
	request(message: JsonRpcMessage, options?: CallOptions): Promise<JsonRpcMessage>;
	notify(message: JsonRpcMessage): void;
	onNotification(fn: (message: JsonRpcMessage) => void): () => void;
	onClose(fn: (error: TransportError, byClose: boolean) => void): () => void;
	hold(): void;
	release(): void;
	/** Closes stdin, waits for the exit (then SIGTERM, SIGKILL); resolves the exit status. */
	close(): Promise<number | null>;
}

export interface HttpOptions {
	/** Sent as `Authorization: Bearer <token>`. */
	token?: string;
	/** Extra headers (never Origin). */
	headers?: Record<string, string>;
	/** Default per-call timeout in ms (30000). */
	timeout?: number;
	/** PEM certificate(s) to trust, for a self-signed HTTPS server. */
	ca?: string | Buffer | Array<string | Buffer>;
	/** Connections kept at most (16). */
	maxSockets?: number;
	/** The A2M-Protocol-Version header (default a2m/0.1). */
	protocol?: string;
	/** An http(s).Agent of your own, instead of the kept-alive one made here. */
	agent?: import('node:http').Agent;
}

/** The HTTP binding (§8.3): one POST per message, kept-alive connections. */
export declare class HttpTransport implements Transport {
	constructor(url: string | URL, options?: HttpOptions);
	readonly push: false;
	/** Connections opened so far. */
	readonly connections: number;
	request(message: JsonRpcMessage, options?: CallOptions & { idempotent?: boolean }): Promise<JsonRpcMessage>;
	notify(message: JsonRpcMessage, options?: CallOptions): Promise<void>;
	onNotification(fn: (message: JsonRpcMessage) => void): () => void;
	onClose(fn: (error: TransportError, byClose: boolean) => void): () => void;
	hold(): void;
	release(): void;
	close(): Promise<number>;
}

// ---------------------------------------------------------------- events

export interface WatchOptions {
	/** Resume from this cursor; default: now. */
	cursor?: string;
	kinds?: string[];
	limit?: number;
	owner?: string;
	/** Milliseconds between polls that found nothing new (1000). */
	interval?: number;
	/** Called when the server could not honour the cursor (events may be missed). */
	onReset?: (reply: EventsResult) => void | Promise<void>;
}

/** Polls memory/events: `for await (const event of client.watch())`. */
export declare class EventWatch implements AsyncIterable<MemoryEvent> {
	/** The position after the last batch handed out whole (its last event received). */
	cursor: string | undefined;
	[Symbol.asyncIterator](): AsyncGenerator<MemoryEvent, void, undefined>;
	close(): void;
}

export interface SubscribeOptions extends CallOptions {
	kinds?: string[];
	owner?: string;
	/** Unread events kept before the iterator fails (10000). */
	maxBuffered?: number;
}

/** Pushed events: `for await (const event of await client.subscribe())`; ending it unsubscribes. */
export declare class Subscription implements AsyncIterableIterator<MemoryEvent> {
	readonly buffered: number;
	[Symbol.asyncIterator](): this;
	next(): Promise<IteratorResult<MemoryEvent, undefined>>;
	return(): Promise<IteratorResult<MemoryEvent, undefined>>;
	close(): Promise<void>;
	detach(): void;
}

// ---------------------------------------------------------------- the client

export interface ConnectOptions {
	/** Default per-call timeout in ms. */
	timeout?: number;
	/** Scope describe's counts (scopes). */
	owner?: string;
}

/**
 * An A2M client. connect() (or stdio(), http()) calls memory/describe first;
 * every method of a capability the server did not declare is then refused
 * with A2MError -32003 without being sent.
 */
export declare class A2MClient {
	static connect(transport: Transport, options?: ConnectOptions): Promise<A2MClient>;
	static stdio(command: string, args?: string[], options?: StdioOptions & ConnectOptions): Promise<A2MClient>;
	static http(url: string | URL, options?: HttpOptions & ConnectOptions): Promise<A2MClient>;
	constructor(transport: Transport, options?: ConnectOptions);

	readonly transport: Transport;
	/** The last describe result, unchanged. */
	readonly description: DescribeResult | null;
	readonly capabilities: string[];
	supports(capability: Capability | (string & {})): boolean;
	/** events declared with push: true, on a transport that can carry it. */
	readonly canPush: boolean;

	/** Any method by name; returns its result or throws its A2MError. */
	call<T = unknown>(method: Method | (string & {}), params?: unknown, options?: CallOptions): Promise<T>;

	describe(params?: DescribeParams, options?: CallOptions): Promise<DescribeResult>;
	remember(records: NewRecord[] | RememberParams, options?: CallOptions): Promise<RememberResult>;
	recall(params?: string | RecallParams, options?: CallOptions): Promise<RecordsResult>;
	timeline(params?: TimelineParams, options?: CallOptions): Promise<RecordsResult>;
	forget(params: ForgetParams, options?: CallOptions): Promise<ForgetResult>;
	promote(params: PromoteParams, options?: CallOptions): Promise<PromoteResult>;
	consolidate(options?: CallOptions): Promise<ConsolidateResult>;
	reinforce(params: ReinforceParams, options?: CallOptions): Promise<ReinforceResult>;
	fetch(params: string | FetchParams, options?: CallOptions): Promise<FetchResult>;
	sessionList(params?: SessionListParams, options?: CallOptions): Promise<SessionListResult>;
	sessionClose(params: string | SessionCloseParams, options?: CallOptions): Promise<SessionCloseResult>;
	events(params?: EventsParams, options?: CallOptions): Promise<EventsResult>;
	eventsSubscribe(params?: SubscribeParams, options?: CallOptions): Promise<SubscribeResult>;
	eventsUnsubscribe(options?: CallOptions): Promise<SubscribeResult>;
	summarize(params: SummarizeParams, options?: CallOptions): Promise<SummarizeResult>;

	/** Polls memory/events as an async iterator (any transport). */
	watch(options?: WatchOptions): EventWatch;
	/** Subscribes to push (stdio) and iterates the pushed events. */
	subscribe(options?: SubscribeOptions): Promise<Subscription>;

	/** Closes the transport; a stdio server exits. */
	close(): Promise<number | null>;
}
