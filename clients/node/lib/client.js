// client.js — A2MClient: the A2M 0.1 methods over any transport.
//
// A client is made by connect(), which calls `memory/describe` before
// anything else (spec §2: a client MUST) and keeps the answer. From then on
// every method checks the capability it belongs to against that answer and
// refuses, without sending anything, a method the server did not declare:
// the caller gets the same A2MError with -32003 the server would have sent
// (§2: a client MUST NOT call it). Results are the server's objects as
// received: fields this client does not know are kept, timestamps stay
// RFC 3339 strings (§3.3), ids stay opaque strings (§3.2).
//
// Nothing is retried, with one exception that is invisible to the protocol:
// over HTTP a request the server never read (a kept-alive connection it had
// closed) is sent again on a new connection if the method is safe to repeat.
// READ_ONLY, like every A2M error, is an answer and is thrown as such.
import { A2MError, ErrorCode, TransportError } from './errors.js';
import { EventWatch, Subscription } from './events.js';
import { HttpTransport, PROTOCOL } from './http.js';
import { StdioTransport } from './stdio.js';

/** Which capability each method of the spec belongs to (§2). */
export const METHOD_CAPABILITY = Object.freeze({
	'memory/describe': 'core',
	'memory/remember': 'core',
	'memory/recall': 'core',
	'memory/timeline': 'core',
	'memory/forget': 'core',
	'memory/promote': 'tiers',
	'memory/consolidate': 'tiers',
	'memory/reinforce': 'salience',
	'memory/fetch': 'keys',
	'memory/session/list': 'sessions',
	'memory/session/close': 'sessions',
	'memory/events': 'events',
	'memory/events/subscribe': 'events',
	'memory/events/unsubscribe': 'events',
	'memory/summarize': 'summarize',
});

// Methods that change nothing when sent twice, so a request the server never
// read may be sent again. remember joins them when every record has an id
// (§3.2: a client-supplied id makes the write idempotent).
const REPEATABLE = new Set([
	'memory/describe', 'memory/recall', 'memory/timeline', 'memory/fetch',
	'memory/session/list', 'memory/events',
]);

/** Whether a server's protocol version is one this client speaks (§4.1, §9). */
function compatible(version) {
	return version === PROTOCOL || (typeof version === 'string' && version.startsWith(`${PROTOCOL}.`));
}

export class A2MClient {
	#transport;
	#timeout;
	#nextId = 1;
	#description = null;
	#capabilities = new Set();
	#subscription = null;
	#describing = null;

	/**
	 * Wraps a transport (StdioTransport, HttpTransport, or any object with
	 * their request/notify/onNotification/onClose/hold/release/close and
	 * push). Use connect() rather than this: it also calls describe.
	 */
	constructor(transport, { timeout } = {}) {
		this.#transport = transport;
		this.#timeout = timeout;
	}

	/**
	 * Makes a client on `transport` and calls memory/describe. Fails (and
	 * closes the transport) when describe fails or the server speaks another
	 * protocol version (A2MError PROTOCOL_NOT_SUPPORTED).
	 */
	static async connect(transport, options = {}) {
		const client = new A2MClient(transport, options);
		try {
			await client.describe(options.owner === undefined ? {} : { owner: options.owner });
		} catch (err) {
			await transport.close().catch(() => {});
			throw err;
		}
		return client;
	}

	/** Spawns `command args...` (e.g. `a2m serve --memory`) and connects over stdio. */
	static async stdio(command, args = [], options = {}) {
		return A2MClient.connect(await StdioTransport.spawn(command, args, options), options);
	}

	/** Connects to an HTTP endpoint (options: token, timeout, ca, headers). */
	static async http(url, options = {}) {
		return A2MClient.connect(new HttpTransport(url, options), options);
	}

	/** The transport this client talks through. */
	get transport() {
		return this.#transport;
	}

	/** The last memory/describe result, unchanged. */
	get description() {
		return this.#description;
	}

	/** The capabilities the server declared. */
	get capabilities() {
		return [...this.#capabilities];
	}

	/** Whether the server declared `capability`. */
	supports(capability) {
		return this.#capabilities.has(capability);
	}

	/**
	 * Whether memory/events/subscribe can work on this connection: the
	 * server declared `events` with `push: true`, which it does only when
	 * the transport can carry notifications (§4.13).
	 */
	get canPush() {
		return this.supports('events') && this.#description?.events?.push === true && this.#transport.push;
	}

	/**
	 * Sends `method` with `params` and resolves with its result; throws the
	 * A2MError of an error response. Refuses a method of an undeclared
	 * capability without sending it. Methods not in the spec are sent as
	 * they are. options: timeout (ms), signal (AbortSignal).
	 */
	async call(method, params, options = {}) {
		if (method !== 'memory/describe') {
			// A client made with `new` rather than connect() describes now.
			if (this.#description === null) await (this.#describing ??= this.describe());
			const capability = METHOD_CAPABILITY[method];
			if (capability !== undefined && !this.#capabilities.has(capability)) {
				throw new A2MError(ErrorCode.CAPABILITY_NOT_SUPPORTED,
					`${method} needs the '${capability}' capability, which this server does not declare`,
					{ capability }, method);
			}
		}
		const id = this.#nextId++;
		const message = { jsonrpc: '2.0', id, method };
		if (params !== undefined) message.params = params;
		const response = await this.#transport.request(message, {
			timeout: options.timeout ?? this.#timeout,
			signal: options.signal,
			idempotent: repeatable(method, params),
		});
		// A response is bound to its request by the id, echoed unchanged
		// (JSON-RPC 2.0); only an error may carry null, when the server could
		// not read the request's id.
		if (response.id !== id && !(response.id === null && response.error)) {
			throw new TransportError(`${method}: the response carries id ${JSON.stringify(response.id)}, not ${id}`);
		}
		if (response.error !== undefined) throw A2MError.fromObject(response.error, method);
		if (!('result' in response)) throw new TransportError(`${method}: a response with neither result nor error`);
		return response.result;
	}

