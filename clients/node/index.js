// index.js — the a2m-client package: an A2M 0.1 client for Node.js, with no
// dependencies and no build step. README.md shows it in use; index.d.ts has
// the types.
export { A2MClient, METHOD_CAPABILITY } from './lib/client.js';
export { A2MError, ErrorCode, TimeoutError, TransportError, errorName } from './lib/errors.js';
export { EventWatch, Subscription } from './lib/events.js';
export { HttpTransport, PROTOCOL } from './lib/http.js';
export { StdioTransport } from './lib/stdio.js';
