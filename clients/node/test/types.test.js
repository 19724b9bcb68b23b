// types.test.js — compiles types-check.ts against index.d.ts with the
// TypeScript compiler (a test-only devDependency of the repository, from
// `npm ci`; the client itself needs nothing from npm).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const tsc = `${root}node_modules/typescript/bin/tsc`;

test('index.d.ts compiles under tsc --strict and describes the API as used', () => {
	assert.ok(existsSync(tsc), `no TypeScript compiler at ${tsc}: run npm ci at the repository root`);
	const check = fileURLToPath(new URL('./types-check.ts', import.meta.url));
	const out = spawnSync(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'es2022',
		'--module', 'nodenext', '--moduleResolution', 'nodenext', '--types', 'node',
		'--typeRoots', `${root}node_modules/@types`, check], { encoding: 'utf8' });
	assert.equal(out.status, 0, out.stdout + out.stderr);
});
