// stdio.js — the stdio binding (spec §8.2): the server is a child process,
// one JSON-RPC message per line each way.
//
// Responses are matched to requests by id, whatever order they come in, and
// every other line — a `memory/event` notification after a subscribe — is
// handed to the notification listeners as it arrives, so notifications may
// interleave with responses anywhere (§8.2 requires a client to tolerate it).
// Ids are compared as they are: the number 1 and the string "1" are two ids
// (DECISIONS 022: an id normalised on the way is a response never matched).
//
// The child and its pipes keep Node's event loop alive only while something
// waits on them (a request, or a push iterator waiting for its next event),
// so a program that forgets close() still exits; closing stdin is the
// shutdown signal the spec names, with SIGTERM and SIGKILL after it for a
// server that does not take the hint.
import { spawn } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';
import { TimeoutError, TransportError } from './errors.js';

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_CLOSE_TIMEOUT_MS = 5_000;
const DEFAULT_MAX_LINE = 64 * 1024 * 1024;
const STDERR_TAIL = 4096;

export class StdioTransport {
	/**
	 * Starts `command args...` and resolves once the process is running.
	 * Rejects with a TransportError when it cannot be started (no such file).
	 */
	static spawn(command, args = [], options = {}) {
		const t = new StdioTransport(command, args, options);
		return t.#started.then(() => t);
	}

	#child;
	#started;
	#pending = new Map(); // id -> { resolve, reject, timer, method, cleanup }
	#listeners = new Set();
	#closeListeners = new Set();
	#decoder = new StringDecoder('utf8');
	#partial = [];
	#partialLength = 0;
	#holds = 0;
	#closing = false;
	#failure = null; // the TransportError every later call gets
	#exited;
	#stderrTail = '';
	#timeout;
	#closeTimeout;
	#maxLine;

