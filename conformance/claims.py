#!/usr/bin/env python3
"""claims.py — checks the claims register (conformance/claims.json) against
the A2M specification: every sentence of the spec that carries an RFC 2119
keyword must have exactly one disposition in the register, every check or
test a disposition names must exist, and no disposition may be stale.

    conformance/claims.py SPEC [--register FILE] [--suite BINARY] [--root DIR]
    conformance/claims.py SPEC --show      every keyword sentence, its hash
                                           and its disposition
    conformance/claims.py SPEC --stubs     a register entry for each gap

The register holds hashes, section numbers and check names, never the spec's
sentences: the spec is someone else's text, read from SPEC at run time. How a
sentence is found and normalised, and what each disposition means, is in
docs/CLAIMS.md; the rules below are that page's, in code.

Exit status: 0 when the register covers the spec exactly, 1 on any gap,
stale or misplaced entry, unknown check or malformed entry, 2 for a usage
error or an unreadable input. Python 3 standard library only, so it runs
wherever the test command does.
"""

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import unicodedata

# The key words of RFC 2119, as the spec's introduction lists them. Only the
# capitalised forms are keywords (RFC 8174); "must" in lower case is English.
KEYWORDS = ("MUST NOT", "MUST", "REQUIRED", "SHALL NOT", "SHALL", "SHOULD NOT",
            "SHOULD", "RECOMMENDED", "MAY", "OPTIONAL")
KEYWORD_RE = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(KEYWORDS) + r")(?![A-Za-z0-9_])")

# The five dispositions a claim may have, one per register entry.
DISPOSITIONS = ("conformance", "offline", "client", "prose", "unverifiable")
# The clients of ours a client obligation may name (src/client/, src/cli/).
CLIENTS = ("c", "cli")

# How many hex digits of the SHA-256 a register entry keeps.
HASH_DIGITS = 16

# Abbreviations whose full stop ends no sentence.
ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.")


class Sentence:
    """One sentence of the spec: where it is, its normalised text, its hash."""

    def __init__(self, section, line, text, keywords):
        self.section = section
        self.line = line
        self.text = text
        self.keywords = keywords
        self.hash = hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_DIGITS]


# ---- reading the spec ----

HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE_RE = re.compile(r"^\s*(```|~~~)")
LINK_DEF_RE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+\S")
RULE_RE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
ITEM_RE = re.compile(r"^(\s*)([-*+]|\d+[.)])\s+(.*)$")
TABLE_DELIM_RE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def section_of(heading):
    """The section a heading opens: its leading number ("4.16", "8.3.1"),
    the letter of an appendix ("A"), or "0" for an unnumbered heading (the
    title, before section 1)."""
    m = re.match(r"(\d+(?:\.\d+)*)\.?\s", heading + " ")
    if m:
        return m.group(1)
    m = re.match(r"Appendix\s+([A-Z])\b", heading)
    if m:
        return m.group(1)
    return "0"


def blocks(text):
    """The spec's text blocks, as (section, first line number, kind, lines).
    kind is "heading", "paragraph", "item" (one list item with its
    continuation lines) or "row" (one table row); lines are (line number,
    text) pairs, a blank line inside a list item being (n, ""). Fenced code, link
    definitions and rules are not text and yield nothing; a block quote is
    read as the blocks inside it."""
    section = "0"
    fence = None
    current = None  # [section, line, kind, [(line number, text), ...]]
    out = []

    def close():
        nonlocal current
        if current:
            out.append(tuple(current))
        current = None

    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.rstrip()
        if fence:
            if line.strip().startswith(fence):
                fence = None
            continue
        m = FENCE_RE.match(line)
        if m:
            close()
            fence = m.group(1)
            continue
        # A block quote's marker goes; what it quotes is read as any text.
        quoted = re.match(r"^\s{0,3}>\s?(.*)$", line)
        if quoted:
            line = quoted.group(1)
        if not line.strip():
            # A blank line ends a paragraph or a table row; a list item
            # continues when the next line is indented under it.
            if current and current[2] != "item":
                close()
            elif current:
                current[3].append((number, ""))
            continue
        if LINK_DEF_RE.match(line) or RULE_RE.match(line):
            close()
            continue
        m = HEADING_RE.match(line)
        if m:
            close()
            section = section_of(m.group(2))
            out.append((section, number, "heading", [(number, m.group(2))]))
            continue
        if line.lstrip().startswith("|"):
            close()
            if not TABLE_DELIM_RE.match(line):
                out.append((section, number, "row", [(number, line)]))
            continue
        m = ITEM_RE.match(line)
        if m:
            close()
            current = [section, number, "item", [(number, m.group(3))]]
            continue
        if current and current[2] == "item":
            # After a blank line only an indented line still belongs to it.
            if current[3][-1][1] == "" and not line.startswith((" ", "\t")):
                close()
            else:
                current[3].append((number, line.strip()))
                continue
        if current is None:
            current = [section, number, "paragraph", []]
        current[3].append((number, line.strip()))
    close()
    return out


