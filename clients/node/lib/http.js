// http.js — the HTTP binding (spec §8.3): one JSON-RPC message per POST to
// one endpoint, over kept-alive connections.
//
// Every POST carries `A2M-Protocol-Version` (§8.3.2) and, when a token is
// given, `Authorization: Bearer` (§6.1). No `Origin` is ever sent: the header
// is how a server recognises a browser page (§8.3.1), and a program is not one.
//
// A 200 is a JSON-RPC response, error or not (protocol failures are never an
// HTTP status, §8.3); a 400 carrying a JSON-RPC error is the version refusal
// of §8.3.2 and is returned as that response too. Every other status — 401,
// 403, 413, 5xx — is a TransportError with the status and the body: the
// request was never admitted to the protocol.
//
// Keep-alive has one race: the server may close an idle connection just as a
// request is written on it (docs/HTTP.md, --timeout). A request that fails
// that way on a reused connection is sent again on a new one, once, but only
// when the caller marked it safe to repeat — never a write that has no ids.
import http from 'node:http';
import https from 'node:https';
import { TimeoutError, TransportError } from './errors.js';

const DEFAULT_TIMEOUT_MS = 30_000;
export const PROTOCOL = 'a2m/0.1';
const BODY_LIMIT = 256 * 1024 * 1024;

export class HttpTransport {
	#url;
	#agent;
	#module;
	#headers;
	#timeout;
	#closed = false;
	#connections = 0;
	#sockets = new WeakSet();

	/**
	 * url: the endpoint (http: or https:). options: token (bearer), headers
	 * (extra headers), timeout (ms per call), ca (PEM to trust, for a
	 * self-signed server), protocol (the version header's value), agent (an
	 * http.Agent of the caller's; by default one of our own, kept alive).
	 */
	constructor(url, options = {}) {
		this.#url = new URL(url);
		if (this.#url.protocol !== 'http:' && this.#url.protocol !== 'https:') {
			throw new TypeError(`not an http or https URL: ${url}`);
		}
		const secure = this.#url.protocol === 'https:';
		this.#module = secure ? https : http;
		this.#agent = options.agent ?? new this.#module.Agent({
			keepAlive: true,
			maxSockets: options.maxSockets ?? 16,
			...(secure && options.ca ? { ca: options.ca } : {}),
		});
		this.#timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
		const headers = {};
		for (const [k, v] of Object.entries(options.headers ?? {})) {
			if (k.toLowerCase() === 'origin') throw new TypeError('an A2M client sends no Origin header (spec §8.3.1)');
			headers[k.toLowerCase()] = v;
		}
		headers['content-type'] = 'application/json';
		headers.accept = 'application/json';
		headers['a2m-protocol-version'] = options.protocol ?? PROTOCOL;
		if (options.token) headers.authorization = `Bearer ${options.token}`;
		this.#headers = headers;
	}

	/** HTTP has no server-to-client channel, so never push (§8.3). */
	get push() {
		return false;
	}

	/** How many connections this transport has opened (kept alive, usually 1). */
	get connections() {
		return this.#connections;
	}

	/**
	 * POSTs one request and resolves with the response object. `idempotent`
	 * allows the one resend described above.
	 */
	async request(message, { timeout = this.#timeout, signal, idempotent = false } = {}) {
		if (message.id === undefined || message.id === null) throw new TypeError('a request needs an id');
		const body = JSON.stringify(message);
		let res;
		try {
			res = await this.#post(body, message.method, timeout, signal);
		} catch (err) {
			if (!(idempotent && err.staleConnection)) throw err;
			res = await this.#post(body, message.method, timeout, signal);
		}
		if (res.status === 200 || res.status === 400) {
			const msg = parseResponse(res);
			if (msg) return msg;
		}
		throw statusError(res);
	}

	/** POSTs a notification; the server answers 202 with no body. */
	async notify(message, { timeout = this.#timeout, signal } = {}) {
		const res = await this.#post(JSON.stringify(message), message.method, timeout, signal);
		if (res.status !== 202) throw statusError(res);
	}

	/** There are never notifications over HTTP. */
	onNotification() {
		return () => {};
	}

	onClose() {
		return () => {};
	}

	hold() {}

	release() {}

	/** Closes the kept-alive connections; later calls fail. */
	async close() {
		this.#closed = true;
		this.#agent.destroy();
		return 0;
	}

	#post(body, method, timeout, signal) {
		if (this.#closed) return Promise.reject(new TransportError('the transport is closed'));
		if (signal?.aborted) return Promise.reject(signal.reason);
		return new Promise((resolve, reject) => {
			const req = this.#module.request(this.#url, {
				method: 'POST',
				agent: this.#agent,
				headers: { ...this.#headers, 'content-length': Buffer.byteLength(body) },
			});
			let timer = null;
			let settled = false;
			const finish = (fn, v) => {
				if (settled) return;
				settled = true;
				clearTimeout(timer);
				signal?.removeEventListener('abort', onAbort);
				fn(v);
			};
			const onAbort = () => {
				finish(reject, signal.reason);
				req.destroy();
			};
			signal?.addEventListener('abort', onAbort, { once: true });
			if (timeout > 0 && Number.isFinite(timeout)) {
				timer = setTimeout(() => {
					finish(reject, new TimeoutError(method, timeout));
					req.destroy();
				}, timeout);
			}
			// Whether the socket carried a request before: Node's reusedSocket
			// is not set for a request that waited in the agent's queue.
			let reused = false;
			req.on('socket', (socket) => {
				reused = this.#sockets.has(socket);
				if (!reused) {
					this.#sockets.add(socket);
					this.#connections++;
				}
			});
			req.on('error', (err) => {
				const e = new TransportError(`${method}: ${err.message}`, { cause: err });
				// Reset before any byte of an answer, on a connection used before:
				// the server had closed it while idle.
				e.staleConnection = reused && ['ECONNRESET', 'EPIPE'].includes(err.code);
				finish(reject, e);
			});
			req.on('response', (res) => {
				const chunks = [];
				let size = 0;
				res.on('data', (c) => {
					size += c.length;
					if (size > BODY_LIMIT) {
						finish(reject, new TransportError(`${method}: response larger than ${BODY_LIMIT} bytes`));
						req.destroy();
						return;
					}
					chunks.push(c);
				});
				res.on('end', () => finish(resolve, {
					status: res.statusCode,
					headers: res.headers,
					body: Buffer.concat(chunks).toString('utf8'),
				}));
				res.on('error', (err) => finish(reject, new TransportError(`${method}: ${err.message}`, { cause: err })));
			});
			req.end(body);
		});
	}
}

// The JSON-RPC response in a 200 or 400, or null when the body is not one.
function parseResponse(res) {
	if (!/^application\/json\b/i.test(res.headers['content-type'] ?? '')) return null;
	let msg;
	try {
		msg = JSON.parse(res.body);
	} catch {
		return null;
	}
	if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) return null;
	if (res.status === 200 && ('result' in msg || 'error' in msg)) return msg;
	if (res.status === 400 && msg.error && typeof msg.error === 'object') return msg;
	return null;
}

function statusError(res) {
	const text = res.body.length > 500 ? `${res.body.slice(0, 500)}...` : res.body;
	return new TransportError(`HTTP ${res.status}${text ? `: ${text.trim()}` : ''}`, {
		status: res.status,
		body: res.body,
	});
}