	constructor(command, args = [], options = {}) {
		this.#timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
		this.#closeTimeout = options.closeTimeout ?? DEFAULT_CLOSE_TIMEOUT_MS;
		this.#maxLine = options.maxLine ?? DEFAULT_MAX_LINE;
		const stderr = options.stderr ?? 'inherit';
		this.#child = spawn(command, args, {
			cwd: options.cwd,
			env: options.env,
			stdio: ['pipe', 'pipe', stderr],
		});
		const child = this.#child;
		this.#started = new Promise((resolve, reject) => {
			child.once('spawn', resolve);
			child.once('error', (err) => {
				const e = new TransportError(`cannot start ${command}: ${err.message}`, { cause: err });
				this.#fail(e);
				reject(e);
			});
		});
		this.#started.catch(() => {}); // reported through spawn() or the first call
		this.#exited = new Promise((resolve) => {
			child.once('close', (code, signal) => {
				if (!this.#closing) {
					const how = signal ? `signal ${signal}` : `exit status ${code}`;
					const tail = this.#stderrTail.trim();
					this.#fail(new TransportError(`the server exited (${how})${tail ? `: ${tail}` : ''}`));
				}
				resolve(code);
			});
		});
		child.stdout.on('data', (chunk) => this.#onData(chunk));
		// A write to a server that has exited fails here rather than crashing
		// the process. Its exit, reported by 'close' with the status and the
		// stderr that says why, usually follows at once and is the better
		// message; this one stands if it does not.
		child.stdin.on('error', (err) => {
			const e = new TransportError(`writing to the server failed: ${err.message}`, { cause: err });
			setTimeout(() => this.#fail(e), 1000).unref();
		});
		if (stderr === 'pipe') {
			child.stderr.setEncoding('utf8');
			child.stderr.on('data', (s) => {
				this.#stderrTail = (this.#stderrTail + s).slice(-STDERR_TAIL);
			});
		}
		this.#setRef(false);
	}

	/** stdio carries notifications, so push can work here (§4.13). */
	get push() {
		return true;
	}

	/** The child's process id. */
	get pid() {
		return this.#child.pid;
	}

	/** The last few KB the server wrote on stderr (only with stderr: 'pipe'). */
	get stderr() {
		return this.#stderrTail;
	}

	/**
	 * Sends one request (an object with an `id`) and resolves with the
	 * response object as received, whether it carries `result` or `error`.
	 * Rejects with TimeoutError after `timeout` ms, TransportError when the
	 * connection fails.
	 */
	request(message, { timeout = this.#timeout, signal } = {}) {
		const id = message.id;
		if (id === undefined || id === null) return Promise.reject(new TypeError('a request needs an id'));
		if (this.#failure) return Promise.reject(this.#failure);
		if (this.#pending.has(id)) return Promise.reject(new TypeError(`id ${JSON.stringify(id)} is already in flight`));
		if (signal?.aborted) return Promise.reject(signal.reason);
		return new Promise((resolve, reject) => {
			const entry = { resolve, reject, method: message.method, timer: null, cleanup: null };
			const done = () => {
				this.#pending.delete(id);
				clearTimeout(entry.timer);
				entry.cleanup?.();
				this.release();
			};
			entry.resolve = (v) => { done(); resolve(v); };
			entry.reject = (e) => { done(); reject(e); };
			if (timeout > 0 && Number.isFinite(timeout)) {
				entry.timer = setTimeout(() => entry.reject(new TimeoutError(message.method, timeout)), timeout);
			}
			if (signal) {
				const onAbort = () => entry.reject(signal.reason);
				signal.addEventListener('abort', onAbort, { once: true });
				entry.cleanup = () => signal.removeEventListener('abort', onAbort);
			}
			this.#pending.set(id, entry);
			this.hold();
			this.#write(message);
		});
	}

	/** Sends a notification (no `id`, no answer). */
	notify(message) {
		if (this.#failure) throw this.#failure;
		this.#write(message);
	}

	/** Calls fn(message) for every notification; returns the function that stops it. */
	onNotification(fn) {
		this.#listeners.add(fn);
		return () => this.#listeners.delete(fn);
	}

	/**
	 * Calls fn(error, byClose) once the connection is over for good: byClose
	 * is true when close() ended it, false when it failed.
	 */
	onClose(fn) {
		this.#closeListeners.add(fn);
		return () => this.#closeListeners.delete(fn);
	}

	/** Keeps the event loop alive until the matching release(). */
	hold() {
		if (this.#holds++ === 0) this.#setRef(true);
	}

	release() {
		if (--this.#holds === 0) this.#setRef(false);
	}

	/**
	 * Closes the server's stdin and waits for it to exit (spec §8.2), then
	 * SIGTERM, then SIGKILL. Calls still waiting are rejected. Resolves with
	 * the exit status (null when a signal ended it). Safe to call twice.
	 */
	async close() {
		if (!this.#closing) {
			this.#closing = true;
			this.#fail(new TransportError('the transport is closed'), true);
			this.#setRef(true);
			this.#child.stdin.end();
			const escalate = async (sig, ms) => {
				const timer = new Promise((r) => setTimeout(r, ms, 'timeout').unref());
				if ((await Promise.race([this.#exited, timer])) === 'timeout') this.#child.kill(sig);
			};
			await escalate('SIGTERM', this.#closeTimeout);
			await escalate('SIGKILL', 2000);
		}
		return this.#exited;
	}

	#write(message) {
		// JSON.stringify never emits a raw newline, so each message is one line.
		this.#child.stdin.write(JSON.stringify(message) + '\n');
	}

	#setRef(on) {
		const c = this.#child;
		for (const h of [c, c.stdin, c.stdout, c.stderr]) {
			if (h && typeof h.ref === 'function') on ? h.ref() : h.unref();
		}
	}

	#onData(chunk) {
		const text = this.#decoder.write(chunk);
		let start = 0;
		let nl;
		while ((nl = text.indexOf('\n', start)) !== -1) {
			const piece = text.slice(start, nl);
			const line = this.#partial.length ? this.#partial.join('') + piece : piece;
			this.#partial = [];
			this.#partialLength = 0;
			start = nl + 1;
			this.#onLine(line);
		}
		if (start < text.length) {
			this.#partial.push(text.slice(start));
			this.#partialLength += text.length - start;
			if (this.#partialLength > this.#maxLine) {
				this.#fail(new TransportError(`the server sent a line longer than ${this.#maxLine} characters`));
				this.#child.kill('SIGTERM');
			}
		}
	}

	#onLine(line) {
		if (line.trim() === '') return;
		let msg;
		try {
			msg = JSON.parse(line);
		} catch {
			// stdout carries only JSON-RPC (§8.2): anything else means the
			// stream can no longer be trusted to frame responses.
			this.#fail(new TransportError(`the server wrote a line that is not JSON: ${line.slice(0, 200)}`));
			this.#child.kill('SIGTERM');
			return;
		}
		if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) return;
		const isResponse = 'result' in msg || 'error' in msg;
		if (isResponse && msg.id !== null && msg.id !== undefined) {
			// A response to nothing we wait for (a call that timed out) is dropped.
			this.#pending.get(msg.id)?.resolve(msg);
		} else if (isResponse) {
			// An error with id null: the server could not read a request's id
			// (too long, unparsable). It answers lines in order, so it is the
			// oldest request still waiting.
			const first = this.#pending.values().next().value;
			first?.resolve(msg);
		} else if (typeof msg.method === 'string' && msg.id === undefined) {
			for (const fn of this.#listeners) fn(msg);
		}
		// A request from the server is forbidden (§8) and ignored.
	}

	#fail(err, byClose = false) {
		if (this.#failure) return;
		this.#failure = err;
		for (const entry of [...this.#pending.values()]) entry.reject(err);
		for (const fn of this.#closeListeners) fn(err, byClose);
	}
}
