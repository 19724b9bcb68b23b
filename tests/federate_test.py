#!/usr/bin/env python3
"""a2m federate through the protocol (docs/FEDERATION.md):

- the conformance suite through a router whose four tiers are four kinds of
  backend (in-process memory, a SQLite child over stdio, an HTTP server with
  a router's token, an in-process SQLite file), every capability declared;
- a backend whose scores are deliberately skewed does not win the merge
  (rank fusion reads only its order; rerank only the router's scorer);
- a router killed (-9) at each step of a move leaves no hole, and on restart
  finishes the move by itself: the record once, where it was going, every
  field as it was (content, role, metadata, key and revision, session,
  group, salience, access count and time, created_at, embedding);
- a backend stopped during load: recall answers from the others and names
  the missing tier, writes to its tier fail clearly, and nothing
  acknowledged is lost when it returns;
- x-dedup through the router when every writable backend declares it: a
  repeated write refreshes the record on its backend, answers its id and
  `deduplicated`, emits no `written` event, takes no room under capacity,
  and survives the batch failing after it; x-expiry and x-history are not
  declared, and a tier that would expire records is refused at start.

The kills use the test build of the binary, BUILD/tests/a2m-hooks (the
Makefile's): only it reads A2M_TEST_FEDERATE_CRASH_AT; the release binary is
checked to ignore it.

usage: federate_test.py BUILD/a2m     (prints "N passed, M failed")
"""
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

A2M = os.path.abspath(sys.argv[1])
HOOKS = os.path.join(os.path.dirname(A2M), 'tests', 'a2m-hooks')
HERE = os.path.dirname(os.path.abspath(__file__))
TMP = tempfile.mkdtemp(prefix='a2m-federate-')
passed = failed = 0
children = []


def ok(name):
    global passed
    passed += 1
    print('ok   ' + name, flush=True)


def fail(name, why):
    global failed
    failed += 1
    print('FAIL %s — %s' % (name, why), flush=True)


def expect(name, cond, why):
    (ok if cond else lambda n: fail(n, why))(name)
    return cond


class Peer:
    """A JSON-RPC peer over a child's stdin and stdout."""

    def __init__(self, argv, env=None):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  env=env)
        children.append(self.p)
        self.n = 0
        self.buf = b''

    def call(self, method, params=None, timeout=30):
        """The response object, or None when the peer died or went silent."""
        self.n += 1
        msg = {'jsonrpc': '2.0', 'id': self.n, 'method': method, 'params': params or {}}
        try:
            self.p.stdin.write((json.dumps(msg) + '\n').encode())
            self.p.stdin.flush()
        except (BrokenPipeError, OSError):
            return None
        end = time.time() + timeout
        while True:
            while b'\n' in self.buf:
                line, self.buf = self.buf.split(b'\n', 1)
                resp = json.loads(line)
                if resp.get('id') == self.n:
                    return resp
            left = end - time.time()
            if left <= 0 or not select.select([self.p.stdout], [], [], left)[0]:
                return None
            chunk = os.read(self.p.stdout.fileno(), 1 << 16)
            if not chunk:
                return None
            self.buf += chunk

    def result(self, method, params=None):
        r = self.call(method, params)
        if not r or 'result' not in r:
            raise RuntimeError('%s answered %s' % (method, r))
        return r['result']

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        self.p.wait(timeout=30)


def tier_config(path, name, kind):
    with open(path, 'w') as f:
        json.dump({'tiers': [{'name': name, 'kind': kind,
                              'half_life_seconds': 86400 if kind == 'episodic' else 0,
                              'shared': kind != 'working'}]}, f)
    return path


def http_backend(db, cfg, port=0, tokens=None):
    """Starts a2m serve --http; returns (process, port)."""
    argv = [A2M, 'serve', '--http', '127.0.0.1:%d' % port, '--db', db, '--config', cfg]
    if tokens:
        argv += ['--tokens', tokens]
    p = subprocess.Popen(argv, stderr=subprocess.PIPE)
    children.append(p)
    line = p.stderr.readline().decode()
    if 'listening on' not in line:
        raise RuntimeError('http backend: ' + line)
    return p, int(line.split('127.0.0.1:')[1].split('/')[0])


def write_config(path, backends, tiers, **extra):
    cfg = {'name': 'federate-test', 'backends': backends, 'tiers': tiers}
    cfg.update(extra)
    with open(path, 'w') as f:
        json.dump(cfg, f, indent=1)
    return path