def table_cells(row):
    """The cells of a table row, with escaped pipes kept inside them."""
    row = row.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", row)]


def split_code(text):
    """text as a list of (is_code, piece): inline code spans apart from the
    rest, so nothing inside them is taken for markup or a sentence end."""
    pieces = []
    pos = 0
    for m in re.finditer(r"(`+)(.+?)\1", text):
        if m.start() > pos:
            pieces.append((False, text[pos:m.start()]))
        pieces.append((True, m.group(2).strip()))
        pos = m.end()
    if pos < len(text):
        pieces.append((False, text[pos:]))
    return pieces


def strip_markup(prose):
    """Markdown markup out of text that is not code: links become their
    text, emphasis markers and escapes go."""
    prose = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", prose)   # [text](url)
    prose = re.sub(r"\[([^\]]*)\]\[[^\]]*\]", r"\1", prose)     # [text][ref]
    prose = re.sub(r"<((?:https?|mailto):[^>]*)>", r"\1", prose)  # <url>
    prose = prose.replace("*", "")
    prose = re.sub(r"(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])", "", prose)
    prose = re.sub(r"\\([\\`*_{}\[\]()#+\-.!|>])", r"\1", prose)
    return prose


def normalise(raw):
    """The normalised form of a sentence (docs/CLAIMS.md): Unicode NFC,
    Markdown markup stripped (code spans keep their text, lose their
    backticks), whitespace collapsed to one space, ends trimmed. Returns
    (text, keywords): the keywords found outside code spans, in order."""
    raw = unicodedata.normalize("NFC", raw)
    text = []
    keywords = []
    for is_code, piece in split_code(raw):
        if is_code:
            text.append(piece)
        else:
            prose = strip_markup(piece)
            keywords.extend(KEYWORD_RE.findall(re.sub(r"\s+", " ", prose)))
            text.append(prose)
    return re.sub(r"\s+", " ", "".join(text)).strip(), keywords


def split_sentences(raw):
    """A paragraph's raw text (lines joined by spaces) cut into sentences,
    as (offset, text) pairs. A sentence ends at ".", "!" or "?" (closing
    markup, brackets or quotes may follow) before white space and something
    that can start one: a capital, a digit, a code span, emphasis, a
    bracket, a quote or "§". Nothing inside a code span ends a sentence, nor
    does an abbreviation (e.g., i.e., etc., vs., cf.)."""
    # Code spans are masked, so a full stop in `a2m/0.1` cannot cut.
    masked = list(raw)
    for m in re.finditer(r"(`+)(.+?)\1", raw):
        for i in range(m.start() + 1, m.end() - 1):
            masked[i] = "x"
    masked = "".join(masked)
    cuts = [0]
    for m in re.finditer(r"[.!?][*_)\]\"'”’]*(?=\s+[A-Z0-9`*_(\[\"“§])", masked):
        if masked[:m.start() + 1].lower().endswith(ABBREVIATIONS):
            continue
        cuts.append(m.end())
    cuts.append(len(raw))
    out = []
    for start, end in zip(cuts, cuts[1:]):
        piece = raw[start:end]
        if piece.strip():
            out.append((start + len(piece) - len(piece.lstrip()), piece.strip()))
    return out


