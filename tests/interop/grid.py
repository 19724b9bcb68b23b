"""The interop grid: every writer writes one fact, every reader reads every
fact back, against one `a2m serve --http` and then against one SQLite file
shared by two servers (writers on one, readers on the other).

    python3 tests/interop/grid.py [--a2m build/a2m] [--only NAME,...]

The participants and the expected list are manifest.json (README.md says
the protocol). The grid fails when a covered cell fails, when a write or a
read fails, when a participant the manifest expects (not pending) has no
command or cannot run, when a conversation is searchable before its session
closes, or when a server does not exit cleanly. A pending participant that
is absent is listed and not counted; one that is present runs like any
other. It prints the grid with writers and readers named, and closes with
"N passed, M failed" (scripts/run-tests.sh adds it up).

Standard library only; the Python client (clients/python, also standard
library only) closes the conversations' sessions.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
from a2m_client import Client  # noqa: E402  (the path above)

TIMEOUT = 600  # seconds for one participant command (a first import of a framework is slow)
JOBS = 3  # participant commands run at once
#: Nothing leaves this machine: the frameworks' telemetry and tracing off
#: (as adapters/python/run.sh sets them), unless the caller says otherwise.
QUIET = {"CREWAI_DISABLE_TELEMETRY": "true", "CREWAI_DISABLE_TRACKING": "true", "OTEL_SDK_DISABLED": "true",
         "AGNO_TELEMETRY": "false", "OPENAI_AGENTS_DISABLE_TRACING": "1", "LANGCHAIN_TRACING_V2": "false",
         "LANGSMITH_TRACING": "false", "HF_HUB_OFFLINE": "1"}


class Tally:
    """Counts checks; every failure is printed as a FAIL line."""

    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, ok: bool, what: str, why: str = "") -> bool:
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {what}" + (f": {why}" if why else ""), flush=True)
        return ok


class Server:
    """`a2m serve --http 127.0.0.1:0 ARGS`, found by its start-up line."""

    def __init__(self, a2m: str, args: List[str]) -> None:
        self.proc = subprocess.Popen([a2m, "serve", "--http", "127.0.0.1:0", *args], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.log: List[str] = []
        found = threading.Event()

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.log.append(line)
                if line.startswith("a2m serve: listening on "):
                    found.set()
            found.set()

        threading.Thread(target=read, daemon=True).start()
        found.wait(30)
        m = re.search(r"^a2m serve: listening on (\S+) ", "".join(self.log), re.M)
        if not m:
            self.proc.kill()
            raise RuntimeError("a2m serve --http did not start: " + "".join(self.log))
        self.url = m.group(1)

    def stop(self) -> int:
        self.proc.terminate()
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return -9


class Participant:
    """One manifest entry, its command resolved."""

    def __init__(self, entry: Dict[str, Any]) -> None:
        self.name: str = entry["name"]
        self.pending: bool = bool(entry.get("pending"))
        self.raw_command: Optional[List[str]] = entry.get("command")
        self.raw_env: Dict[str, str] = entry.get("env") or {}
        self.command: Optional[List[str]] = None
        self.env: Dict[str, str] = {}
        self.problem: Optional[str] = None

    @property
    def present(self) -> bool:
        return self.raw_command is not None


_venvs: Dict[str, Tuple[Optional[str], str]] = {}


def python_of(group: str) -> Tuple[Optional[str], str]:
    """The python of adapters/python's environment ``group``, made or
    reused by venv.sh once per run: (path, error)."""
    if group not in _venvs:
        done = subprocess.run([os.path.join(ROOT, "adapters", "python", "venv.sh"), group],
                              capture_output=True, text=True)
        if done.returncode == 0:
            _venvs[group] = (os.path.join(done.stdout.strip().splitlines()[-1], "bin", "python"), "")
        else:
            _venvs[group] = (None, (done.stderr or done.stdout).strip()[-2000:])
    return _venvs[group]


def resolve(p: Participant) -> None:
    """Fills p.command and p.env from the manifest's placeholders, or
    p.problem with why it cannot run."""
    def expand(text: str) -> str:
        text = text.replace("{root}", ROOT).replace("{here}", HERE)
        m = re.fullmatch(r"\{python:([\w-]+)\}", text)
        if m:
            path, error = python_of(m.group(1))
            if path is None:
                raise RuntimeError(f"its environment ({m.group(1)}) could not be made: {error}")
            return path
        return text

    try:
        assert p.raw_command is not None
        p.command = [expand(a) for a in p.raw_command]
        p.env = {k: expand(v) for k, v in p.raw_env.items()}
    except RuntimeError as e:
        p.problem = str(e)


def run(p: Participant, action: str, url: str, request: Dict[str, Any], a2m: str) -> Tuple[Optional[Dict], str]:
    """Runs ``p``'s command with ``action``; (its JSON answer, or None and why)."""
    assert p.command is not None
    env = dict(QUIET, **os.environ)
    env.update(A2M_URL=url, A2M_BINARY=a2m, PYTHONDONTWRITEBYTECODE="1", **p.env)
    try:
        done = subprocess.run(p.command + [action], input=json.dumps(request), capture_output=True, text=True,
                              env=env, timeout=TIMEOUT, cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    if done.returncode != 0:
        return None, f"exit {done.returncode}: {done.stderr.strip()[-1500:]}"
    try:
        return json.loads(done.stdout.strip().splitlines()[-1]), ""
    except (ValueError, IndexError):
        return None, f"not JSON on stdout: {done.stdout[-500:]!r}; stderr: {done.stderr.strip()[-800:]}"


def not_searchable(url: str, facts: Dict[str, str], tally: Tally, label: str) -> None:
    """A conversation's facts are not what a search finds before its
    session closes: the non-working tiers do not hold them yet."""
    with Client.http(url) as c:
        searchable = [t["name"] for t in c.description.get("tiers", []) if t.get("kind") != "working"]
        for writer, (token, text) in facts.items():
            hits = [r["content"] for r in c.recall(token, where={"tier": searchable}, limit=5)["records"]]
            tally.check(text not in hits, f"{label}: {writer}'s conversation is searchable before its session closes")


def timed(fn: Any, ready: List[Participant]) -> Dict[str, Tuple[Any, float]]:
    """fn(p) for every participant, JOBS at a time: {name: (result, seconds)}.
    Participants are separate processes writing distinct facts, so running
    some side by side changes nothing but the wall time."""
    def one(p: Participant) -> Tuple[Any, float]:
        started = time.monotonic()
        result = fn(p)
        return result, time.monotonic() - started

    with ThreadPoolExecutor(max_workers=JOBS) as pool:
        return dict(zip([p.name for p in ready], pool.map(one, ready)))


def grid(label: str, write_url: str, read_url: str, ready: List[Participant], a2m: str, tally: Tally) -> None:
    print(f"\n== {label}", flush=True)
    facts: Dict[str, Tuple[str, str]] = {}
    sessions: Dict[str, str] = {}
    write_ok: Dict[str, bool] = {}
    for p in ready:
        token = "ix" + secrets.token_hex(5)
        facts[p.name] = (token, f"{token} is the interop fact that {p.name} wrote")
    writes = timed(lambda p: run(p, "write", write_url, {"token": facts[p.name][0], "text": facts[p.name][1]}, a2m),
                   ready)
    for p in ready:
        (out, why), seconds = writes[p.name]
        write_ok[p.name] = tally.check(out is not None, f"{label}: {p.name} could not write", why)
        print(f"   write {p.name:<18} {'ok' if out is not None else 'FAILED'} ({seconds:.1f}s)", flush=True)
        if out and out.get("session"):
            sessions[p.name] = out["session"]
    conversations = {w: facts[w] for w in sessions}
    if conversations:
        not_searchable(write_url, conversations, tally, label)
        with Client.http(write_url) as c:
            for writer, session in sessions.items():
                flushed = c.session_close(session)["flushed"]
                tally.check(flushed > 0, f"{label}: closing {writer}'s session {session} moved nothing")
    tokens = [facts[p.name][0] for p in ready]
    cells: Dict[Tuple[str, str], bool] = {}
    reads = timed(lambda r: run(r, "read", read_url, {"tokens": tokens}, a2m), ready)
    for r in ready:
        (out, why), seconds = reads[r.name]
        print(f"   read  {r.name:<18} {'ok' if out is not None else 'FAILED'} ({seconds:.1f}s)", flush=True)
        tally.check(out is not None, f"{label}: {r.name} could not read", why)
        got = (out or {}).get("read") or {}
        for w in ready:
            token, text = facts[w.name]
            texts = got.get(token) or []
            ok = write_ok[w.name] and any(text in str(t) for t in texts)
            cells[(w.name, r.name)] = ok
            tally.check(ok, f"{label}: {r.name} did not read what {w.name} wrote",
                        f"looked for {text!r}, read {texts[:3]!r}")
    names = [p.name for p in ready]
    print(f"\n   writers down, readers across ({label}):")
    print("   " + " " * 18 + " ".join(f"{n + 1:>3}" for n in range(len(names))))
    for w in names:
        row = " ".join(f"{'ok' if cells[(w, r)] else 'XX':>3}" for r in names)
        print(f"   {w:<18}{row}")
    print("   readers: " + ", ".join(f"{n + 1} {name}" for n, name in enumerate(names)), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a2m", default=os.path.join(ROOT, "build", "a2m"))
    parser.add_argument("--only", help="comma-separated participants (for development: the run then fails)")
    parser.add_argument("--manifest", default=os.path.join(HERE, "manifest.json"))
    args = parser.parse_args()
    a2m = os.path.abspath(args.a2m)
    tally = Tally()
    with open(args.manifest, encoding="utf-8") as f:
        participants = [Participant(e) for e in json.load(f)["participants"]]
    names = [p.name for p in participants]
    tally.check(len(names) == len(set(names)), "the manifest names a participant twice")
    if args.only:
        wanted = set(args.only.split(","))
        tally.check(False, f"--only {args.only}: not the whole expected list")
        participants = [p for p in participants if p.name in wanted]

    ready: List[Participant] = []
    for p in participants:
        if not p.present:
            if p.pending:
                print(f"pending  {p.name}: not landed yet (manifest.json marks it pending)")
            else:
                tally.check(False, f"{p.name} is expected (not pending) but has no command in manifest.json")
            continue
        resolve(p)
        if p.problem is None:
            ready.append(p)
        else:
            tally.check(False, f"{p.name} cannot run", p.problem)
    covered = [p.name for p in ready]
    expected = [p.name for p in participants if not p.pending]
    print(f"covered  ({len(covered)}): {', '.join(covered)}")
    print(f"expected ({len(expected)} + {len(participants) - len(expected)} pending): {', '.join(expected)}")
    tally.check(set(expected) <= set(covered), "the covered list is narrower than the expected list",
                f"missing {sorted(set(expected) - set(covered))}")
    for p in ready:
        if p.pending:
            print(f"note     {p.name} is present and still marked pending: flip it in manifest.json")

    if ready:
        server = Server(a2m, ["--memory"])
        try:
            grid("one a2m serve --http (memory)", server.url, server.url, ready, a2m, tally)
        finally:
            tally.check(server.stop() == 0, "the HTTP server did not exit 0", "".join(server.log[-20:]))
        with tempfile.TemporaryDirectory(prefix="a2m-interop-") as tmp:
            db = os.path.join(tmp, "shared.db")
            writer = Server(a2m, ["--db", db])
            reader = Server(a2m, ["--db", db])
            try:
                grid("one SQLite file, two servers (writes to one, reads from the other)", writer.url,
                     reader.url, ready, a2m, tally)
            finally:
                for s, which in ((writer, "writing"), (reader, "reading")):
                    tally.check(s.stop() == 0, f"the {which} SQLite server did not exit 0", "".join(s.log[-20:]))
    print(f"\n{tally.passed} passed, {tally.failed} failed")
    return 0 if tally.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