LAYOUT = [
    {'name': 'working', 'kind': 'working', 'capacity': 24, 'per_session': True,
     'spill_to': 'episodic', 'half_life_seconds': 300, 'shared': False},
    {'name': 'episodic', 'kind': 'episodic', 'capacity': 256, 'spill_to': 'semantic',
     'promote_to': 'semantic', 'promote_after': 3, 'half_life_seconds': 86400},
    {'name': 'semantic', 'kind': 'semantic'},
    {'name': 'procedural', 'kind': 'procedural'},
]


def four_kinds(d, http_port, merge='rank-fusion'):
    tiers = [dict(t) for t in LAYOUT]
    for t, b in zip(tiers, ['hot', 'ep', 'sem', 'proc']):
        t['backend'] = b
    backends = {
        'hot': {'kind': 'memory'},
        'ep': {'kind': 'stdio', 'command': [A2M, 'serve', '--db', d + '/ep.db', '--config',
                                            tier_config(d + '/ep.json', 'episodic', 'episodic')]},
        'sem': {'kind': 'http', 'url': 'http://127.0.0.1:%d/' % http_port,
                'token_env': 'A2M_TEST_ROUTER_TOKEN'},
        'proc': {'kind': 'sqlite', 'path': d + '/proc.db'},
    }
    return write_config(d + '/fed-%s.json' % merge, backends, tiers, merge=merge)


# ---- 1. conformance through four kinds of backend --------------------------

def test_conformance():
    d = tempfile.mkdtemp(dir=TMP)
    with open(d + '/tokens', 'w') as f:
        f.write('router-secret *\n')
    http, port = http_backend(d + '/sem.db', tier_config(d + '/sem.json', 'semantic', 'semantic'),
                              tokens=d + '/tokens')
    env = dict(os.environ, A2M_TEST_ROUTER_TOKEN='router-secret')
    for merge in ('rank-fusion', 'rerank'):
        cfg = four_kinds(d, port, merge)
        for f in ('ep.db', 'proc.db'):
            for suffix in ('', '-wal', '-shm'):
                if os.path.exists(d + '/' + f + suffix):
                    os.unlink(d + '/' + f + suffix)
        out = subprocess.run([A2M, 'conformance', '--stdio', A2M, 'federate', '--config', cfg],
                             env=env, capture_output=True, text=True, timeout=600).stdout
        last = out.strip().splitlines()[-1] if out.strip() else ''
        good, total = (int(x) for x in last.split()[0].split('/')) if '/' in last else (0, 1)
        expect('conformance through memory, stdio, http and sqlite backends (%s): %s'
               % (merge, last), good == total and total >= 130,
               '\n'.join(l for l in out.splitlines() if l.startswith('FAIL'))[:2000] or last)
    # The four kinds the issue names: memory in-process, SQLite over stdio,
    # a2m serve --http, and the PostgreSQL engine in-process on a schema of
    # its own (the test run's server, $A2M_TEST_POSTGRES).
    pg = os.environ.get('A2M_TEST_POSTGRES')
    if not pg:
        fail('conformance with a PostgreSQL backend',
             'A2M_TEST_POSTGRES is not set (scripts/run-tests.sh starts a server)')
    else:
        cfg_pg = four_kinds(d, port, 'rank-fusion')
        with open(cfg_pg) as f:
            conf = json.load(f)
        conf['backends']['proc'] = {'kind': 'postgres',
                                    'url': "%s options='-csearch_path=fed_%d'" % (pg, os.getpid())}
        cfg_pg = write_config(d + '/fed-postgres.json', conf['backends'], conf['tiers'],
                              merge='rank-fusion')
        for suffix in ('', '-wal', '-shm'):
            if os.path.exists(d + '/ep.db' + suffix):
                os.unlink(d + '/ep.db' + suffix)
        out = subprocess.run([A2M, 'conformance', '--stdio', A2M, 'federate', '--config', cfg_pg],
                             env=env, capture_output=True, text=True, timeout=600).stdout
        last = out.strip().splitlines()[-1] if out.strip() else ''
        good, total = (int(x) for x in last.split()[0].split('/')) if '/' in last else (0, 1)
        expect('conformance through memory, stdio SQLite, http and PostgreSQL backends: %s'
               % last, good == total and total >= 130,
               '\n'.join(l for l in out.splitlines() if l.startswith('FAIL'))[:2000] or last)
    # The router itself over HTTP with tokens (§6 at the router: the
    # principal is the owner, passed to every backend as the owner).
    with open(d + '/users', 'w') as f:
        f.write('tok-alice alice\ntok-bob bob\n')
    for suffix in ('', '-wal', '-shm'):
        for f in ('ep.db', 'proc.db'):
            if os.path.exists(d + '/' + f + suffix):
                os.unlink(d + '/' + f + suffix)
    p = subprocess.Popen([A2M, 'federate', '--config', cfg, '--http', '127.0.0.1:0', '--tokens',
                          d + '/users'], stderr=subprocess.PIPE, env=env)
    children.append(p)
    line = p.stderr.readline().decode()
    url = line.split('listening on ')[1].split(' ')[0] if 'listening on' in line else ''
    out = subprocess.run([A2M, 'conformance', '--http', url, '--token', 'tok-alice'],
                         capture_output=True, text=True, timeout=600).stdout if url else line
    last = out.strip().splitlines()[-1] if out.strip() else ''
    good, total = (int(x) for x in last.split()[0].split('/')) if '/' in last else (0, 1)
    expect('conformance over the router\'s own HTTP with tokens: %s' % last,
           good == total and total >= 130,
           '\n'.join(l for l in out.splitlines() if l.startswith('FAIL'))[:2000] or last)
    p.terminate()
    p.wait()
    router = Peer([A2M, 'federate', '--config', cfg], env=env)
    caps = router.result('memory/describe')['capabilities']
    every = ['core', 'tiers', 'salience', 'scopes', 'sessions', 'keys', 'embeddings',
             'external', 'events', 'summarize', 'prompt', 'x-where', 'x-dedup', 'x-touch']
    expect('every capability declared through the four', sorted(caps) == sorted(every),
           'declared %s' % caps)
    router.close()
    http.terminate()
    http.wait()


