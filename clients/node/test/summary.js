// summary.js — a node:test reporter that prints the one closing line
// scripts/run-tests.sh adds up: "N passed, M failed". Suites (describe
// blocks) are not counted, their tests are; a file that fails to load is
// one failure.
export default async function* summary(source) {
	let passed = 0;
	let failed = 0;
	for await (const event of source) {
		if (event.data?.details?.type === 'suite') continue;
		if (event.type === 'test:pass' && !event.data.skip && !event.data.todo) passed++;
		else if (event.type === 'test:fail') failed++;
	}
	yield `${passed} passed, ${failed} failed\n`;
}
