// types-check.ts — compiled (never run) by types.test.js with tsc --strict:
// the hand-written index.d.ts must describe the API as a TypeScript user
// meets it. Lines marked @ts-expect-error must fail to compile.
import {
	A2MClient, A2MError, ErrorCode, HttpTransport, StdioTransport, TimeoutError, TransportError, errorName,
	type DescribeResult, type MemoryEvent, type MemoryRecord, type RecordsResult,
} from '../index.js';

async function main(): Promise<void> {
	const c = await A2MClient.stdio('a2m', ['serve', '--memory'], { timeout: 1000, stderr: 'pipe' });
	const h = await A2MClient.http(new URL('http://127.0.0.1:8778/'), { token: 't', ca: 'pem' });
	const d: DescribeResult | null = c.description;
	const push: boolean | undefined = d?.events?.push;
	const ids: string[] = (await c.remember([{ content: 'x', key: 'k', metadata: { a: [1, null] } }])).ids;
	await c.remember({ records: [{ content: 'y' }], owner: 'o' });
	const r: RecordsResult = await c.recall({ query: 'x', limit: 3, where: { role: ['user'] }, prompt: { style: 'facts' } });
	const first: MemoryRecord | undefined = r.records[0];
	const created: string | undefined = first?.created_at;
	const extra: unknown = first?.x_future;
	const text: string | undefined = (await c.timeline({ prompt: true })).prompt;
	const forgotten: number = (await c.forget({ ids })).forgotten;
	const promoted: number = (await c.promote({ ids, tier: 'semantic' })).promoted;
	const counts: Record<string, number> = (await c.consolidate()).counts;
	const reinforced: number = (await c.reinforce({ ids, amount: 1 })).reinforced;
	const rec: MemoryRecord | null = (await c.fetch('k')).record;
	const sessions = (await c.sessionList()).sessions.map((s) => s.session);
	const flushed: number = (await c.sessionClose('s')).flushed;
	const cursor: string = (await c.events({ kinds: ['written'] })).cursor;
	const subscribed: boolean = (await c.eventsSubscribe()).subscribed;
	await c.eventsUnsubscribe({ timeout: 10 });
	const written: number = (await c.summarize({ query: 'x', into: 'semantic' })).written;
	const raw = await c.call<{ ok: boolean }>('memory/x', { a: 1 }, { signal: AbortSignal.timeout(10) });
	const ok: boolean = raw.ok;
	for await (const e of c.watch({ interval: 10, onReset: (reply) => void reply.reset })) {
		const kind: string = e.kind;
		void kind;
	}
	const sub = await c.subscribe({ kinds: ['written'], maxBuffered: 5 });
	for await (const e of sub) {
		const ev: MemoryEvent = e;
		void ev;
	}
	try {
		await c.recall('q');
	} catch (err) {
		if (err instanceof A2MError && err.code === ErrorCode.READ_ONLY) {
			const name: string | undefined = err.codeName;
			const data: unknown = err.data;
			void name; void data;
		}
		if (err instanceof TimeoutError) { const ms: number = err.timeout; void ms; }
		if (err instanceof TransportError) { const st: number | undefined = err.status; void st; }
	}
	const t = new HttpTransport('http://x/', { protocol: 'a2m/0.1' });
	const n: number = t.connections;
	const s = await StdioTransport.spawn('a2m', ['serve']);
	const pid: number | undefined = s.pid;
	const code: number | null = await c.close();
	const nm = errorName(-32004);

	// @ts-expect-error remember needs content
	await c.remember([{ key: 'k' }]);
	// @ts-expect-error promote needs a tier
	await c.promote({ ids });
	// @ts-expect-error ErrorCode is read-only
	ErrorCode.READ_ONLY = 1;
	void [h, push, created, extra, text, forgotten, promoted, counts, reinforced, rec, sessions, flushed, cursor,
		subscribed, written, ok, n, pid, code, nm];
}
void main;