# ---- 2. a backend with skewed scores does not win the merge ----------------

def skew_federation(d, factor, merge):
    tiers = [{'name': 'episodic', 'kind': 'episodic', 'backend': 'plain'},
             {'name': 'semantic', 'kind': 'semantic', 'backend': 'skewed'}]
    backends = {
        'plain': {'kind': 'memory'},
        'skewed': {'kind': 'stdio', 'command': [
            sys.executable, HERE + '/federate/skew.py', str(factor), A2M, 'serve', '--memory',
            '--config', tier_config(d + '/sem.json', 'semantic', 'semantic')]},
    }
    return write_config(d + '/skew-%s-%s.json' % (factor, merge), backends, tiers, merge=merge)


def recall_order(cfg):
    router = Peer([A2M, 'federate', '--config', cfg])
    texts = {'episodic': ['apple pie recipe with apple and apple',
                          'apple orchard in autumn', 'an apple a day'],
             'semantic': ['the apple', 'pear and apple cake', 'apple, pear, plum and fig']}
    for tier in ('episodic', 'semantic'):
        router.result('memory/remember', {'records': [
            {'content': c, 'tier': tier, 'id': '%s-%d' % (tier, i)}
            for i, c in enumerate(texts[tier])]})
    recs = router.result('memory/recall', {'query': 'apple', 'limit': 6})['records']
    router.close()
    # Equal scores are ordered by recency, and two writes may share a
    # millisecond: ties are compared as sets.
    got = [(r['id'], round(r['score'], 9)) for r in recs]
    return sorted(got, key=lambda x: (-x[1], x[0]))


def test_skew():
    d = tempfile.mkdtemp(dir=TMP)
    for merge in ('rank-fusion', 'rerank'):
        fair = recall_order(skew_federation(d, 1, merge))
        skewed = recall_order(skew_federation(d, 1000, merge))
        expect('%s: a backend scoring 1000 times higher changes nothing' % merge,
               fair == skewed and len(fair) == 6, 'fair %s, skewed %s' % (fair, skewed))
        if merge == 'rank-fusion':
            first3 = [i.split('-')[0] for i, _ in skewed[:4]]
            expect('rank-fusion: the skewed backend does not take the top places',
                   sorted(first3) == ['episodic', 'episodic', 'semantic', 'semantic'],
                   'top four from %s' % first3)


