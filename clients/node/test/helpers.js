// helpers.js — what the Node client's tests share: the a2m binary, real
// servers started over stdio and HTTP, and a counter of what a transport
// actually sent.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
export const A2M = resolve(process.env.A2M_BINARY ?? join(here, '../../../build/a2m'));

/** A temporary directory removed when the process exits. */
export function tempDir() {
	const dir = mkdtempSync(join(tmpdir(), 'a2m-node-client-'));
	process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
	return dir;
}

/** Writes a token file (TOKEN PRINCIPAL per line) and returns its path. */
export function tokenFile(dir, pairs) {
	const path = join(dir, 'tokens');
	writeFileSync(path, pairs.map(([t, p]) => `${t} ${p}\n`).join(''));
	return path;
}

/**
 * Starts `a2m serve --http 127.0.0.1:0 ARGS` and resolves { url, stop }
 * once its start-up line names the port (docs/HTTP.md). stop() sends
 * SIGTERM and resolves the exit status.
 */
export function startHttp(args) {
	return new Promise((resolveStart, reject) => {
		const child = spawn(A2M, ['serve', '--http', '127.0.0.1:0', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
		let log = '';
		let started = false;
		child.stderr.setEncoding('utf8');
		child.stderr.on('data', (s) => {
			log += s;
			const m = /^a2m serve: listening on (\S+) /m.exec(log);
			if (m && !started) {
				started = true;
				const exited = new Promise((r) => child.once('exit', (code) => r(code)));
				resolveStart({
					url: m[1],
					pid: child.pid,
					log: () => log,
					stop: () => {
						child.kill('SIGTERM');
						return exited;
					},
				});
			}
		});
		child.once('exit', (code) => {
			if (!started) reject(new Error(`a2m serve --http exited (${code}): ${log}`));
		});
	});
}

/** Wraps transport.request to record every message sent through it. */
export function recordRequests(transport) {
	const sent = [];
	const request = transport.request.bind(transport);
	transport.request = (message, options) => {
		sent.push(message);
		return request(message, options);
	};
	return sent;
}

/** Resolves when fn() is true, checking every 10 ms, or rejects after ms. */
export async function until(fn, ms = 5000) {
	const end = Date.now() + ms;
	while (!(await fn())) {
		if (Date.now() > end) throw new Error('condition not met in time');
		await new Promise((r) => setTimeout(r, 10));
	}
}

/** An RFC 3339 UTC timestamp with milliseconds and Z (§3.3). */
export const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * Stops process pid with SIGSTOP and waits until the kernel shows it
 * stopped: kill() returns before every thread of a busy process is.
 */
export async function suspend(pid) {
	process.kill(pid, 'SIGSTOP');
	await until(() => /^\d+ \(.*\) T /.test(readFileSync(`/proc/${pid}/stat`, 'utf8')));
}

/** Lets a process stopped by suspend() go on. */
export function resume(pid) {
	process.kill(pid, 'SIGCONT');
}
