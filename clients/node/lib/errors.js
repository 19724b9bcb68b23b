// errors.js — what can go wrong in a call, as classes a caller can tell apart.
//
// A2MError is the protocol speaking: a JSON-RPC error object the server sent
// (or one this client raised in the server's place, such as -32003 for a
// method whose capability the server did not declare). It carries the code,
// the message and the data exactly as the error object had them.
//
// TransportError is the connection failing: a process that would not start
// or exited, an HTTP status other than 200, a response that was not JSON.
// TimeoutError, a TransportError, is a call the server did not answer in
// time. Keeping the two families apart is what lets a caller treat READ_ONLY
// (spec §2.1) as an answer, never as a broken connection to retry.

/** The error codes of spec §7, by name. */
export const ErrorCode = Object.freeze({
	PARSE_ERROR: -32700,
	INVALID_REQUEST: -32600,
	METHOD_NOT_FOUND: -32601,
	INVALID_PARAMS: -32602,
	INTERNAL_ERROR: -32603,
	UNKNOWN_RECORD: -32001,
	UNKNOWN_TIER: -32002,
	CAPABILITY_NOT_SUPPORTED: -32003,
	READ_ONLY: -32004,
	SCOPE_DENIED: -32005,
	QUOTA_EXCEEDED: -32006,
	PROTOCOL_NOT_SUPPORTED: -32007,
	EMBEDDING_MISMATCH: -32008,
});

const codeNames = new Map(Object.entries(ErrorCode).map(([name, code]) => [code, name]));

/** The spec's name for a code ("READ_ONLY"), or undefined for any other. */
export function errorName(code) {
	return codeNames.get(code);
}

/** A JSON-RPC error object, from the server or raised in its place. */
export class A2MError extends Error {
	constructor(code, message, data, method) {
		super(message);
		this.name = 'A2MError';
		this.code = code;
		/** The spec's name for the code, or undefined when it is not one of §7. */
		this.codeName = errorName(code);
		// Present only when the error object had it: `data` MAY be absent (§7).
		if (data !== undefined) this.data = data;
		/** The method whose call failed. */
		this.method = method;
	}

	/** Builds the error from a JSON-RPC error object as received. */
	static fromObject(error, method) {
		const code = Number.isInteger(error?.code) ? error.code : ErrorCode.INTERNAL_ERROR;
		const message = typeof error?.message === 'string' ? error.message : 'error without a message';
		return new A2MError(code, message, error?.data, method);
	}
}

/** The connection failed; the request may or may not have reached the server. */
export class TransportError extends Error {
	constructor(message, { status, body, cause } = {}) {
		super(message, cause === undefined ? undefined : { cause });
		this.name = 'TransportError';
		// HTTP only: the status of a response that was not 200, and its body.
		if (status !== undefined) this.status = status;
		if (body !== undefined) this.body = body;
	}
}

/** The server did not answer within the call's timeout. */
export class TimeoutError extends TransportError {
	constructor(method, ms) {
		super(`${method}: no answer within ${ms} ms`);
		this.name = 'TimeoutError';
		this.timeout = ms;
	}
}