# ---- 3. a router killed at each step of a move -----------------------------

STEPS = ['none', 'journaled', 'written', 'verified', 'deleted']


def move_federation(d):
    tiers = [{'name': 'working', 'kind': 'working', 'capacity': 1, 'spill_to': 'episodic',
              'shared': False, 'backend': 'work'},
             {'name': 'episodic', 'kind': 'episodic', 'half_life_seconds': 86400,
              'backend': 'ep'}]
    backends = {
        'work': {'kind': 'sqlite', 'path': d + '/work.db'},
        'ep': {'kind': 'stdio', 'command': [A2M, 'serve', '--db', d + '/ep.db', '--config',
                                            tier_config(d + '/ep.json', 'episodic', 'episodic')]},
    }
    return write_config(d + '/move.json', backends, tiers)


def copies(d, rid):
    """How many copies of rid the two backends' files hold, read directly."""
    n = 0
    for db, cfg in (('work.db', None), ('ep.db', 'ep.json')):
        argv = [A2M, 'serve', '--db', d + '/' + db]
        if cfg:
            argv += ['--config', d + '/' + cfg]
        else:
            argv += ['--config', tier_config(d + '/w.json', 'working', 'working')]
        p = Peer(argv)
        n += len(p.result('memory/timeline', {'where': {'id': rid}, 'all_owners': True})['records'])
        p.close()
    return n


def unfinished(journal):
    """The moves a journal holds begun and not done."""
    begun = set()
    if os.path.exists(journal):
        for line in open(journal):
            e = json.loads(line)
            if 'move' in e:
                begun.add(e['move'])
            elif 'done' in e:
                begun.discard(e['done'])
    return begun


FIELDS = ['id', 'content', 'role', 'metadata', 'group', 'owner', 'session', 'key', 'revision',
          'created_at', 'salience', 'access_count', 'accessed_at', 'embedding', 'uri',
          'media_type']


def test_kill_at_each_step():
    for step in STEPS:
        d = tempfile.mkdtemp(dir=TMP)
        cfg = move_federation(d)
        env = dict(os.environ)
        if step != 'none':
            env['A2M_TEST_FEDERATE_CRASH_AT'] = step
        router = Peer([HOOKS if step != 'none' else A2M, 'federate', '--config', cfg], env=env)
        first = {'content': 'alpha was here first', 'role': 'user', 'owner': 'o1',
                 'metadata': {'n': [1, {'x': 'y'}], 'z': None}, 'key': 'k/alpha',
                 'session': 's1', 'group': 'g1', 'salience': 2.5,
                 'embedding': [0.25, -0.5, 0.125], 'uri': 'https://example.com/a',
                 'media_type': 'text/plain'}
        rid = router.result('memory/remember', {'records': [first]})['ids'][0]
        first['content'] = 'alpha was rewritten'
        router.result('memory/remember', {'records': [first]})
        for _ in range(2):
            router.result('memory/recall', {'query': 'alpha', 'owner': 'o1'})
        before = router.result('memory/timeline', {'owner': 'o1', 'embeddings': True})['records']
        before = [r for r in before if r['id'] == rid][0]
        r = router.call('memory/remember', {'records': [
            {'content': 'beta pushes alpha out', 'owner': 'o1', 'session': 's1'}]})
        name = 'kill -9 at "%s"' % step
        if step != 'none':
            router.p.wait(timeout=30)
            expect(name + ': the router died there', router.p.returncode == -signal.SIGKILL,
                   'exit %s, answer %s' % (router.p.returncode, r))
            n = copies(d, rid)
            expect(name + ': no hole (%d cop%s on disk)' % (n, 'y' if n == 1 else 'ies'),
                   n >= 1, 'the record is nowhere')
            router = Peer([A2M, 'federate', '--config', cfg])
        else:
            expect(name + ': the spill was answered', r and 'result' in r, str(r))
        after = router.result('memory/timeline', {'owner': 'o1', 'embeddings': True})['records']
        mine = [x for x in after if x['id'] == rid]
        expect(name + ': after the restart the record is there once, moved',
               len(mine) == 1 and mine[0]['tier'] == 'episodic',
               '%d copies: %s' % (len(mine), [x.get('tier') for x in mine]))
        if mine:
            diff = [f for f in FIELDS if before.get(f) != mine[0].get(f)]
            expect(name + ': every field as it was (%d compared)' % len(FIELDS), not diff,
                   'differs: ' + ', '.join('%s %r -> %r' % (f, before.get(f), mine[0].get(f))
                                           for f in diff))
        router.close()
        expect(name + ': the journal holds no move in progress, one copy on disk',
               unfinished(cfg + '.journal') == set() and copies(d, rid) == 1,
               'unfinished %s, %d copies' % (unfinished(cfg + '.journal'), copies(d, rid)))


