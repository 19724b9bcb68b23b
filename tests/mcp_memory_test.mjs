// mcp_memory_test.mjs A2M_BINARY — `a2m import` of the file the official
// MCP memory server (@modelcontextprotocol/server-memory, installed by
// `npm ci`) writes itself: the server is driven over stdio with the MCP SDK
// client, made to create entities, observations and relations, and left to
// write its memory file; a2m imports that file and the records are read
// back through the protocol. Prints "ok"/"FAIL" per check and
// "N passed, M failed".
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { check, expect, fail, finish, ok } from './lib.mjs';

const a2m = resolve(process.argv[2] ?? 'build/a2m');
const dir = mkdtempSync(join(tmpdir(), 'a2m-mcp-memory-'));
const memoryFile = join(dir, 'memory.jsonl');
const db = join(dir, 'imported.db');

// The server's entry point, as its package names it.
const require = createRequire(import.meta.url);
const pkg = require.resolve('@modelcontextprotocol/server-memory/package.json');
const entry = join(dirname(pkg), JSON.parse(readFileSync(pkg, 'utf8')).bin?.['mcp-server-memory'] ?? 'dist/index.js');

// Runs a2m with args; {status, stdout, stderr}.
const run = (args, input) => spawnSync(a2m, args, { input, encoding: 'utf8' });

// Requests to `a2m serve --stdio --db db`, one per line; their results.
function ask(...requests) {
  const input = requests.map((r, i) => JSON.stringify({ jsonrpc: '2.0', id: i + 1, ...r })).join('\n') + '\n';
  const res = run(['serve', '--db', db], input);
  return res.stdout.trim().split('\n').map((l) => JSON.parse(l).result);
}

try {
  // ---- the MCP memory server writes its file ----
  const transport = new StdioClientTransport({
    command: process.execPath, args: [entry], env: { ...process.env, MEMORY_FILE_PATH: memoryFile }, stderr: 'pipe',
  });
  const client = new Client({ name: 'a2m-import-test', version: '1.0.0' });
  await client.connect(transport);
  const { tools } = await client.listTools();
  check('the memory server offers its graph tools', ['create_entities', 'create_relations', 'add_observations']
    .every((t) => tools.some((x) => x.name === t)), tools.map((t) => t.name).join(','));
  await client.callTool({ name: 'create_entities', arguments: { entities: [
    { name: 'Ada Lovelace', entityType: 'person', observations: ['Wrote the first published program', 'Prefers tea to coffee'] },
    { name: 'Analytical Engine', entityType: 'machine', observations: ['Designed by Charles Babbage'] },
    { name: 'London', entityType: 'city', observations: [] },
  ] } });
  await client.callTool({ name: 'add_observations', arguments: { observations: [
    { entityName: 'Ada Lovelace', contents: ['Translated Menabrea\'s <notes> on the engine'] },
  ] } });
  await client.callTool({ name: 'create_relations', arguments: { relations: [
    { from: 'Ada Lovelace', to: 'Analytical Engine', relationType: 'wrote programs for' },
    { from: 'Ada Lovelace', to: 'London', relationType: 'lived in' },
  ] } });
  await client.close();
  check('the memory server wrote its file', existsSync(memoryFile), memoryFile);
  const lines = readFileSync(memoryFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  expect('... entities and relations, one a line', lines.map((l) => l.type),
    ['entity', 'entity', 'entity', 'relation', 'relation']);

  // ---- a2m imports it ----
  let res = run(['import', '--db', db, memoryFile]);
  expect('a2m import reads it', res.status, 0);
  expect('... as the MCP memory format, every observation, entity and relation a record', res.stdout.trim(),
    `a2m import: ${memoryFile} (mcp-memory): 7 read, 7 imported, 0 skipped (id exists), 0 not written (key held)`);
  res = run(['import', '--db', db, memoryFile]);
  expect('importing it again changes nothing', res.stdout.trim(),
    `a2m import: ${memoryFile} (mcp-memory): 7 read, 0 imported, 7 skipped (id exists), 0 not written (key held)`);

  const [timeline, recall, grouped] = ask(
    { method: 'memory/timeline', params: {} },
    { method: 'memory/recall', params: { query: 'tea or coffee', limit: 1 } },
    { method: 'memory/timeline', params: { where: { group: 'mcp-memory:Ada Lovelace' } } },
  );
  const contents = timeline.records.map((r) => r.content);
  expect('each observation is a record of its own, in the file\'s order', contents, [
    'Wrote the first published program', 'Prefers tea to coffee', 'Translated Menabrea\'s <notes> on the engine',
    'Designed by Charles Babbage', 'London (city)',
    'Ada Lovelace wrote programs for Analytical Engine', 'Ada Lovelace lived in London']);
  const first = timeline.records[0];
  expect('the entity\'s name and type are in metadata', first.metadata, { entity: 'Ada Lovelace', entityType: 'person' });
  expect('a relation says what it relates', timeline.records[5].metadata,
    { relation: 'wrote programs for', from: 'Ada Lovelace', to: 'Analytical Engine' });
  expect('an entity\'s records, and the relations from it, are one group', grouped.records.length, 5);
  check('ids say where the records came from', timeline.records.every((r) => /^mcp-memory:[0-9a-f]{32}$/.test(r.id)),
    timeline.records.map((r) => r.id).join(','));
  expect('and recall finds them', recall.records[0]?.content, 'Prefers tea to coffee');
} catch (e) {
  fail('the MCP memory suite ran', e.stack ?? String(e));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
finish();
