// events.js — watching a store (spec §4.12–§4.14) as async iterators.
//
// EventWatch polls `memory/events` with the cursor of its previous poll:
// every transport can carry it, and successive polls see every retained
// event exactly once, in order. Subscription is push: `memory/event`
// notifications on a transport that can carry them (stdio), after
// `memory/events/subscribe`. Both are one log (§4.13), so a push consumer
// that falls behind can always catch up by polling.
import { TransportError } from './errors.js';

const DEFAULT_INTERVAL_MS = 1000;
const DEFAULT_MAX_BUFFERED = 10_000;

/** Polls memory/events; iterate it with `for await`. */
export class EventWatch {
	#client;
	#params;
	#interval;
	#onReset;
	#closed = false;
	#wake = null;

	/**
	 * The position after the last batch handed out whole (its last event
	 * received). A consumer that stops in the middle of a batch resumes from
	 * before it, so it may see an event twice but never misses one.
	 */
	cursor;

	constructor(client, { cursor, kinds, limit, owner, interval, onReset } = {}) {
		this.#client = client;
		this.cursor = cursor;
		this.#params = {};
		if (kinds !== undefined) this.#params.kinds = kinds;
		if (limit !== undefined) this.#params.limit = limit;
		if (owner !== undefined) this.#params.owner = owner;
		this.#interval = interval ?? DEFAULT_INTERVAL_MS;
		this.#onReset = onReset;
	}

	async *[Symbol.asyncIterator]() {
		try {
			if (this.cursor === undefined) {
				// No cursor means "now": the reply is the head, with no events.
				this.cursor = (await this.#client.events({ ...this.#params })).cursor;
			}
			while (!this.#closed) {
				const reply = await this.#client.events({ ...this.#params, cursor: this.cursor });
				// reset: the cursor fell out of the retained window (or came
				// from another server); events may have been missed (§4.12).
				if (reply.reset && this.#onReset) await this.#onReset(reply);
				const events = reply.events;
				if (events.length === 0) this.cursor = reply.cursor;
				for (let i = 0; i < events.length; i++) {
					if (this.#closed) return;
					// Handing out a batch's last event hands out the batch.
					if (i === events.length - 1) this.cursor = reply.cursor;
					yield events[i];
				}
				if (!reply.more) await this.#sleep();
			}
		} finally {
			this.#closed = true;
		}
	}

	/** Ends the iteration at its next step (a waiting poll ends at once). */
	close() {
		this.#closed = true;
		this.#wake?.();
	}

	#sleep() {
		return new Promise((resolve) => {
			const timer = setTimeout(() => {
				this.#wake = null;
				resolve();
			}, this.#interval);
			this.#wake = () => {
				clearTimeout(timer);
				this.#wake = null;
				resolve();
			};
		});
	}
}

/**
 * The `memory/event` notifications of one connection, as an async iterator
 * of event objects. Made by A2MClient.subscribe(); ending the iteration
 * (break, return(), close()) unsubscribes.
 */
export class Subscription {
	#client;
	#transport;
	#queue = [];
	#waiters = [];
	#error = null;
	#done = false;
	#maxBuffered;
	#stopListening;
	#stopClose;

	constructor(client, transport, { maxBuffered } = {}) {
		this.#client = client;
		this.#transport = transport;
		this.#maxBuffered = maxBuffered ?? DEFAULT_MAX_BUFFERED;
		// Listening starts before the subscribe request is sent: a
		// notification may follow its response on the same read.
		this.#stopListening = transport.onNotification((msg) => {
			if (msg.method === 'memory/event' && msg.params && typeof msg.params === 'object') {
				this.#push(msg.params);
			}
		});
		this.#stopClose = transport.onClose((err, byClose) => this.#end(byClose ? null : err));
	}

	/** How many events have arrived and not been read yet. */
	get buffered() {
		return this.#queue.length;
	}

	[Symbol.asyncIterator]() {
		return this;
	}

	next() {
		if (this.#queue.length) return Promise.resolve({ value: this.#queue.shift(), done: false });
		if (this.#error) return Promise.reject(this.#error);
		if (this.#done) return Promise.resolve({ value: undefined, done: true });
		return new Promise((resolve, reject) => {
			this.#waiters.push({ resolve, reject });
			this.#transport.hold();
		});
	}

	async return() {
		await this.close();
		return { value: undefined, done: true };
	}

	/** Unsubscribes (memory/events/unsubscribe) and ends the iteration. */
	async close() {
		if (this.#done) return;
		this.#end(null);
		try {
			await this.#client.eventsUnsubscribe();
		} catch (err) {
			// The connection is gone, so the subscription is too (§4.13).
			if (!(err instanceof TransportError)) throw err;
		}
	}

	/** Ends this object without telling the server (the subscribe failed). */
	detach() {
		this.#end(null);
	}

	#push(event) {
		if (this.#done) return;
		const w = this.#waiters.shift();
		if (w) {
			this.#transport.release();
			w.resolve({ value: event, done: false });
			return;
		}
		if (this.#queue.length >= this.#maxBuffered) {
			this.#end(new TransportError(
				`more than ${this.#maxBuffered} pushed events unread; catch up with memory/events`));
			return;
		}
		this.#queue.push(event);
	}

	#end(err) {
		if (this.#done) return;
		this.#done = true;
		this.#error = err;
		this.#stopListening();
		this.#stopClose();
		for (const w of this.#waiters.splice(0)) {
			this.#transport.release();
			err ? w.reject(err) : w.resolve({ value: undefined, done: true });
		}
		this.#client._subscriptionEnded(this);
	}
}
