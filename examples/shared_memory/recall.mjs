// Step 3 — the Node client, a third reader, no framework at all.
import { A2MClient } from '../../clients/node/index.js';

const memory = await A2MClient.http(process.env.A2M_URL);
const { record } = await memory.fetch({ key: 'ops/staging/db' });
console.log(`Node fetches ops/staging/db: ${record.content}`);
const { records } = await memory.recall({ query: 'deploys freeze', limit: 1 });
console.log(`Node recalls: ${records[0].content}`);
await memory.close();