def test_release_ignores_crash_switch():
    """The crash switch is the test build's: the release router moves the record."""
    d = tempfile.mkdtemp(dir=TMP)
    cfg = move_federation(d)
    env = dict(os.environ, A2M_TEST_FEDERATE_CRASH_AT='journaled')
    router = Peer([A2M, 'federate', '--config', cfg], env=env)
    rid = router.result('memory/remember', {'records': [
        {'content': 'alpha was here first', 'owner': 'o1'}]})['ids'][0]
    r = router.call('memory/remember', {'records': [
        {'content': 'beta pushes alpha out', 'owner': 'o1'}]})
    name = 'the release binary ignores A2M_TEST_FEDERATE_CRASH_AT'
    if expect(name + ': the spill was answered', r and 'result' in r and router.p.poll() is None,
              'exit %s, answer %s' % (router.p.poll(), r)):
        mine = [x for x in router.result('memory/timeline', {'owner': 'o1'})['records']
                if x['id'] == rid]
        expect(name + ': the record moved', len(mine) == 1 and mine[0]['tier'] == 'episodic',
               str(mine))
    router.close()


# ---- x-dedup through the router; what it does not declare ---------------------

def dedup_federation(d, router_dedup=True, backend_dedup=True, ep_ttl=None):
    """episodic on a stdio child (listed first), working in process, both dedup tiers."""
    ep = {'tiers': [{'name': 'episodic', 'kind': 'episodic', 'half_life_seconds': 86400,
                     'shared': True, 'dedup': backend_dedup}]}
    if ep_ttl:
        ep['tiers'][0]['ttl_seconds'] = ep_ttl
    with open(d + '/ep.json', 'w') as f:
        json.dump(ep, f)
    tiers = [{'name': 'working', 'kind': 'working', 'capacity': 2, 'spill_to': 'episodic',
              'shared': False, 'dedup': True, 'backend': 'w'},
             {'name': 'episodic', 'kind': 'episodic', 'half_life_seconds': 86400,
              'dedup': router_dedup, 'backend': 'ep'}]
    backends = {'ep': {'kind': 'stdio', 'command': [A2M, 'serve', '--db', d + '/ep.db',
                                                    '--config', d + '/ep.json']},
                'w': {'kind': 'memory'}}
    return write_config(d + '/dedup.json', backends, tiers)


