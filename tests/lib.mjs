// lib.mjs — what the Node.js test scripts share (as tests/lib.sh for the
// shell ones): one line per check, "ok   NAME" or "FAIL NAME: WHY", and the
// closing line "N passed, M failed" that scripts/run-tests.sh adds up.
const counts = { passed: 0, failed: 0 };

export function ok(name) {
  counts.passed++;
  console.log(`ok   ${name}`);
}

export function fail(name, why) {
  counts.failed++;
  console.log(`FAIL ${name}: ${why}`);
}

export function check(name, cond, why = 'false') {
  cond ? ok(name) : fail(name, why);
}

// Equal as JSON.
export function expect(name, got, want) {
  const g = JSON.stringify(got), w = JSON.stringify(want);
  g === w ? ok(name) : fail(name, `got ${g}, want ${w}`);
}

// Prints the closing line and exits: 1 when a check failed.
export function finish() {
  console.log(`${counts.passed} passed, ${counts.failed} failed`);
  process.exit(counts.failed ? 1 : 0);
}
