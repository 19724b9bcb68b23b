#!/usr/bin/env python3
"""layers_test.py — the arrows between the tree's folders, from what their
files include: each folder may include only the folders docs/ARCHITECTURE.md
says it may ("The arrows between layers"), there is no circle among them, and
the two programs of their own (conformance/, servers/) include nothing of
the server. Prints "ok"/"FAIL" per check and "N passed, M failed". Run from
anywhere; reads the tree it is in."""
import collections
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))

# Which folders each folder of src/ may include (besides itself and the
# public headers of include/). The order is the layering, lowest first.
ALLOWED = {
    'util':      set(),
    'store':     {'util'},
    'embed':     {'util'},
    'rank':      {'store', 'util'},
    'stack':     {'store', 'rank', 'embed', 'util'},
    'events':    {'stack', 'store', 'util'},
    'compose':   {'store', 'util'},
    'protocol':  {'stack', 'events', 'compose', 'util'},
    'rpc':       {'protocol', 'util'},
    'transport': {'rpc', 'util'},
    'client':    {'util'},
    'server':    {'rpc', 'protocol', 'stack', 'events', 'store', 'rank', 'embed', 'util'},
    'corpus':    {'util'},
    'federate':  {'server', 'rpc', 'protocol', 'events', 'compose', 'stack', 'rank', 'store',
                  'client', 'util'},
    'cli':       {'client', 'transport', 'server', 'corpus', 'federate', 'util'},
}

passed = failed = 0


def ok(name):
    global passed
    passed += 1
    print('ok   ' + name)


def fail(name, why):
    global failed
    failed += 1
    print('FAIL %s: %s' % (name, why))


def includes(path):
    with open(path, encoding='utf-8') as f:
        return re.findall(r'^\s*#\s*include\s+"([^"]+)"', f.read(), re.M)


edges = collections.defaultdict(set)
where = collections.defaultdict(list)   # (from, to) -> files
for dirpath, _, files in os.walk(os.path.join(ROOT, 'src')):
    folder = os.path.relpath(dirpath, os.path.join(ROOT, 'src')).split(os.sep)[0]
    for name in files:
        if not name.endswith(('.c', '.h')):
            continue
        path = os.path.join(dirpath, name)
        for inc in includes(path):
            if '/' not in inc:
                continue   # the public headers, or a file beside it
            to = inc.split('/')[0]
            if to != folder:
                edges[folder].add(to)
                where[(folder, to)].append(os.path.relpath(path, ROOT))

for folder in sorted(set(edges) | set(ALLOWED)):
    if folder not in ALLOWED:
        fail('src/%s/ has a place in the layering' % folder, 'not in ALLOWED: add it, and to docs/ARCHITECTURE.md')
        continue
    extra = sorted(edges[folder] - ALLOWED[folder])
    if extra:
        fail('src/%s/ includes only what it may' % folder,
             '; '.join('%s (%s)' % (t, ', '.join(sorted(set(where[(folder, t)]))[:3])) for t in extra))
    else:
        ok('src/%s/ includes only what it may' % folder)

# No circle among the folders, whatever ALLOWED says.
state = {}


def cycle_from(n, path):
    state[n] = 1
    for t in sorted(edges[n]):
        if state.get(t) == 1:
            return path[path.index(t):] + [t]
        if not state.get(t):
            c = cycle_from(t, path + [t])
            if c:
                return c
    state[n] = 2
    return None


circle = None
for n in sorted(edges):
    if not state.get(n):
        circle = circle or cycle_from(n, [n])
if circle:
    fail('no circle among the folders', ' -> '.join(circle))
else:
    ok('no circle among the folders')

# The stack's files call each other in the order docs/ARCHITECTURE.md draws
# ("The stack's files"): the calls from the objects' symbols (nm), the
# drawing from its code block, which must agree exactly and have no circle.
def stack_calls(objdir):
    defined, undefined = {}, {}
    for name in sorted(os.listdir(objdir)):
        # An object whose source is gone (a renamed file) is not the tree's.
        if not name.endswith('.o') or not os.path.exists(
                os.path.join(ROOT, 'src', 'stack', name[:-2] + '.c')):
            continue
        f = name[:-2]
        out = os.popen('nm "%s"' % os.path.join(objdir, name)).read()
        defined[f] = {l.split()[-1] for l in out.splitlines() if re.search(r' [TDBR] ', l)}
        undefined[f] = {l.split()[-1] for l in out.splitlines() if re.search(r'^\s+U ', l)}
    calls = collections.defaultdict(set)
    for f in defined:
        for g in defined:
            if f != g and undefined[f] & defined[g]:
                calls[f].add(g)
    return set(defined), calls


def drawn_calls():
    with open(os.path.join(ROOT, 'docs', 'ARCHITECTURE.md'), encoding='utf-8') as f:
        text = f.read()
    m = re.search(r'```\n(stack\.c .*?)```', text, re.S)
    calls = {}
    for line in (m.group(1) if m else '').splitlines():
        name, arrow = line.split()[0], line.split('→')[1]
        files = [name[:-2]]
        if 'where.c' in line.split('→')[0] and name == 'layout.c':
            files.append('where')   # "layout.c  the layout; where.c, `where`"
        targets = set() if 'nothing' in arrow else set(arrow.split())
        for f in files:
            calls[f] = targets
    return calls


objdir = os.path.join(ROOT, 'build', 'obj', 'src', 'stack')
if not os.path.isdir(objdir):
    fail("the stack's files call as drawn", 'no %s: run make first' % objdir)
else:
    files, calls = stack_calls(objdir)
    drawn = drawn_calls()
    if not drawn:
        fail("the stack's files call as drawn", "no drawing of the stack's files in docs/ARCHITECTURE.md")
    else:
        wrong = []
        for f in sorted(files | set(drawn)):
            if f not in drawn:
                wrong.append('%s.c is not drawn' % f)
            elif f not in files:
                wrong.append('%s.c is drawn but not built' % f)
            elif calls[f] != drawn[f]:
                wrong.append('%s.c calls %s, drawn %s' % (f, ' '.join(sorted(calls[f])) or 'nothing',
                                                        ' '.join(sorted(drawn[f])) or 'nothing'))
        if wrong:
            fail("the stack's files call as drawn", '; '.join(wrong))
        else:
            ok("the stack's files call as drawn")
        state.clear()
        edges = calls
        circle = None
        for n in sorted(calls):
            if not state.get(n):
                circle = circle or cycle_from(n, [n])
        if circle:
            fail("no circle among the stack's files", ' -> '.join(circle))
        else:
            ok("no circle among the stack's files")

# The conformance suite and the minimal server are programs of their own.
for prog, may in (('conformance', {'client', 'util'}), ('servers', set())):
    bad = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, prog)):
        for name in files:
            if name.endswith(('.c', '.h')):
                for inc in includes(os.path.join(dirpath, name)):
                    if '/' in inc and inc.split('/')[0] not in may:
                        bad.append('%s: %s' % (name, inc))
    if bad:
        fail('%s/ includes nothing of the server' % prog, ', '.join(bad[:5]))
    else:
        ok('%s/ includes nothing of the server' % prog)

print('%d passed, %d failed' % (passed, failed))
sys.exit(1 if failed else 0)