def test_dedup():
    d = tempfile.mkdtemp(dir=TMP)
    router = Peer([A2M, 'federate', '--config', dedup_federation(d)])
    desc = router.result('memory/describe', {})
    expect('x-dedup declared when every writable backend declares it',
           'x-dedup' in desc['capabilities'] and
           desc.get('x-dedup') == {'tiers': ['working', 'episodic'], 'normal_form': 'analyzer'}
           and [t.get('dedup') for t in desc['tiers']] == [True, True], str(desc.get('x-dedup')))
    expect('x-expiry and x-history are not declared (docs/FEDERATION.md)',
           'x-expiry' not in desc['capabilities'] and 'x-history' not in desc['capabilities']
           and 'x-expiry' not in desc and 'x-history' not in desc, str(desc['capabilities']))
    cursor = router.result('memory/events', {})['cursor']
    a = router.result('memory/remember', {'records': [
        {'content': 'the cat sat', 'tier': 'episodic', 'salience': 1}]})
    r = router.result('memory/remember', {'records': [
        {'content': 'The Cat sat.', 'tier': 'episodic', 'salience': 3}]})
    expect('a repeated write answers the record it repeats, deduplicated: 1',
           r == {'ids': a['ids'], 'deduplicated': 1}, '%s after %s' % (r, a))
    r = router.result('memory/remember', {'records': [
        {'content': 'a new one', 'tier': 'episodic'}, {'content': 'the cat sat', 'tier': 'episodic'},
        {'content': 'A new one!', 'tier': 'episodic'}, {'content': 'the cat sat', 'tier': 'episodic',
                                                        'key': 'k/cat'}]})
    ids = r['ids']
    expect('in one batch: the second of two repeats the first; a keyed write is its own',
           len(ids) == 4 and ids[1] == a['ids'][0] and ids[2] == ids[0] and
           len({ids[0], ids[1], ids[3]}) == 3 and r.get('deduplicated') == 2, str(r))
    recs = router.result('memory/timeline', {'tier': 'episodic'})['records']
    cat = [x for x in recs if x['id'] == a['ids'][0]]
    expect('the backend holds each once, the repeated one refreshed (the higher salience)',
           len(recs) == 3 and cat and cat[0]['salience'] == 3, str(recs))
    ev = router.result('memory/events', {'cursor': cursor, 'kinds': ['written']})['events']
    expect('a written event per record written, none for a repeat',
           sorted(e['id'] for e in ev) == sorted([a['ids'][0], ids[0], ids[3]]),
           str([e['id'] for e in ev]))
    # Under capacity: a repeat into working takes no room, so nothing spills.
    w = [router.result('memory/remember', {'records': [{'content': 'hold this', 'owner': 'o'}]}),
         router.result('memory/remember', {'records': [{'content': 'hold this', 'owner': 'o'}]}),
         router.result('memory/remember', {'records': [{'content': 'HOLD this.', 'owner': 'o'}]})]
    held = router.result('memory/timeline', {'tier': 'working', 'owner': 'o'})['records']
    ep = router.result('memory/timeline', {'tier': 'episodic', 'owner': 'o'})['records']
    expect('repeats into a tier with capacity 2 leave one record and spill nothing',
           [x['ids'][0] for x in w] == [w[0]['ids'][0]] * 3 and len(held) == 1 and
           not [x for x in ep if x['content'].lower().startswith('hold')],
           '%s; working %d, episodic %s' % (w, len(held), [x['content'] for x in ep]))
    # A batch failing after its repeat: the record repeated is not forgotten.
    r = router.call('memory/remember', {'records': [
        {'content': 'the cat sat', 'tier': 'episodic'},
        {'content': 'bad', 'tier': 'working', 'metadata': 'not an object'}]})
    after = router.result('memory/timeline', {'tier': 'episodic'})['records']
    expect('a batch failing after a repeat leaves the repeated record standing',
           r and 'error' in r and [x for x in after if x['id'] == a['ids'][0]],
           '%s; episodic now %s' % (r, [x['id'] for x in after]))
    router.close()
    # What cannot be served is refused at start, named.
    for name, cfg, words in (
            ('a dedup tier whose backend tier is not one',
             dedup_federation(tempfile.mkdtemp(dir=TMP), backend_dedup=False),
             ["tier 'episodic' is marked dedup", "backend 'ep'"]),
            ('a backend tier that expires records',
             dedup_federation(tempfile.mkdtemp(dir=TMP), ep_ttl=60),
             ["backend 'ep'", 'ttl_seconds']),
    ):
        p = subprocess.run([A2M, 'federate', '--config', cfg], input='', capture_output=True,
                           text=True, timeout=60)
        expect('refused at start: ' + name, p.returncode != 0 and
               all(w_ in p.stderr for w_ in words), p.stderr)
    d = tempfile.mkdtemp(dir=TMP)
    cfg = write_config(d + '/ttl.json', {'m': {'kind': 'memory'}},
                       [{'name': 'episodic', 'kind': 'episodic', 'ttl_seconds': 60,
                         'backend': 'm'}])
    p = subprocess.run([A2M, 'federate', '--config', cfg], input='', capture_output=True,
                       text=True, timeout=60)
    expect('refused at start: a router tier with ttl_seconds',
           p.returncode != 0 and 'ttl_seconds' in p.stderr and 'x-expiry' in p.stderr, p.stderr)


# ---- 4. a backend stopped during load ----------------------------------------