def extract(text):
    """Every sentence of the spec that carries a keyword, as Sentences, in
    document order. A table row is one unit, its cells joined by " | ": a
    cell means nothing without its row's field name, so the row is what a
    claim about that field says. A heading is one unit. A paragraph or a
    list item is cut into sentences after its lines are joined by spaces,
    so a sentence may span lines; its line is the one it starts on."""
    found = []
    for section, _, kind, lines in blocks(text):
        if kind == "row":
            units = [(lines[0][0], " | ".join(table_cells(lines[0][1])))]
        elif kind == "heading":
            units = [lines[0]]
        else:
            joined = ""
            starts = []  # (offset in joined, line number)
            for number, piece in lines:
                if piece:
                    starts.append((len(joined), number))
                    joined += piece + " "
            units = []
            for offset, sentence in split_sentences(joined):
                number = max(n for o, n in starts if o <= offset)
                units.append((number, sentence))
        for number, unit in units:
            norm, keywords = normalise(unit)
            if keywords:
                found.append(Sentence(section, number, norm, keywords))
    return found


# ---- the names a disposition may give ----

def suite_names(binary):
    """The conformance checks' names, from `a2m-conformance --list`. Raises
    OSError or ValueError when the list cannot be had."""
    out = subprocess.run([binary, "--list"], capture_output=True, text=True, check=False,
                         timeout=60)
    if out.returncode != 0:
        raise ValueError("%s --list exited %d: %s" % (binary, out.returncode,
                                                     out.stderr.strip()[:300]))
    names = [l for l in out.stdout.split("\n") if l]
    if not names:
        raise ValueError("%s --list printed no check" % binary)
    return set(names)


class Tests:
    """Finds offline tests by name (docs/CLAIMS.md, "Naming a test"):
    "tests/test_x.c: test_fn" is a C test function that the file defines and
    registers with its harness (TEST(test_fn), RUN(test_fn), ...); any other
    file's "path: label" is a check whose label the file spells out as a
    string literal ("label" or 'label'), as the shell helpers of tests/lib.sh
    and the checks of tests/mcp_test.mjs take it."""

    def __init__(self, root):
        self.root = root
        self.files = {}

    def _text(self, path):
        if path not in self.files:
            try:
                with open(os.path.join(self.root, path), encoding="utf-8") as f:
                    self.files[path] = f.read()
            except OSError:
                self.files[path] = None
        return self.files[path]

    def why_missing(self, name):
        """None when the test named exists; else why it does not."""
        path, sep, label = name.partition(": ")
        if not sep or not label or os.path.isabs(path) or ".." in path.split("/"):
            return "not of the form \"PATH: NAME\" with PATH relative to the repository"
        text = self._text(path)
        if text is None:
            return "%s does not exist" % path
        if path.endswith(".c"):
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", label):
                return "a C test is named by its function"
            fn = re.escape(label)
            if not re.search(r"\bvoid\s+" + fn + r"\s*\(", text):
                return "%s defines no function %s" % (path, label)
            if not re.search(r"\b[A-Z][A-Z_]*\(\s*" + fn + r"\s*\)", text):
                return "%s does not register %s with its harness" % (path, label)
            return None
        if ('"%s"' % label) in text or ("'%s'" % label) in text:
            return None
        return "%s has no check labelled \"%s\"" % (path, label)


# ---- the register ----

def load_register(path):
    """The register's entries. Raises OSError or ValueError."""
    with open(path, encoding="utf-8") as f:
        reg = json.load(f)
    if not isinstance(reg, dict) or not isinstance(reg.get("claims"), list):
        raise ValueError("%s: expected an object with a \"claims\" array" % path)
    return reg["claims"]


