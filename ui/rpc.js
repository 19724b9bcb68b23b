// rpc.js — the inspector's one way to the store: A2M JSON-RPC over the
// HTTP binding (spec §8.3), to the endpoint of the server that served the
// page. The token, when the server wants one, lives in sessionStorage:
// this tab only, gone when it closes, never sent anywhere else.

const TOKEN_KEY = 'a2m-inspector-token';

// A JSON-RPC error object from the server.
export class RpcError extends Error {
  constructor(error) {
    super(error.message || `error ${error.code}`);
    this.code = error.code;
    this.data = error.data;
  }
}

// The server refused the request at the door (401): a token is wanted.
export class AuthError extends Error {}

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (t) => sessionStorage.setItem(TOKEN_KEY, t),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

let nextId = 1;

// Calls method with params; resolves to the result, rejects with an
// RpcError, an AuthError or the fetch's own error.
export async function call(endpoint, method, params = {}) {
  const headers = {
    'Content-Type': 'application/json',
    'A2M-Protocol-Version': 'a2m/0.1',
  };
  const t = token.get();
  if (t) headers.Authorization = `Bearer ${t}`;
  const resp = await fetch(endpoint, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }),
    credentials: 'omit',
    cache: 'no-store',
  });
  if (resp.status === 401) throw new AuthError('the server wants a valid token');
  if (!resp.ok) throw new Error(`HTTP ${resp.status}`);
  const msg = await resp.json();
  if (msg.error) throw new RpcError(msg.error);
  return msg.result;
}

// The page's configuration: where the endpoint is, whether it wants a token.
export async function config() {
  const resp = await fetch('config.json', { cache: 'no-store' });
  if (!resp.ok) throw new Error(`config.json: HTTP ${resp.status}`);
  return resp.json();
}