def test_backend_down():
    d = tempfile.mkdtemp(dir=TMP)
    sem_cfg = tier_config(d + '/sem.json', 'semantic', 'semantic')
    http, port = http_backend(d + '/sem.db', sem_cfg)
    tiers = [{'name': 'working', 'kind': 'working', 'backend': 'hot'},
             {'name': 'semantic', 'kind': 'semantic', 'backend': 'sem'}]
    cfg = write_config(d + '/down.json', {'hot': {'kind': 'memory'},
                                          'sem': {'kind': 'http',
                                                  'url': 'http://127.0.0.1:%d/' % port}},
                       tiers, deadline_ms=1000)
    router = Peer([A2M, 'federate', '--config', cfg])
    acked, refused, hung = [], [], 0
    missing_named = down_recall_ok = working_ok = 0
    for i in range(300):
        if i == 100:
            http.send_signal(signal.SIGKILL)
            http.wait()
        if i == 200:
            http, _ = http_backend(d + '/sem.db', sem_cfg, port)
        r = router.call('memory/remember', {'records': [
            {'content': 'fact %d about load' % i, 'tier': 'semantic'}]}, timeout=20)
        if r is None:
            hung += 1
        elif 'result' in r:
            acked.append(r['result']['ids'][0])
        else:
            refused.append(r['error'])
        w = router.call('memory/remember', {'records': [{'content': 'turn %d' % i}]})
        working_ok += bool(w and 'result' in w)
        rc = router.call('memory/recall', {'query': 'load turn fact', 'limit': 5})
        if 100 < i < 200 and rc and 'result' in rc:
            down_recall_ok += 1
            missing_named += rc['result'].get('missing_tiers') == ['semantic']
    expect('a backend down: no write hangs', hung == 0, '%d calls went unanswered' % hung)
    expect('a backend down: writes to its tier fail with -32603 naming it',
           len(refused) >= 90 and all(e['code'] == -32603 and e.get('data', {}).get('backend')
                                      == 'sem' for e in refused),
           '%d refused: %s' % (len(refused), refused[:2]))
    expect('a backend down: the other tiers keep taking writes', working_ok == 300,
           '%d of 300' % working_ok)
    expect('a backend down: recall answers from the others and names the missing tier',
           down_recall_ok >= 98 and missing_named == down_recall_ok,
           '%d answered, %d named semantic' % (down_recall_ok, missing_named))
    have = router.result('memory/timeline', {'tier': 'semantic'})['records']
    ids = {r['id'] for r in have}
    lost = [a for a in acked if a not in ids]
    expect('back again: every acknowledged write is there (%d)' % len(acked),
           len(acked) >= 190 and not lost, '%d acknowledged, %d lost' % (len(acked), len(lost)))
    router.close()
    http.terminate()
    http.wait()


# ---- start-up refusals -------------------------------------------------------

def test_refusals():
    d = tempfile.mkdtemp(dir=TMP)
    bounded = d + '/bounded.json'
    with open(bounded, 'w') as f:
        json.dump({'tiers': [{'name': 'episodic', 'kind': 'episodic', 'capacity': 5}]}, f)
    cfg = write_config(d + '/bad.json', {'b': {'kind': 'stdio', 'command': [
        A2M, 'serve', '--memory', '--config', bounded]}},
        [{'name': 'episodic', 'kind': 'episodic', 'backend': 'b'}])
    p = subprocess.run([A2M, 'federate', '--config', cfg], input='', capture_output=True,
                       text=True, timeout=60)
    expect('a backend with its own capacity is refused at start, named',
           p.returncode != 0 and "backend 'b'" in p.stderr and 'policy' in p.stderr, p.stderr)
    cfg = write_config(d + '/bad2.json', {'b': {'kind': 'stdio', 'command': [
        A2M, 'serve', '--memory', '--capabilities', 'core,events']}},
        [{'name': 'episodic', 'kind': 'episodic', 'backend': 'b'}])
    p = subprocess.run([A2M, 'federate', '--config', cfg], input='', capture_output=True,
                       text=True, timeout=60)
    expect('a backend lacking a capability the router needs is refused, naming it',
           p.returncode != 0 and 'tiers capability' in p.stderr, p.stderr)


try:
    for t in (test_refusals, test_skew, test_kill_at_each_step,
              test_release_ignores_crash_switch, test_dedup, test_backend_down,
              test_conformance):
        try:
            t()
        except Exception as e:  # a broken step is one failure, not the end of the run
            fail(t.__name__, repr(e))
finally:
    for c in children:
        if c.poll() is None:
            c.kill()
            c.wait()
    shutil.rmtree(TMP, ignore_errors=True)
print('%d passed, %d failed' % (passed, failed))
sys.exit(1 if failed else 0)