	/**
	 * memory/describe (§4.1): sends the protocol this client speaks, keeps
	 * the answer (capabilities, push) for the checks of later calls, and
	 * throws PROTOCOL_NOT_SUPPORTED when the server speaks another version.
	 */
	async describe(params = {}, options) {
		const result = await this.call('memory/describe', { protocol: PROTOCOL, ...params }, options);
		if (result === null || typeof result !== 'object' || !Array.isArray(result.capabilities)) {
			throw new TransportError('memory/describe: the result has no capabilities list');
		}
		if (!compatible(result.protocol)) {
			throw new A2MError(ErrorCode.PROTOCOL_NOT_SUPPORTED,
				`the server speaks ${result.protocol}; this client speaks ${PROTOCOL}`,
				{ supported: [PROTOCOL], server: result.protocol }, 'memory/describe');
		}
		this.#description = result;
		this.#capabilities = new Set(result.capabilities);
		this.#describing = null;
		return result;
	}

	/** memory/remember (§4.2): an array of records, or the full params. */
	remember(records, options) {
		return this.call('memory/remember', Array.isArray(records) ? { records } : records, options);
	}

	/** memory/recall (§4.3): a query string, or the full params. */
	recall(params = {}, options) {
		return this.call('memory/recall', typeof params === 'string' ? { query: params } : params, options);
	}

	/** memory/timeline (§4.4). */
	timeline(params = {}, options) {
		return this.call('memory/timeline', params, options);
	}

	/** memory/forget (§4.5): at least one selector, or INVALID_PARAMS. */
	forget(params, options) {
		return this.call('memory/forget', params, options);
	}

	/** memory/promote (§4.6, tiers). */
	promote(params, options) {
		return this.call('memory/promote', params, options);
	}

	/** memory/consolidate (§4.7, tiers). */
	consolidate(options) {
		return this.call('memory/consolidate', {}, options);
	}

	/** memory/reinforce (§4.8, salience). */
	reinforce(params, options) {
		return this.call('memory/reinforce', params, options);
	}

	/** memory/fetch (§4.9, keys): a key, or the full params. */
	fetch(params, options) {
		return this.call('memory/fetch', typeof params === 'string' ? { key: params } : params, options);
	}

	/** memory/session/list (§4.10, sessions). */
	sessionList(params = {}, options) {
		return this.call('memory/session/list', params, options);
	}

	/** memory/session/close (§4.11, sessions): a session name, or the full params. */
	sessionClose(params, options) {
		return this.call('memory/session/close', typeof params === 'string' ? { session: params } : params, options);
	}

	/** memory/events (§4.12, events): one poll. */
	events(params = {}, options) {
		return this.call('memory/events', params, options);
	}

	/**
	 * memory/events/subscribe (§4.13) as sent; subscribe() is the iterator.
	 * Refused here with -32003 when the connection cannot push.
	 */
	eventsSubscribe(params = {}, options) {
		if (this.supports('events') && !this.canPush) {
			return Promise.reject(new A2MError(ErrorCode.CAPABILITY_NOT_SUPPORTED,
				'push is not available on this connection (describe reports events.push false); poll memory/events',
				{ capability: 'events', push: false }, 'memory/events/subscribe'));
		}
		return this.call('memory/events/subscribe', params, options);
	}

	/** memory/events/unsubscribe (§4.14). */
	eventsUnsubscribe(options) {
		return this.call('memory/events/unsubscribe', {}, options);
	}

	/** memory/summarize (§4.15, summarize). */
	summarize(params, options) {
		return this.call('memory/summarize', params, options);
	}

	/**
	 * Polls memory/events as an async iterator of events (every transport).
	 * options: cursor (resume from it; default: now), kinds, limit, owner,
	 * interval (ms between polls that found nothing new, default 1000),
	 * onReset(reply) (called when the server could not honour the cursor).
	 */
	watch(options = {}) {
		if (!this.supports('events')) {
			throw new A2MError(ErrorCode.CAPABILITY_NOT_SUPPORTED,
				"memory/events needs the 'events' capability, which this server does not declare",
				{ capability: 'events' }, 'memory/events');
		}
		return new EventWatch(this, options);
	}

	/**
	 * Subscribes to push (stdio) and resolves with an async iterator of
	 * `memory/event` notifications' events; ending the iteration
	 * unsubscribes. One subscription per client at a time. options: kinds,
	 * owner, maxBuffered (unread events kept before the iterator fails,
	 * default 10000), timeout.
	 */
	async subscribe(options = {}) {
		if (this.#subscription) throw new Error('this client is already subscribed; close that subscription first');
		const params = {};
		if (options.kinds !== undefined) params.kinds = options.kinds;
		if (options.owner !== undefined) params.owner = options.owner;
		const sub = new Subscription(this, this.#transport, options);
		this.#subscription = sub;
		try {
			await this.eventsSubscribe(params, options);
		} catch (err) {
			sub.detach();
			throw err;
		}
		return sub;
	}

	/** @internal The subscription tells its client it has ended. */
	_subscriptionEnded(sub) {
		if (this.#subscription === sub) this.#subscription = null;
	}

	/** Closes the transport (stdio: the server exits). Pending calls fail. */
	close() {
		return this.#transport.close();
	}
}

function repeatable(method, params) {
	if (REPEATABLE.has(method)) return true;
	return method === 'memory/remember' && Array.isArray(params?.records) &&
		params.records.length > 0 && params.records.every((r) => typeof r?.id === 'string' && r.id !== '');
}