def entry_problems(entry, names, tests):
    """What is wrong with one entry itself, apart from the spec: its shape,
    and every check or test it names that does not exist."""
    if not isinstance(entry, dict):
        return ["not an object"]
    out = []
    h = entry.get("hash")
    if not isinstance(h, str) or not re.fullmatch("[0-9a-f]{%d}" % HASH_DIGITS, h):
        out.append("hash must be %d lower-case hex digits" % HASH_DIGITS)
    if not isinstance(entry.get("section"), str) or not entry.get("section"):
        out.append("section must be a string such as \"4.2\"")
    allowed = set(DISPOSITIONS) | {"hash", "section", "about", "note"}
    for key in entry:
        if key not in allowed:
            out.append("unknown field \"%s\"" % key)
    for key in ("about", "note"):
        if key in entry and not (isinstance(entry[key], str) and entry[key].strip()):
            out.append("%s must be a non-empty string" % key)
    given = [d for d in DISPOSITIONS if d in entry]
    if len(given) != 1:
        out.append("needs exactly one disposition of %s, has %s"
                   % ("/".join(DISPOSITIONS), "/".join(given) or "none"))
        return out
    kind = given[0]
    value = entry[kind]

    def named(what, listed, missing):
        """Problems of a list of names: its shape, then each missing one."""
        if not (isinstance(listed, list) and listed and all(isinstance(v, str) for v in listed)):
            return ["%s needs a list of names" % what]
        return [m for m in (missing(v) for v in listed) if m]

    def no_test(suffix):
        def missing(v):
            why = tests.why_missing(v)
            return why and "no test \"%s\"%s: %s" % (v, suffix, why)
        return missing

    if kind in ("prose", "unverifiable"):
        if not (isinstance(value, str) and len(value.strip()) >= 10):
            out.append("%s needs its reason, in a sentence" % kind)
    elif kind == "conformance":
        out += named("conformance", value, lambda v: None if names is None or v in names else
                     "no conformance check \"%s\" (a2m-conformance --list)" % v)
    elif kind == "offline":
        out += named("offline", value, no_test(""))
    elif not (isinstance(value, dict) and value):
        out.append("client needs an object: client (%s) -> tests" % ", ".join(CLIENTS))
    else:
        for client, listed in value.items():
            if client not in CLIENTS:
                out.append("unknown client \"%s\" (ours are %s)" % (client, ", ".join(CLIENTS)))
            out += named("client " + client, listed, no_test(" (client %s)" % client))
    return out


def disposition_of(entry):
    for d in DISPOSITIONS:
        if isinstance(entry, dict) and d in entry:
            return d
    return "none"


def shorten(text, width=160):
    return text if len(text) <= width else text[:width - 3] + "..."


def check(sentences, entries, names, tests, out):
    """Checks the register against the spec's sentences (None: the spec is
    not at hand, so only the entries themselves are checked). Writes one line
    per problem to out and returns the number of problems."""
    problems = 0

    def problem(line):
        nonlocal problems
        problems += 1
        out.write(line + "\n")

    by_hash = {}
    for i, entry in enumerate(entries):
        label = "entry %d" % (i + 1)
        if isinstance(entry, dict) and isinstance(entry.get("hash"), str):
            label = "entry %s (§%s)" % (entry["hash"], entry.get("section", "?"))
            if entry["hash"] in by_hash:
                problem("DUPLICATE %s: the hash has an entry already" % label)
                continue
            by_hash[entry["hash"]] = entry
        for why in entry_problems(entry, names, tests):
            problem("BAD %s: %s" % (label, why))
    if sentences is None:
        return problems

    seen = {}
    for s in sentences:
        seen.setdefault(s.hash, []).append(s)
    for h, group in seen.items():
        entry = by_hash.get(h)
        if entry is None:
            continue
        sections = sorted({s.section for s in group}, key=lambda x: [int(p) if p.isdigit() else p
                                                                     for p in x.split(".")])
        want = ", ".join(sections)
        if entry.get("section") != want:
            problem("MOVED entry %s: the register says §%s, the sentence is in §%s (line %d)"
                    % (h, entry.get("section"), want, group[0].line))
    unmatched = [s for s in sentences if s.hash not in by_hash]
    for s in unmatched:
        problem("GAP §%s line %d [%s]: %s" % (s.section, s.line, s.hash, shorten(s.text)))
    for h, entry in by_hash.items():
        if h in seen:
            continue
        near = [s for s in unmatched if s.section == entry.get("section")]
        problem("STALE entry %s (§%s, %s): no sentence of the spec has this hash%s"
                % (h, entry.get("section"), disposition_of(entry),
                   "; unmatched in that section: " + "; ".join(
                       "line %d [%s] %s" % (s.line, s.hash, shorten(s.text, 100)) for s in near)
                   if near else ""))
    return problems


