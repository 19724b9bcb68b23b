// types.test.js — compiles types-check.ts, the adapters used as
// docs/FRAMEWORKS.md shows them, against their declarations (index.d.ts
// beside each index.js) and the frameworks' own types, with the repository's
// TypeScript (npm ci). --skipLibCheck: Mastra's and the AI SDK v4 it bundles
// do not compile under --strict themselves; what is checked is that the
// adapters' types fit where the frameworks take them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const tsc = `${root}node_modules/typescript/bin/tsc`;

test('the declarations fit the frameworks under tsc --strict', () => {
	assert.ok(existsSync(tsc), `no TypeScript compiler at ${tsc}: run npm ci at the repository root`);
	const check = fileURLToPath(new URL('./types-check.ts', import.meta.url));
	const out = spawnSync(process.execPath, [tsc, '--noEmit', '--strict', '--skipLibCheck', '--target', 'es2022',
		'--module', 'nodenext', '--moduleResolution', 'nodenext', '--types', 'node',
		'--typeRoots', `${root}node_modules/@types`, check], { encoding: 'utf8' });
	assert.equal(out.status, 0, out.stdout + out.stderr);
});
