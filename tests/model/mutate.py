#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Memory-order mutation runner for the model checker (tests/model/README.md).

Lists every atomic operation in src/*.c, src/*.h (not src/executor) and the
public headers' inline fast paths (include/syncband/*.h) whose memory order
is not relaxed, then runs the weak-model tests of the explorer programs in
PROGRAMS (those that reach the site) once per site with that one site made
relaxed (SB_MODEL_WEAKEN=file:line), and prints which program and scenario
caught it.

    tests/model/mutate.py [--build build/debug] [--jobs 1] [--timeout 900] [SITE...]

SITE (e.g. event.c:106) limits the run to those sites.  Not run by ./x test.
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CALL = re.compile(r"\batomic_(load|store|exchange|compare_exchange_strong|compare_exchange_weak|"
                  r"fetch_add|fetch_sub|fetch_or|fetch_and)_explicit\s*\(|\batomic_thread_fence\s*\(")
ORDER = re.compile(r"\bmemory_order_(relaxed|consume|acquire|release|acq_rel|seq_cst)\b")
WEAK_TESTS = "*under_the_weak_model*"
PROGRAMS = ("test_model_semaphore", "test_model_blocking", "test_model_deadline",
            "test_model_mutex_races", "test_model_condvar", "test_model_event", "test_model_loop",
            "test_model_barrier", "test_model_once", "test_model_rwlock", "test_model_latch",
            "test_model_channel", "test_model_broadcast", "test_model_watch")
FAILURE = re.compile(r"MODEL FAILURE in scenario '(.*?)', execution \d+: (.*)")
# A function definition's first line: at column 0, a name and its "(".
DEFINITION = re.compile(r"^[A-Za-z_][\w \t\*\(\)]*?\b(\w+)\s*\(")


def strip_comments(text):
    """Blanks comments and string literals, keeping offsets and newlines."""
    out = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('"' + " " * (j - i - 1) + '"')
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def source_files():
    for folder in ("src", os.path.join("include", "syncband")):
        path = os.path.join(ROOT, folder)
        for name in sorted(os.listdir(path)):
            if name.endswith((".c", ".h")):
                yield name, os.path.join(path, name)


def enclosing_function(stripped_lines, line):
    """The function whose body holds `line` (1-based), or "?"."""
    for text in reversed(stripped_lines[:line - 1]):
        m = DEFINITION.match(text)
        if m and not text.startswith(("typedef", "struct", "enum", "union")):
            return m.group(1)
    return "?"


def source_sites():
    """Every atomic call: (file, first line, last line, orders, code, function)."""
    sites = []
    for name, path in source_files():
        raw = open(path).read()
        text = strip_comments(raw)
        lines = raw.split("\n")
        stripped = text.split("\n")
        for m in CALL.finditer(text):
            depth, j = 1, m.end()
            while depth and j < len(text):
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                j += 1
            first = text.count("\n", 0, m.start()) + 1
            last = text.count("\n", 0, j) + 1
            orders = ORDER.findall(text[m.start():j])
            code = " ".join(l.strip() for l in lines[first - 1:last])
            sites.append((name, first, last, orders, code, enclosing_function(stripped, first)))
    return sites


def run_model(binary, env_extra, timeout):
    env = dict(os.environ, **env_extra)
    try:
        p = subprocess.run([binary, WEAK_TESTS], env=env, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    return p.returncode, p.stdout + p.stderr


def reached_sites(binary, timeout):
    """file:line -> how often scheduled threads executed it (unmutated run)."""
    with tempfile.NamedTemporaryFile("r", suffix=".sites") as f:
        rc, out = run_model(binary, {"SB_MODEL_SITES": f.name}, timeout)
        if rc != 0:
            sys.exit("the unmutated weak-model run of %s fails; fix that first:\n%s" %
                     (binary, (out or "")[-3000:]))
        reached = {}
        for line in f:
            where, _kind, _order, _failure, count = line.split()
            reached[where] = reached.get(where, 0) + int(count)
    return reached


def verdict(program, rc, out):
    if rc is None:
        return "caught (timed out: livelock?)"
    if rc == 0:
        return None
    m = FAILURE.search(out)
    if not m:
        return "caught (exit %d, no model report)" % rc
    scenario, what = m.groups()
    what = re.sub(r"^\S+?:\d+: ", "", what)
    if what.startswith("data race"):
        what = "data race"
    elif what.startswith("signal"):
        what = "library assertion" if "assertion" in what else what
    return "caught: %s: '%s' (%s)" % (program, scenario, what)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "debug"))
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("only", nargs="*", help="file:line of the sites to weaken")
    args = ap.parse_args()

    subprocess.run(["cmake", "--build", args.build, "--target"] + list(PROGRAMS), check=True,
                   stdout=subprocess.DEVNULL)
    binaries = [os.path.join(args.build, "tests", p) for p in PROGRAMS]
    reached_by = {b: reached_sites(b, args.timeout) for b in binaries}
    reached = {}
    for counts in reached_by.values():
        for where, count in counts.items():
            reached[where] = reached.get(where, 0) + count

    todo = []
    starts = [(name, first) for name, first, *_ in source_sites()]
    for dup in sorted({s for s in starts if starts.count(s) > 1}):
        print("warning: %s:%d holds two atomic calls; weakening one weakens both" % dup,
              file=sys.stderr)
    for name, first, last, orders, code, function in source_sites():
        if all(o == "relaxed" for o in orders):
            continue
        # gcc names a multi-line invocation by its first line; accept any line
        # of the call in case another compiler differs.
        lines = ["%s:%d" % (name, l) for l in range(first, last + 1)]
        where = next((l for l in lines if l in reached), lines[0])
        if args.only and where not in args.only:
            continue
        todo.append((where, function, "/".join(orders), code, reached.get(where, 0)))

    def mutate(site):
        where, _function, _orders, _code, count = site
        if count == 0:
            return "not reached"
        result = "NOT CAUGHT"
        for binary in binaries:
            if not reached_by[binary].get(where):
                continue
            rc, out = run_model(binary, {"SB_MODEL_WEAKEN": where}, args.timeout)
            if "no such site" in (out or ""):
                result = "site not found by the model (line numbering?)"
                break
            caught = verdict(os.path.basename(binary), rc, out)
            if caught:
                result = caught
                break
        print("%s: %s" % (where, result), file=sys.stderr, flush=True)
        return result

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(mutate, todo))

    caught = sum(r.startswith("caught") for r in results)
    print("| site | function | order | code | result |")
    print("|---|---|---|---|---|")
    for (where, function, orders, code, _count), result in zip(todo, results):
        print("| %s | %s | %s | `%s` | %s |" % (where, function, orders, code.replace("|", "\\|"),
                                             result))
    print("\n%d sites: %d caught, %d not caught, %d not reached" %
          (len(todo), caught, sum(r == "NOT CAUGHT" for r in results),
           sum(r == "not reached" for r in results)))


if __name__ == "__main__":
    main()