def counts_line(entries, sentences):
    """Entries per disposition, over the entries that match a sentence (all
    of them when the spec is not at hand)."""
    live = {s.hash for s in sentences} if sentences is not None else None
    counts = {d: 0 for d in DISPOSITIONS}
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        if live is not None and entry.get("hash") not in live:
            continue
        d = disposition_of(entry)
        if d in counts:
            counts[d] += 1
    return ", ".join("%s %d" % (d, counts[d]) for d in DISPOSITIONS)


def stub(s):
    """A register entry to fill in for an undispositioned sentence."""
    return json.dumps({"hash": s.hash, "section": s.section, "about": "",
                       "conformance": ["GROUP: CHECK"]}, ensure_ascii=False)


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ap = argparse.ArgumentParser(
        prog="claims.py",
        description="Check conformance/claims.json against the A2M specification "
                    "(docs/CLAIMS.md). Exit 0 when every keyword sentence has a "
                    "current disposition and every check it names exists; 1 otherwise.")
    ap.add_argument("spec", nargs="?",
                    help="the specification (a2m-0.1.md); without it only the "
                         "register's own entries are checked (--entries-only)")
    ap.add_argument("--register", default=os.path.join(here, "claims.json"))
    ap.add_argument("--suite", default=os.path.join(root, "build", "a2m-conformance"),
                    help="the conformance binary whose --list names the checks")
    ap.add_argument("--root", default=root, help="where test paths are resolved")
    ap.add_argument("--entries-only", action="store_true",
                    help="no spec: check the entries' shape and names only")
    ap.add_argument("--show", action="store_true",
                    help="print every keyword sentence with its hash and disposition")
    ap.add_argument("--stubs", action="store_true",
                    help="print a register entry to fill in for every gap")
    args = ap.parse_args(argv)
    if not args.spec and not args.entries_only:
        ap.error("give the spec's path, or --entries-only")

    sentences = None
    if args.spec:
        try:
            with open(args.spec, encoding="utf-8") as f:
                sentences = extract(f.read())
        except (OSError, UnicodeDecodeError) as e:
            print("claims: cannot read the spec: %s" % e, file=sys.stderr)
            return 2
    try:
        entries = load_register(args.register)
    except (OSError, ValueError) as e:
        print("claims: cannot read the register: %s" % e, file=sys.stderr)
        return 2

    if args.show or args.stubs:
        by_hash = {e.get("hash"): e for e in entries if isinstance(e, dict)}
        for s in sentences or []:
            e = by_hash.get(s.hash)
            if args.stubs:
                if e is None:
                    print(stub(s))
                continue
            d = disposition_of(e) if e else "GAP"
            detail = e.get(d) if e else ""
            print("§%s line %d [%s] %s\n    -> %s: %s"
                  % (s.section, s.line, s.hash, s.text, d,
                     json.dumps(detail, ensure_ascii=False)))
        return 0

    try:
        names = suite_names(args.suite)
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        print("claims: cannot list the conformance checks: %s" % e, file=sys.stderr)
        return 2
    problems = check(sentences, entries, names, Tests(args.root), sys.stdout)
    what = ("%d keyword sentences in %s" % (len(sentences), args.spec)
            if sentences is not None else "no spec: the entries alone")
    print("claims: %s; %d register entries; %s" % (what, len(entries),
                                                   counts_line(entries, sentences)))
    if problems:
        print("claims: %d problem%s" % (problems, "" if problems == 1 else "s"))
        return 1
    if sentences is None:
        print("claims: every entry is well formed and every name it gives exists; "
              "without the spec, gaps and stale entries were not checked")
    else:
        print("claims: the register is complete and current")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
