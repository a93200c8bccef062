#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/run.py - runs syncband's C benchmarks and the Rust peers interleaved
and prints one table (bench/README.md's method).

It builds nothing: give it the directory of the C benchmark binaries
(bench_* from bench/CMakeLists.txt) and the peers binary (bench/peers).

    bench/run.py --bin-dir build/bench/bench --peers PATH [--out build/bench]
                 [--quick | --smoke | --instructions [--functions]]
                 [--no-instructions] [--repeat N] [FILTER ...]

Every (scenario, impl) pair is one invocation of a binary with --batches 1:
an untimed warm-up batch (allocations are counted there), then one timed
batch.  For each repetition, for each scenario, one batch of every
implementation runs, the starting implementation rotating from one
repetition to the next.  Per pair the table shows the median of its batches,
their min-max, the allocations per round, and each median's ratio to
syncband's.  FILTER words keep the scenarios whose name contains one of them.

Instructions per round: for every single-thread row (the primitive
scenarios and the CAS+store and two-CAS baselines, syncband and peers
alike), each pair runs twice under `valgrind --tool=callgrind`, with
`--once --rounds R` and `--once --rounds 2R` (one batch, no warm-up):
start-up and set-up are the same in both runs, so (I(2R) - I(R)) / R is
what one round executes, the harness's loop and checks included on both
sides.  The table shows it beside the time; the JSON has it as
"instructions".  A full or --quick run measures it after the timed
repetitions (--no-instructions skips it).
--instructions measures only that column (no timing) and prints it with
its targets; --functions adds, per pair, each function's instructions per
round (callgrind_annotate's self cost, differenced the same way).

Contention rows (contention/*-N-threads): the binaries list them at 2
threads; they run at every N of CONTENTION_THREADS (2, 4, 8, 16), with the
rounds of contention_rounds().  Besides the timed batch, every repetition
runs each contention pair once more with --waits: one batch in which every
acquire is timed (from the lock/acquire call, or the future's first poll,
until it holds), which prints a WAITS line with the p50, p99 and maximum
wait.  The table shows the medians of the runs' p50, p99 and maximum, and
the smallest and largest maximum; that batch's own time (slowed by the clock
reads) is not used.  The rwlock rows' WAITS lines also carry the read and
the write locks apart (read_* and write_* fields); the table shows each
side's p50 / p99 / max below the total.  baseline/futex-wake-to-run
(WAIT_PROBES) runs with --waits too: the wake-up latency of this machine,
the floor under every wait that sleeps; a filtered run that keeps a
contention row keeps it too, since the tail targets read its maximum.

Delivered items: a row whose receivers may skip items (a lagging
broadcast's fan-out over threads) prints, on stderr, a DELIVERED line per
batch: the items sent, those the receivers read together, that as a
fraction of every receiver reading every item, and the least and most one
receiver read (as fractions of those sent).  The timed batch's line (the
last) is kept per run; the table shows, under it, each such row's median
fraction over the runs with the smallest and largest, and the smallest min
and largest max; the JSON has them as "delivered".

--quick: 3 repetitions of 1/100 of the rounds.  --smoke: every pair once
with 10 rounds (and its waits run, for the contention pairs), and the
instruction count of every single-thread pair with R = 1000; exits non-zero
unless every pair printed its RESULT line, every contention and probe pair
its WAITS line, and every count came back.  Writes OUT/results.json and OUT/results.svg (not in
--smoke mode; --instructions writes OUT/instructions.json).
"""

import argparse
import concurrent.futures
import datetime
import contextlib
import io
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib

# bench/README.md's order; scenarios not listed here follow in discovery order.
SCENARIO_ORDER = [
    "semaphore/pending-handoff",
    "semaphore/reused-handoff",
    "semaphore/reused-handoff-guard-drop",
    "semaphore/try-one-and-return",
    "mutex/uncontended-reuse",
    "mutex/four-queued-waiters",
    "notify/fresh-one-waiter",
    "notify/reused-one-waiter",
    "event/fan-out-16",
    "condvar/notify-one-waiter",
    "rwlock/uncontended-read",
    "rwlock/uncontended-write",
    "rwlock/write-queued-behind-readers",
    "barrier/generation-of-8",
    "once/16-waiters",
    "latch/count-down-16-waiters",
    "baseline/cas-acquire+store-release",
    "baseline/reads-first-cas+cas",
    "baseline/blind-cas+cas",
    "executor/create",
    "executor/spawn-one",
    "executor/spawn-batch",
    "executor/spawn-many-local",
    "executor/spawn-recursively",
    "executor/yield-now",
    "executor/channels",
    "executor/queued-handoff",
    "contention/mutex-2-threads",
    "contention/mutex-4-threads",
    "contention/mutex-8-threads",
    "contention/mutex-16-threads",
    "contention/semaphore-2-threads",
    "contention/semaphore-4-threads",
    "contention/semaphore-8-threads",
    "contention/semaphore-16-threads",
    "contention/rwlock-read-mostly-2-threads",
    "contention/rwlock-read-mostly-4-threads",
    "contention/rwlock-read-mostly-8-threads",
    "contention/rwlock-read-mostly-16-threads",
    "contention/rwlock-mixed-2-threads",
    "contention/rwlock-mixed-4-threads",
    "contention/rwlock-mixed-8-threads",
    "contention/rwlock-mixed-16-threads",
    "contention/rwlock-write-heavy-2-threads",
    "contention/rwlock-write-heavy-4-threads",
    "contention/rwlock-write-heavy-8-threads",
    "contention/rwlock-write-heavy-16-threads",
    "baseline/futex-wake-to-run",
    "notify/fan-out-10",
    "notify/fan-out-100",
    "notify/fan-out-500",
    "channel/try-send-try-recv",
    "channel/ping-pong",
    "channel/rendezvous-ping-pong",
    "channel/spsc-cap-1",
    "channel/spsc-cap-64",
    "channel/spsc-cap-1024",
    "channel/mpsc-4-to-1",
    "channel/mpsc-16-to-1",
    "channel/spmc-1-to-4",
    "channel/mpmc-4-to-4",
    "channel/mpmc-16-to-16",
    "loop/ping-pong-same-thread",
    "broadcast/fan-out-4",
    "broadcast/fan-out-16",
    "broadcast/fan-out-64",
    "broadcast/lagging-receiver",
    "broadcast/fan-out-16-threads",
    "broadcast/fan-out-16-threads-backpressure",
    "watch/update-16-receivers",
    "watch/read-latest",
    "watch/read-while-sending",
    "select/two-channels",
    "select/semaphore-or-deadline",
]

# The primitive scenarios: bench/README.md wants 0 allocations per round on
# syncband for every one of them, fresh or reused.
PRIMITIVE_SCENARIOS = set(SCENARIO_ORDER[:SCENARIO_ORDER.index("baseline/cas-acquire+store-release")])

BASELINE_SCENARIO = "baseline/cas-acquire+store-release"
# The two-CAS floors beside it (bench/baseline.cc): the shapes of a lock that
# reads before each CAS, as syncband's do, and of one that does not.
TWO_CAS_SCENARIOS = {"baseline/reads-first-cas+cas", "baseline/blind-cas+cas"}
# The channel rows (bench/channel.cc, bench/peers/src/channels.rs, the Go
# peer).  Single thread: the try pair (no-op waker) and the two ping-pongs
# (two tasks on one loop); their instructions per round are counted too.
CHANNEL_SINGLE_THREAD = {"channel/try-send-try-recv", "channel/ping-pong",
                         "channel/rendezvous-ping-pong"}
CHANNEL_SCENARIOS = {sc for sc in SCENARIO_ORDER if sc.startswith("channel/")}
# The loop rows (bench/loop.cc): two tasks on one sb_loop with a real
# (eventfd) doorbell; single thread, so their instructions are counted too.
LOOP_SCENARIOS = {sc for sc in SCENARIO_ORDER if sc.startswith("loop/")}
# The channel rows of several senders or receivers: each repetition also
# runs them with --waits (every receive timed), as the contention rows.
CHANNEL_WAIT_SCENARIOS = {"channel/mpsc-4-to-1", "channel/mpsc-16-to-1", "channel/spmc-1-to-4",
                          "channel/mpmc-4-to-4", "channel/mpmc-16-to-16"}
# The watch rows (bench/watch.cc, bench/peers/src/watch.rs); the first two
# run on one thread, so their instructions per round are counted too.
WATCH_SINGLE_THREAD = {"watch/update-16-receivers", "watch/read-latest"}
WATCH_SCENARIOS = WATCH_SINGLE_THREAD | {"watch/read-while-sending"}
# The broadcast rows (bench/broadcast.cc, bench/peers/src/broadcast.rs): all
# but the threads row run on one thread, so their instructions are counted.
BROADCAST_SINGLE_THREAD = {"broadcast/fan-out-4", "broadcast/fan-out-16", "broadcast/fan-out-64",
                           "broadcast/lagging-receiver"}
BROADCAST_SCENARIOS = BROADCAST_SINGLE_THREAD | {"broadcast/fan-out-16-threads",
                                                 "broadcast/fan-out-16-threads-backpressure"}
# Scenarios whose syncband rows must allocate nothing (bench/README.md).
# The select rows (bench/select.cc, bench/peers/src/select.rs, the Go peer):
# single thread; instructions counted, no instruction target.
SELECT_SCENARIOS = {"select/two-channels", "select/semaphore-or-deadline"}
ZERO_ALLOC_SCENARIOS = (PRIMITIVE_SCENARIOS | CHANNEL_SCENARIOS | LOOP_SCENARIOS
                        | WATCH_SCENARIOS | SELECT_SCENARIOS | BROADCAST_SCENARIOS)
# The rows whose instructions per round are counted: one thread, no runtime
# (the channel ping-pongs: one loop on one thread).
SINGLE_THREAD_SCENARIOS = (PRIMITIVE_SCENARIOS | {BASELINE_SCENARIO} | TWO_CAS_SCENARIOS
                           | CHANNEL_SINGLE_THREAD | LOOP_SCENARIOS | WATCH_SINGLE_THREAD
                           | SELECT_SCENARIOS | BROADCAST_SINGLE_THREAD)
# Peers shown as context only: no target reads them, they are not "the best
# peer" of any verdict or chart, and callgrind does not count them (Go's
# runtime threads).  The Go program of bench/peers/go.
CONTEXT_IMPLS = ("go",)
# Rows that are not peers but floors (pthread, sem_t, the bare atomic
# instructions, the futex wake-up).
BASELINES = ("pthread", "sem_t", "c-atomic", "rust-std", "c-futex")
# Rows without threads that run with --waits too: the futex ping-pong whose
# wake-ups are the floor under every sleeping wait (bench/baseline.cc).
WAIT_PROBES = {"baseline/futex-wake-to-run"}

# The thread counts of the contention rows: the binaries list each
# contention/*-N-threads row at the first; run.py runs it at every one.
# Above 2 the rows are oversubscribed on the 2-core machine.
CONTENTION_THREADS = (2, 4, 8, 16)
THREADS_RE = re.compile(r"^(.*)-([0-9]+)-threads$")

# A strict-FIFO row (impl "...-fifo": the mutex's, the semaphore's) convoys
# once its threads outnumber the cores: every unlock or release hands over to
# a waiter whose thread may not be running, and everyone queues behind it (9-18 us an operation on
# the 2-core machine, 500-1000 x the other rows).  Above 2 threads those rows
# run 1/50 of the rounds, so that one batch stays near 0.25 s at worst
# instead of 10-20 s.
FIFO_OVERSUBSCRIBED_DIVISOR = 50


def contention_rounds(base, threads, impl):
    """Rounds per task (per thread / 64) of a contention pair: the row's
    count at 2 threads x 2/N, so that a batch does the same N x 64 x R
    operations at every N (1.28 million by default); strict-FIFO mutex rows
    above 2 threads a 50th of that."""
    rounds = max(1, base * CONTENTION_THREADS[0] // threads)
    if impl.endswith("-fifo") and threads > CONTENTION_THREADS[0]:
        rounds = max(1, rounds // FIFO_OVERSUBSCRIBED_DIVISOR)
    return rounds


def read_fairness_bound():
    """SB_FAIRNESS_BOUND_NS (the mutex's and the semaphore's) from
    include/syncband/future.h."""
    header = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                          "include", "syncband", "future.h")
    try:
        with open(header) as f:
            m = re.search(r"^#define SB_FAIRNESS_BOUND_NS ([0-9]+)u?$", f.read(), re.M)
    except OSError as e:
        sys.exit("run.py: cannot read the fairness bound: %s" % e)
    if not m:
        sys.exit("run.py: no SB_FAIRNESS_BOUND_NS in %s" % header)
    return int(m.group(1))


def read_targets():
    """bench/targets.toml: the one home of the targets' numbers."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "targets.toml")
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        sys.exit("run.py: cannot read %s: %s" % (path, e))


TARGETS_FILE = read_targets()

# The contention rows' tail targets (targets.toml [contention_tails]): the
# limit is bound_multiple x SB_MUTEX_FAIRNESS_BOUND_NS + allowance_ns (2.1 ms).
FAIRNESS_BOUND_NS = read_fairness_bound()
TAILS = TARGETS_FILE["contention_tails"]
TAIL_LIMIT_NS = TAILS["bound_multiple"] * FAIRNESS_BOUND_NS + TAILS["allowance_ns"]
TAIL_SCENARIO_RE = re.compile(TAILS["scenarios"])
TAIL_FLOATING = tuple(TAILS["floating"])
TAIL_THREAD_BOUND = tuple(TAILS["thread_bound"])
FUTEX_SCENARIO = TAILS["futex_scenario"]


def is_strict_fifo(impl):
    return impl.endswith("-fifo")


def time_targets(entries):
    """targets.toml [[time]] as {scenario: [(factor, of[, rows])]}."""
    targets = {}
    for t in entries:
        target = (t["factor"], tuple(t["of"]))
        if "rows" in t:
            target += (tuple(t["rows"]),)
        targets.setdefault(t["scenario"], []).append(target)
    return targets


# syncband's median <= factor x the reference's (the fastest of `of`), on the
# rows named by the third element, or on every syncband row but the
# strict-FIFO ones.
TARGETS = time_targets(TARGETS_FILE["time"])

# targets.toml [[scaling]]: a row's median <= factor x the same row's median
# in another scenario of the same run (16-to-16 against 4-to-4, per item).
SCALING = {}
for _t in TARGETS_FILE.get("scaling", []):
    SCALING.setdefault(_t["scenario"], []).append(
        (_t["factor"], _t["of_scenario"], tuple(_t["rows"])))

# Instructions per round: see targets.toml [instructions].
INSTR_TARGETS = TARGETS_FILE["instructions"]
UNCONTENDED_SCENARIOS = tuple(INSTR_TARGETS["uncontended"])
INSTR_BASELINE_IMPLS = tuple(INSTR_TARGETS["baseline_impls"])


def instruction_targets(scenario):
    if scenario in UNCONTENDED_SCENARIOS:
        return [(INSTR_TARGETS["uncontended_peer"], "peer"),
                (INSTR_TARGETS["uncontended_baseline"], "baseline")]
    if scenario in PRIMITIVE_SCENARIOS:
        return [(INSTR_TARGETS["primitive_peer"], "peer")]
    if scenario in CHANNEL_SINGLE_THREAD:
        return [(INSTR_TARGETS["channel_peer"], "peer")]
    if scenario in WATCH_SINGLE_THREAD | BROADCAST_SINGLE_THREAD:
        return [(INSTR_TARGETS["broadcast_watch_peer"], "peer")]
    return []


RESULT_RE = re.compile(
    r"^RESULT (\S+) (\S+) ([0-9]+\.[0-9]{3}) allocs_per_round=([0-9]+(?:\.[0-9]{1,3})?)$")
BATCH_RE = re.compile(r"^BATCH (\S+) (\S+) ([0-9]+\.[0-9]{3})$")
WAITS_RE = re.compile(
    r"^WAITS (\S+) (\S+) p50_ns=([0-9]+) p99_ns=([0-9]+) max_ns=([0-9]+) acquires=([0-9]+)"
    r"(?: read_p50_ns=([0-9]+) read_p99_ns=([0-9]+) read_max_ns=([0-9]+) reads=([0-9]+)"
    r" write_p50_ns=([0-9]+) write_p99_ns=([0-9]+) write_max_ns=([0-9]+) writes=([0-9]+))?$")
DELIVERED_RE = re.compile(
    r"^DELIVERED (\S+) (\S+) sent=([0-9]+) received=([0-9]+) fraction=([0-9]+\.[0-9]+)"
    r" min=([0-9]+\.[0-9]+) max=([0-9]+\.[0-9]+)$")
# The two sides of a WAITS line that carries them (the rwlock rows).
WAIT_SIDES = ("read", "write")

QUICK_REPEAT = 3
SMOKE_ROUNDS = 10
# R of the instruction count: the scenario's default rounds / 300 (about
# 0.1-0.5 s of work under callgrind per run), at least 100; --smoke: 1000
# (fewer would drown in the few hundred instructions by which two start-ups
# of one binary may differ).
INSTR_ROUNDS_DIVISOR = 300
INSTR_MIN_ROUNDS = 100
SMOKE_INSTR_ROUNDS = 1000


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def is_syncband(impl):
    return impl == "syncband" or impl.startswith("syncband-")


class Pair:
    def __init__(self, scenario, impl, cmd, rounds, side, threads=None):
        self.scenario = scenario
        self.impl = impl
        self.cmd = cmd          # argv prefix; "<scenario> <impl> --batches 1 ..." follow
        self.rounds = rounds    # default rounds, when the binary told us
        self.side = side        # "c", "peers" or "go"
        self.threads = threads  # N of a contention row, else None
        # Whether each repetition also runs it with --waits: the contention
        # rows, and the machine's wake-up floor (WAIT_PROBES).
        self.times_waits = (threads is not None or scenario in WAIT_PROBES
                            or scenario in CHANNEL_WAIT_SCENARIOS)
        self.rounds_run = None  # the rounds it ran with, when given explicitly
        self.samples = []       # ns per round, one per timed batch
        self.waits = []         # {p50_ns, p99_ns, max_ns, acquires}, one per --waits run
        self.allocs = []        # allocs_per_round, one per invocation
        self.delivered = []     # {sent, received, fraction, min, max}: a timed DELIVERED line per run
        self.errors = []
        self.instructions = None  # per round, under callgrind
        self.instr_rounds = None  # the R it was measured with
        self.functions = None     # {function: instructions per round}

    def stats(self):
        if not self.samples:
            if self.instructions is None:
                return None
            return {"instructions": self.instructions}
        s = {
            "median": statistics.median(self.samples),
            "min": min(self.samples),
            "max": max(self.samples),
            # The largest count seen: an allocation in any run shows.
            "allocs": max(self.allocs) if self.allocs else None,
        }
        if self.instructions is not None:
            s["instructions"] = self.instructions
        if self.delivered:
            s["delivered"] = {
                "fraction": statistics.median(d["fraction"] for d in self.delivered),
                "fraction_min": min(d["fraction"] for d in self.delivered),
                "fraction_max": max(d["fraction"] for d in self.delivered),
                "min": min(d["min"] for d in self.delivered),
                "max": max(d["max"] for d in self.delivered),
                "runs": self.delivered,
            }
        if self.waits:
            # Medians over the runs, as every other column: the max wait's
            # verdict too (bench/README.md, Waits); the worst run beside it.
            s["waits"] = {
                "p50_ns": statistics.median(w["p50_ns"] for w in self.waits),
                "p99_ns": statistics.median(w["p99_ns"] for w in self.waits),
                "max_ns": statistics.median(w["max_ns"] for w in self.waits),
                "max_min_ns": min(w["max_ns"] for w in self.waits),
                "max_worst_ns": max(w["max_ns"] for w in self.waits),
                "runs": self.waits,
            }
            # Each side of the rwlock rows, the same way.
            for side in WAIT_SIDES:
                runs = [w[side] for w in self.waits if side in w]
                if runs:
                    s["waits"][side] = {
                        "p50_ns": statistics.median(w["p50_ns"] for w in runs),
                        "p99_ns": statistics.median(w["p99_ns"] for w in runs),
                        "max_ns": statistics.median(w["max_ns"] for w in runs),
                        "max_min_ns": min(w["max_ns"] for w in runs),
                        "max_worst_ns": max(w["max_ns"] for w in runs),
                    }
        return s


def run_cmd(argv, timeout):
    out, _stderr, err = run_cmd_both(argv, timeout)
    return out, err


def run_cmd_both(argv, timeout):
    """run_cmd, with the stderr of a run that succeeded: (stdout, stderr, error)."""
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, "timed out after %ds" % timeout
    except OSError as e:
        return None, None, str(e)
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        return None, None, "exit status %d: %s" % (p.returncode, " | ".join(tail))
    return p.stdout, p.stderr, None


def discover(bin_dir, peers, go=None):
    """Lists every pair of every side, and the peers' UNSUPPORTED lines."""
    pairs = []
    if not os.path.isdir(bin_dir):
        sys.exit("run.py: no such directory: %s" % bin_dir)
    binaries = sorted(f for f in os.listdir(bin_dir)
                      if f.startswith("bench_") and os.access(os.path.join(bin_dir, f), os.X_OK)
                      and os.path.isfile(os.path.join(bin_dir, f)))
    if not binaries:
        sys.exit("run.py: no bench_* binaries in %s (configure with -DSYNCBAND_BUILD_BENCH=ON)"
                 % bin_dir)
    for b in binaries:
        path = os.path.join(bin_dir, b)
        out, err = run_cmd([path, "--list"], 60)
        if err:
            sys.exit("run.py: %s --list: %s" % (path, err))
        for line in out.splitlines():
            f = line.split()
            if len(f) in (2, 3):
                rounds = int(f[2]) if len(f) == 3 else None
                pairs.append(Pair(f[0], f[1], [path, "--run"], rounds, "c"))
    if not os.access(peers, os.X_OK):
        sys.exit("run.py: the peers binary is missing: %s (build bench/peers with cargo)" % peers)
    out, err = run_cmd([peers, "list"], 60)
    if err:
        sys.exit("run.py: %s list: %s" % (peers, err))
    for line in out.splitlines():
        f = line.split()
        if len(f) in (2, 3):
            rounds = int(f[2]) if len(f) == 3 else None
            pairs.append(Pair(f[0], f[1], [peers, "run"], rounds, "peers"))
    if go:
        # The Go peer (bench/peers/go): the same command line as bench/peers.
        if not os.access(go, os.X_OK):
            sys.exit("run.py: the Go peer is missing: %s (build bench/peers/go)" % go)
        out, err = run_cmd([go, "list"], 60)
        if err:
            sys.exit("run.py: %s list: %s" % (go, err))
        for line in out.splitlines():
            f = line.split()
            if len(f) in (2, 3):
                rounds = int(f[2]) if len(f) == 3 else None
                pairs.append(Pair(f[0], f[1], [go, "run"], rounds, "go"))
    pairs = expand_threads(pairs)
    unsupported = []
    for prog in [peers] + ([go] if go else []):
        out, err = run_cmd([prog, "unsupported"], 60)
        if err:
            sys.exit("run.py: %s unsupported: %s" % (prog, err))
        for line in out.splitlines():
            f = line.split(None, 3)
            if len(f) >= 3 and f[0] == "UNSUPPORTED":
                unsupported.append((f[1], f[2], f[3] if len(f) > 3 else ""))
    return pairs, unsupported


def expand_threads(pairs):
    """Each contention pair (listed at one N) at every N of CONTENTION_THREADS."""
    out = []
    for p in pairs:
        m = THREADS_RE.match(p.scenario)
        # Only the contention rows scale; a row such as
        # broadcast/fan-out-16-threads has its thread count in its name.
        if not m or not p.scenario.startswith("contention/"):
            out.append(p)
            continue
        for n in CONTENTION_THREADS:
            out.append(Pair("%s-%d-threads" % (m.group(1), n), p.impl, p.cmd, p.rounds, p.side,
                            threads=n))
    return out


def scenario_key(name, seen):
    return (SCENARIO_ORDER.index(name), 0) if name in SCENARIO_ORDER else (len(SCENARIO_ORDER),
                                                                            seen.index(name))


# syncband's other rows in this order (the executor rows, then the threads;
# each mode before its strict-FIFO twin); any not listed follow.
SYNCBAND_ROW_ORDER = ("syncband-pinned", "syncband-fifo", "syncband-blocking",
                      "syncband-blocking-fifo")


def impl_order(impl):
    # syncband first, then its other rows, the C baselines, then the peers.
    if impl == "syncband":
        return (0, impl)
    if impl in SYNCBAND_ROW_ORDER:
        return (1, SYNCBAND_ROW_ORDER.index(impl), impl)
    if is_syncband(impl):
        return (1, len(SYNCBAND_ROW_ORDER), impl)
    if impl in BASELINES:
        return (2, impl)
    if impl in CONTEXT_IMPLS:
        return (4, impl)
    return (3, impl)


def run_pair(pair, rounds, timeout):
    argv = pair.cmd + [pair.scenario, pair.impl, "--batches", "1"]
    if rounds:
        argv += ["--rounds", str(rounds)]
        pair.rounds_run = rounds
    out, stderr, err = run_cmd_both(argv, timeout)
    if err:
        pair.errors.append(err)
        return False
    delivered = parse_delivered(stderr, pair)
    if delivered:
        pair.delivered.append(delivered)
    got_result = False
    for line in out.splitlines():
        m = BATCH_RE.match(line)
        if m and m.group(1) == pair.scenario and m.group(2) == pair.impl:
            pair.samples.append(float(m.group(3)))
            continue
        m = RESULT_RE.match(line)
        if m and m.group(1) == pair.scenario and m.group(2) == pair.impl:
            pair.allocs.append(float(m.group(4)))
            got_result = True
    if not got_result:
        pair.errors.append("no well-formed RESULT line in: %r" % out[-300:])
        return False
    return True


def parse_delivered(text, pair):
    """The last DELIVERED line of `pair` in `text` (the timed batch's; the
    warm-up batch prints one first) as a dict, or None."""
    last = None
    for line in (text or "").splitlines():
        m = DELIVERED_RE.match(line)
        if m and m.group(1) == pair.scenario and m.group(2) == pair.impl:
            last = {"sent": int(m.group(3)), "received": int(m.group(4)),
                    "fraction": float(m.group(5)), "min": float(m.group(6)),
                    "max": float(m.group(7))}
    return last


def fmt_delivered(d):
    """'0.9312 (0.9001-0.9540), per receiver 0.8800-1.0000': the median
    fraction over the runs (smallest-largest), then the smallest min and the
    largest max of one receiver."""
    return "%.4f (%.4f-%.4f), per receiver %.4f-%.4f" % (
        d["fraction"], d["fraction_min"], d["fraction_max"], d["min"], d["max"])


def print_delivered(report):
    """Under the table: the items delivered of each row that prints them."""
    lines = []
    for sc in report:
        first = True
        for e in sc["rows"]:
            if "delivered" in e:
                lines.append((sc["scenario"] if first else "", e["impl"],
                              fmt_delivered(e["delivered"])))
                first = False
    if lines:
        print()
        print("items delivered (the receivers' reads / every receiver reading every item; "
              "median over the runs):")
        print_columns(("scenario", "impl", "delivered"), lines, set())


def run_waits(pair, rounds, timeout):
    """One --waits run of a pair that times its waits: appends its WAITS line's values."""
    argv = pair.cmd + [pair.scenario, pair.impl, "--waits"]
    if rounds:
        argv += ["--rounds", str(rounds)]
    out, err = run_cmd(argv, timeout)
    if err:
        pair.errors.append("--waits: " + err)
        return False
    for line in out.splitlines():
        m = WAITS_RE.match(line)
        if m and m.group(1) == pair.scenario and m.group(2) == pair.impl:
            w = {"p50_ns": int(m.group(3)), "p99_ns": int(m.group(4)),
                 "max_ns": int(m.group(5)), "acquires": int(m.group(6))}
            if m.group(7) is not None:
                for k, side in enumerate(WAIT_SIDES):
                    g = 7 + 4 * k
                    w[side] = {"p50_ns": int(m.group(g)), "p99_ns": int(m.group(g + 1)),
                               "max_ns": int(m.group(g + 2)), "acquires": int(m.group(g + 3))}
            pair.waits.append(w)
            return True
    pair.errors.append("--waits: no well-formed WAITS line in: %r" % out[-300:])
    return False


def fmt_waits(w):
    """'30.0 ns / 1.2 us / 1.10 ms (1.05 ms-10.1 ms)': the medians of p50, p99
    and max over the runs, then the smallest and largest max of a run."""
    return "%s / %s / %s (%s-%s)" % (fmt_ns(w["p50_ns"]), fmt_ns(w["p99_ns"]), fmt_ns(w["max_ns"]),
                                     fmt_ns(w["max_min_ns"]), fmt_ns(w["max_worst_ns"]))


def fmt_side_waits(w):
    """'read 30.0 ns / 1.2 us / 1.10 ms, write ...': each side of a row that
    times its read and write locks apart; '' for the others."""
    return ", ".join("%s %s / %s / %s" % (side, fmt_ns(w[side]["p50_ns"]), fmt_ns(w[side]["p99_ns"]),
                                          fmt_ns(w[side]["max_ns"]))
                     for side in WAIT_SIDES if side in w)


# ------------------------------------------------------------ instructions

CALLGRIND_TOTAL_RE = re.compile(r"^(?:summary|totals):\s+([0-9]+)\s*$", re.M)
ANNOTATE_LINE_RE = re.compile(r"^\s*([0-9][0-9,]*)\s+\(\s*[0-9.]+%\)\s+(\S.*)$")


def annotate_functions(out_file):
    """{function: self instructions} from callgrind_annotate."""
    p = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=no", out_file],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError("callgrind_annotate: " + (p.stderr.strip()[-200:] or "failed"))
    funcs = {}
    for line in p.stdout.splitlines():
        m = ANNOTATE_LINE_RE.match(line)
        if not m or "PROGRAM TOTALS" in m.group(2):
            continue
        name = m.group(2)
        name = re.sub(r" \[[^\]]*\]$", "", name)    # " [object file]"
        name = name.split(":", 1)[1] if ":" in name else name  # "file:function"
        funcs[name] = funcs.get(name, 0) + int(m.group(1).replace(",", ""))
    return funcs


def callgrind_run(argv, tmpdir, tag, functions):
    """Runs argv under callgrind: (total instructions, {function: self} or None)."""
    out_file = os.path.join(tmpdir, "callgrind.%s.out" % tag)
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out_file] + argv
    out, err = run_cmd(cmd, 600)
    if err:
        raise RuntimeError(err)
    with open(out_file) as f:
        m = CALLGRIND_TOTAL_RE.search(f.read())
    if not m:
        raise RuntimeError("no instruction total in %s" % out_file)
    funcs = annotate_functions(out_file) if functions else None
    os.unlink(out_file)
    return int(m.group(1)), funcs


def measure_instructions(pair, rounds, tmpdir, functions):
    """(I(2R) - I(R)) / R for one pair, --once runs of R and 2R rounds."""
    base = pair.cmd + [pair.scenario, pair.impl, "--once", "--rounds"]
    tag = re.sub(r"[^A-Za-z0-9]+", "_", "%s_%s" % (pair.scenario, pair.impl))
    try:
        one, f1 = callgrind_run(base + [str(rounds)], tmpdir, tag + "_1", functions)
        two, f2 = callgrind_run(base + [str(2 * rounds)], tmpdir, tag + "_2", functions)
    except (RuntimeError, OSError) as e:
        pair.errors.append("callgrind: %s" % e)
        return False
    if two <= one:
        pair.errors.append("callgrind: %d rounds ran no more instructions than %d"
                           % (2 * rounds, rounds))
        return False
    pair.instructions = round((two - one) / rounds, 2)
    pair.instr_rounds = rounds
    if functions:
        per_round = {}
        for name in set(f1) | set(f2):
            d = (f2.get(name, 0) - f1.get(name, 0)) / rounds
            if abs(d) >= 0.05:
                per_round[name] = round(d, 2)
        pair.functions = per_round
    return True


def instruction_pairs(pairs):
    return [p for p in pairs if p.scenario in SINGLE_THREAD_SCENARIOS
            and p.impl not in CONTEXT_IMPLS]


def measure_all_instructions(pairs, rounds_of, functions):
    """Counts every single-thread pair, two at a time; returns the failures."""
    todo = instruction_pairs(pairs)
    if not todo:
        return []
    started = time.monotonic()
    log("==> instructions per round (callgrind, R and 2R rounds): %d pairs" % len(todo))
    with tempfile.TemporaryDirectory(prefix="syncband-callgrind-") as tmpdir:
        workers = max(1, min(2, os.cpu_count() or 1))
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            jobs = {pool.submit(measure_instructions, p, rounds_of(p), tmpdir, functions): p
                    for p in todo}
            for job in concurrent.futures.as_completed(jobs):
                p = jobs[job]
                ok = job.result()
                log("    %-36s %-16s %s" % (p.scenario, p.impl,
                                           fmt_instr(p.instructions) if ok else "FAILED"))
    log("==> instructions counted in %.0f s" % (time.monotonic() - started))
    return [p for p in todo if p.instructions is None]


def fmt_instr(n):
    if n is None:
        return "-"
    if n >= 100:
        return "%.0f" % n
    return "%.1f" % n


def fmt_ns(ns):
    if ns is None:
        return "-"
    if ns >= 1e6:
        return "%.2f ms" % (ns / 1e6)
    if ns >= 1e4:
        return "%.1f us" % (ns / 1e3)
    if ns >= 100:
        return "%.0f ns" % ns
    return "%.1f ns" % ns


def fmt_allocs(a):
    if a is None:
        return "-"
    s = ("%.3f" % a).rstrip("0").rstrip(".")
    return s or "0"


def fmt_ratio(r):
    if r is None:
        return "-"
    if r >= 10:
        return "%.1f" % r
    if r >= 0.1:
        return "%.2f" % r
    return "%.2g" % r


def fmt_result_ns(ns):
    return "%.3f" % ns


def tail_limits(base_impl, futex_max):
    """The contention_tails limits of one row: [(what, limit_ns or None)],
    what being "p99_ns" or "max_ns"; None when the row's limit needs the
    futex baseline's maximum and the run has none."""
    if base_impl in TAIL_FLOATING:
        return [("max_ns", TAIL_LIMIT_NS)]
    if base_impl in TAIL_THREAD_BOUND:
        return [("p99_ns", TAIL_LIMIT_NS),
                ("max_ns", TAIL_LIMIT_NS + futex_max if futex_max is not None else None)]
    return []


def evaluate_tail_targets(scenario, base_impl, sb, futex_max):
    """targets.toml [contention_tails] for syncband row `base_impl`: floating
    tasks max <= the limit; thread-bound rows p99 <= the limit and max <=
    the limit + `futex_max` (the same run's baseline/futex-wake-to-run max,
    the median of its runs' maxima).  Every value read is a median over the
    --waits runs; a row with read and write sides is judged on each."""
    verdicts = []
    if not TAIL_SCENARIO_RE.match(scenario):
        return verdicts
    for what, limit in tail_limits(base_impl, futex_max):
        name = "p99" if what == "p99_ns" else "max"
        plus = " + futex max" if what == "max_ns" and base_impl in TAIL_THREAD_BOUND else ""
        label = "%s wait %s%s" % (name, fmt_ns(TAIL_LIMIT_NS), plus)
        if "waits" not in sb or limit is None:
            why = "not measured" if "waits" not in sb else "no %s in this run" % FUTEX_SCENARIO
            verdicts.append({"target": label, "status": "n/a", "ratio": None,
                             "text": "%s wait <=%s%s: %s" % (name, fmt_ns(TAIL_LIMIT_NS), plus,
                                                             why)})
            continue
        w = sb["waits"]
        sides = [(side, w[side]) for side in WAIT_SIDES if side in w] or [("", w)]
        values = [(side, v[what]) for side, v in sides]
        ok = all(v <= limit for _, v in values)
        worst = max(v for _, v in values)
        shown = ", ".join(("%s %s" % (side, fmt_ns(v))).strip() for side, v in values)
        verdicts.append({"target": label, "status": "pass" if ok else "MISS",
                         "ratio": worst / limit, "limit_ns": limit,
                         "text": "%s wait <=%s: %s %s" % (name, fmt_ns(limit), shown,
                                                          "pass" if ok else "MISS")})
    return verdicts


def evaluate_targets(scenario, base_impl, by_impl, medians=None, futex_max=None):
    """Target verdicts for syncband row `base_impl` of one scenario.
    `medians`: {(scenario, impl): median} of the whole run ([[scaling]]);
    `futex_max`: the run's baseline/futex-wake-to-run max ([contention_tails])."""
    verdicts = []
    sb = by_impl.get(base_impl)
    if not sb or "median" not in sb:
        return verdicts
    for target in TARGETS.get(scenario, []):
        factor, refs = target[0], target[1]
        rows = target[2] if len(target) > 2 else None
        if (base_impl not in rows) if rows else is_strict_fifo(base_impl):
            continue
        ref_rows = [(impl, by_impl[impl]["median"]) for impl in refs
                    if impl in by_impl and "median" in by_impl[impl]]
        label = "%.2fx %s" % (factor, "/".join(refs) if len(refs) == 1 else
                              "best of " + "/".join(refs))
        if not ref_rows:
            verdicts.append({"target": label, "status": "n/a", "ratio": None,
                             "text": "<=%s: no reference measured" % label})
            continue
        ref_impl, ref_median = min(ref_rows, key=lambda r: r[1])
        ratio = sb["median"] / ref_median
        ok = ratio <= factor
        verdicts.append({"target": label, "reference": ref_impl, "ratio": ratio,
                         "status": "pass" if ok else "MISS",
                         "text": "<=%.2fx %s: %s %s" % (factor, ref_impl, fmt_ratio(ratio),
                                                         "pass" if ok else "MISS")})
    for factor, other, rows in SCALING.get(scenario, []):
        if base_impl not in rows:
            continue
        label = "%.2fx %s" % (factor, other)
        ref = (medians or {}).get((other, base_impl))
        if ref is None:
            verdicts.append({"target": label, "status": "n/a", "ratio": None,
                             "text": "<=%s: not measured" % label})
            continue
        ratio = sb["median"] / ref
        ok = ratio <= factor
        verdicts.append({"target": label, "reference": other, "ratio": ratio,
                         "status": "pass" if ok else "MISS",
                         "text": "<=%.2fx own %s: %s %s" % (factor, other.split("/")[-1],
                                                            fmt_ratio(ratio),
                                                            "pass" if ok else "MISS")})
    if scenario in ZERO_ALLOC_SCENARIOS:
        ok = sb["allocs"] == 0
        verdicts.append({"target": "0 allocations", "status": "pass" if ok else "MISS",
                         "ratio": None,
                         "text": "0 allocs: %s" % ("pass" if ok else "MISS")})
    verdicts += evaluate_tail_targets(scenario, base_impl, sb, futex_max)
    return verdicts


def evaluate_instruction_targets(scenario, base_impl, by_impl, peers_known, baseline_rows):
    """Instruction verdicts for syncband row `base_impl` (see instruction_targets).
    `peers_known`: the scenario's supported peer impls, so that a scenario
    without any (condvar) gets no verdict;
    `baseline_rows`: {impl: instructions} of the CAS+store baseline."""
    verdicts = []
    sb = by_impl.get(base_impl)
    if not sb or sb.get("instructions") is None:
        return verdicts
    for factor, kind in instruction_targets(scenario):
        if kind == "peer":
            if not peers_known:
                continue
            label = "best peer"
            refs = [(i, r["instructions"]) for i, r in by_impl.items()
                    if i in peers_known and r.get("instructions") is not None]
        else:
            label = "CAS+store baseline"
            refs = [(i, baseline_rows[i]) for i in INSTR_BASELINE_IMPLS if i in baseline_rows][:1]
        label = "instr %.2fx %s" % (factor, label)
        if not refs:
            verdicts.append({"target": label, "status": "n/a", "ratio": None,
                             "text": "%s: no reference measured" % label.replace(" ", " <=", 1)})
            continue
        ref_impl, ref = min(refs, key=lambda r: r[1])
        ratio = sb["instructions"] / ref if ref > 0 else float("inf")
        ok = ratio <= factor
        verdicts.append({"target": label, "reference": ref_impl, "ratio": ratio,
                         "status": "pass" if ok else "MISS",
                         "text": "instr <=%.2fx %s: %s %s" % (factor, ref_impl, fmt_ratio(ratio),
                                                               "pass" if ok else "MISS")})
    return verdicts


def summarize(pairs, unsupported, scenarios):
    """Per scenario: rows with stats, rank, ratio, target verdicts."""
    report = []
    baseline_rows = {p.impl: p.instructions for p in pairs
                     if p.scenario == BASELINE_SCENARIO and p.instructions is not None}
    medians = {(p.scenario, p.impl): statistics.median(p.samples) for p in pairs if p.samples}
    futex = [p.stats()["waits"]["max_ns"] for p in pairs
             if p.scenario == FUTEX_SCENARIO and p.samples and p.waits]
    futex_max = futex[0] if futex else None
    for sc in scenarios:
        rows = sorted((p for p in pairs if p.scenario == sc), key=lambda p: impl_order(p.impl))
        stats = {p.impl: p.stats() for p in rows}
        measured = {i: s for i, s in stats.items() if s}
        base = "syncband" if "syncband" in measured else next(
            (i for i in measured if is_syncband(i)), None)
        timed = [i for i in measured if "median" in measured[i]]
        ranked = sorted(timed, key=lambda i: measured[i]["median"])
        peers_known = {p.impl for p in rows if not is_syncband(p.impl) and p.impl not in BASELINES
                       and p.impl not in CONTEXT_IMPLS}
        base_instr = measured[base].get("instructions") if base else None
        entries = []
        for p in rows:
            s = stats[p.impl]
            e = {"impl": p.impl, "side": p.side, "samples": p.samples, "errors": p.errors}
            if p.threads is not None:
                e["threads"] = p.threads
            if p.rounds_run is not None:
                e["rounds"] = p.rounds_run
            if s:
                e.update(s)
                if "median" in s:
                    e["rank"] = ranked.index(p.impl) + 1
                    e["ratio"] = (s["median"] / measured[base]["median"]
                                  if base in timed else None)
                if s.get("instructions") is not None:
                    e["instr_rounds"] = p.instr_rounds
                    e["instr_ratio"] = (s["instructions"] / base_instr
                                        if base_instr else None)
                if p.functions is not None:
                    e["functions"] = dict(sorted(p.functions.items(), key=lambda kv: -kv[1]))
                if is_syncband(p.impl):
                    e["targets"] = (evaluate_targets(sc, p.impl, measured, medians, futex_max) +
                                    evaluate_instruction_targets(sc, p.impl, measured,
                                                                 peers_known, baseline_rows))
            entries.append(e)
        for (usc, uimpl, why) in unsupported:
            if usc == sc:
                entries.append({"impl": uimpl, "side": "peers", "unsupported": why})
        report.append({"scenario": sc, "base": base, "rows": entries})
    return report


def print_side_waits(report):
    """Under the table: each side of the rows that time reads and writes apart."""
    lines = []
    for sc in report:
        first = True
        for e in sc["rows"]:
            if "waits" in e and any(side in e["waits"] for side in WAIT_SIDES):
                lines.append((sc["scenario"] if first else "", e["impl"],
                              fmt_side_waits(e["waits"])))
                first = False
    if lines:
        print()
        print("read and write lock waits apart (p50 / p99 / max, medians over the --waits runs):")
        print_columns(("scenario", "impl", "waits per side"), lines, set())


def print_table(report):
    head = ("scenario", "impl", "rank", "ratio", "median/round", "min-max", "instr/round",
            "allocs/round", "wait p50 / p99 / max", "target (syncband vs reference, medians)")
    lines = []
    for sc in report:
        first = True
        for e in sc["rows"]:
            name = sc["scenario"] if first else ""
            first = False
            if "unsupported" in e:
                lines.append((name, e["impl"], "-", "-", "unsupported", "", "", "", "",
                              "(see below)"))
            elif "median" not in e:
                lines.append((name, e["impl"], "-", "-", "FAILED", "",
                              fmt_instr(e.get("instructions")), "", "",
                              "; ".join(dict.fromkeys(e["errors"]))[:80]))
            else:
                ratio = fmt_ratio(e["ratio"])
                tgt = " | ".join(t["text"] for t in e.get("targets", []))
                instr = (fmt_instr(e.get("instructions"))
                         if sc["scenario"] in SINGLE_THREAD_SCENARIOS else "")
                waits = fmt_waits(e["waits"]) if "waits" in e else ""
                lines.append((name, e["impl"], str(e["rank"]), ratio, fmt_ns(e["median"]),
                              "%s - %s" % (fmt_ns(e["min"]), fmt_ns(e["max"])), instr,
                              fmt_allocs(e["allocs"]), waits, tgt))
    print_columns(head, lines, {2, 3, 4, 6, 7, 8})


def print_instruction_table(report, functions):
    """--instructions: the instruction column alone, with its targets."""
    head = ("scenario", "impl", "instr/round", "ratio", "R", "target (instructions per round)")
    lines = []
    for sc in report:
        if sc["scenario"] not in SINGLE_THREAD_SCENARIOS:
            continue
        first = True
        for e in sc["rows"]:
            name = sc["scenario"] if first else ""
            first = False
            if "unsupported" in e:
                lines.append((name, e["impl"], "unsupported", "", "", ""))
            elif e.get("instructions") is None:
                lines.append((name, e["impl"], "FAILED", "", "",
                              "; ".join(dict.fromkeys(e["errors"]))[:80]))
            else:
                tgt = " | ".join(t["text"] for t in e.get("targets", [])
                                 if t["target"].startswith("instr"))
                lines.append((name, e["impl"], fmt_instr(e["instructions"]),
                              fmt_ratio(e.get("instr_ratio")), str(e["instr_rounds"]), tgt))
    print_columns(head, lines, {2, 3, 4})
    if not functions:
        return
    for sc in report:
        for e in sc["rows"]:
            if not e.get("functions"):
                continue
            print()
            print("%s %s: %s instructions per round, by function (self)"
                  % (sc["scenario"], e["impl"], fmt_instr(e["instructions"])))
            for name, n in e["functions"].items():
                if n >= 0.5:
                    print("  %8.1f  %s" % (n, name))


def print_columns(head, lines, right):
    widths = [max(len(h), *(len(l[i]) for l in lines)) if lines else len(h)
              for i, h in enumerate(head)]
    widths[-1] = len(head[-1])

    def fmt(row):
        cells = []
        for i, c in enumerate(row):
            cells.append(c.rjust(widths[i]) if i in right else c.ljust(widths[i]))
        return "  ".join(cells).rstrip()

    print(fmt(head))
    print("  ".join("-" * w for w in widths))
    prev = None
    for l in lines:
        if l[0] and prev is not None:
            print()
        prev = l
        print(fmt(l))


def machine_info():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(),
            "machine": platform.machine()}


def svg_chart(report, path, title):
    """Ratio of each implementation's median to syncband's, per scenario, on a
    log scale (right of 1 = slower than syncband).  Hand-written SVG."""
    rows = []  # (scenario, impl, ratio) or (scenario, None, None) as a header
    for sc in report:
        peers = [e for e in sc["rows"] if e.get("ratio") is not None and e["impl"] != sc["base"]]
        if not peers:
            continue
        rows.append((sc["scenario"], None, None))
        for e in peers:
            rows.append((sc["scenario"], e["impl"], e["ratio"]))
    lo, hi = 1 / 64, 64.0
    for _, _, r in rows:
        if r:
            while r < lo:
                lo /= 4
            while r > hi:
                hi *= 4
    label_w, plot_w, row_h, top = 330, 560, 16, 64
    height = top + row_h * len(rows) + 40
    width = label_w + plot_w + 90

    def x_of(r):
        return label_w + plot_w * (math.log(r) - math.log(lo)) / (math.log(hi) - math.log(lo))

    palette = {"tokio": "#d9534f", "tokio-current-thread": "#d9534f",
               "async-lock": "#5b8def", "event-listener": "#5b8def",
               "async-executor": "#5b8def", "pthread": "#777777", "sem_t": "#777777",
               "c-atomic": "#777777", "rust-std": "#999999"}
    esc = (lambda s: s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="11">' % (width, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="10" y="20" font-size="14" font-weight="bold">%s</text>' % esc(title),
           '<text x="10" y="38">median time per round of each implementation / syncband\'s '
           '(log scale): right of 1 = syncband is faster</text>']
    tick = lo
    while tick <= hi * 1.0001:
        x = x_of(tick)
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>'
                   % (x, top - 6, x, height - 34, "#333" if abs(tick - 1) < 1e-9 else "#ddd"))
        label = ("%g" % tick) if tick >= 1 else "1/%g" % (1 / tick)
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                   % (x, height - 20, label))
        tick *= 4
    y = top
    for sc, impl, r in rows:
        if impl is None:
            out.append('<text x="6" y="%d" font-weight="bold">%s</text>' % (y + 11, esc(sc)))
        else:
            x1, x0 = x_of(r), x_of(1.0)
            color = palette.get(impl, "#5cb85c" if is_syncband(impl) else "#aaaaaa")
            out.append('<text x="%d" y="%d" text-anchor="end">%s</text>'
                       % (label_w - 6, y + 11, esc(impl)))
            out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>'
                       % (min(x0, x1), y + 2, max(abs(x1 - x0), 1), row_h - 4, color))
            out.append('<text x="%.1f" y="%d">%s</text>'
                       % (max(x0, x1) + 4, y + 11, fmt_ratio(r)))
        y += row_h
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def best_peer_chart(report, path, title):
    """One bar per scenario: the fastest peer's median / syncband's (log
    scale; right of 1 = syncband is faster).  Baselines (pthread, sem_t,
    atomics, the futex wake-up) are not peers and are left out."""
    baselines = set(BASELINES) | set(CONTEXT_IMPLS)
    bars = []
    for sc in report:
        base = sc["base"]
        peers = [e for e in sc["rows"] if e.get("ratio") is not None and e["impl"] != base
                 and not is_syncband(e["impl"]) and e["impl"] not in baselines]
        if not peers:
            continue
        best = min(peers, key=lambda e: e["ratio"])
        bars.append((sc["scenario"], best["impl"], best["ratio"]))
    lo, hi = 1 / 8, 8.0
    for _, _, r in bars:
        while r < lo:
            lo /= 2
        while r > hi:
            hi *= 2
    label_w, plot_w, row_h, top = 250, 520, 20, 60
    height = top + row_h * len(bars) + 40
    width = label_w + plot_w + 190

    def x_of(r):
        return label_w + plot_w * (math.log(r) - math.log(lo)) / (math.log(hi) - math.log(lo))

    esc = (lambda s: s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="11">' % (width, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="10" y="20" font-size="13" font-weight="bold">%s</text>' % esc(title),
           '<text x="10" y="38">fastest peer\'s median / syncband\'s median, per scenario '
           '(log scale): right of 1 = syncband is faster</text>']
    tick = lo
    while tick <= hi * 1.0001:
        x = x_of(tick)
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>'
                   % (x, top - 6, x, height - 34, "#333" if abs(tick - 1) < 1e-9 else "#ddd"))
        label = ("%g" % tick) if tick >= 1 else "1/%g" % (1 / tick)
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                   % (x, height - 20, label))
        tick *= 2
    y = top
    for sc, impl, r in bars:
        x1, x0 = x_of(r), x_of(1.0)
        color = "#5cb85c" if r >= 1 else "#d9534f"
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>' % (label_w - 6, y + 13, esc(sc)))
        out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>'
                   % (min(x0, x1), y + 3, max(abs(x1 - x0), 1), row_h - 6, color))
        out.append('<text x="%.1f" y="%d">%s (%s)</text>'
                   % (max(x0, x1) + 4, y + 13, fmt_ratio(r), esc(impl)))
        y += row_h
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


INSTRUCTIONS_METHOD = (
    "valgrind --tool=callgrind, instructions executed (Ir) per round: two runs of one "
    "batch (--once, no warm-up) of R and 2R rounds, (I(2R) - I(R)) / R; R is each row's "
    "instr_rounds")


def print_waits_lines(report):
    """The machine-readable line of each row's waits (p50, p99 and max:
    medians over the --waits runs; worst: the largest max of a run)."""
    for sc in report:
        for e in sc["rows"]:
            w = e.get("waits")
            if w:
                sides = "".join(" %s_p50_ns=%d %s_p99_ns=%d %s_max_ns=%d %s_worst_ns=%d"
                                % (side, w[side]["p50_ns"], side, w[side]["p99_ns"], side,
                                   w[side]["max_ns"], side, w[side]["max_worst_ns"])
                                for side in WAIT_SIDES if side in w)
                print("WAITS %s %s p50_ns=%d p99_ns=%d max_ns=%d worst_ns=%d runs=%d%s"
                      % (sc["scenario"], e["impl"], w["p50_ns"], w["p99_ns"], w["max_ns"],
                         w["max_worst_ns"], len(w["runs"]), sides))


CONTENTION_METHOD = {
    "threads": list(CONTENTION_THREADS),
    "rounds": "the row's rounds at 2 threads x 2/N (the same operations per batch at every N); "
              "strict-FIFO mutex rows (-fifo) above 2 threads: 1/%d of that; each row's "
              "\"rounds\" is what it ran" % FIFO_OVERSUBSCRIBED_DIVISOR,
    "waits": "one --waits run per contention pair and repetition: every acquire timed with "
             "CLOCK_MONOTONIC from the lock/acquire call (or the future's first poll) until it "
             "holds, into preallocated histograms (percentiles to within 1/32 above); "
             "p50_ns/p99_ns/max_ns: medians over the runs (the tail verdicts read them), "
             "max_min_ns/max_worst_ns: the smallest and largest max of a run; the rwlock rows "
             "also per side (\"read\", \"write\"); "
             "baseline/futex-wake-to-run times every wake of a futex ping-pong the same way",
    "fairness_bound_ns": FAIRNESS_BOUND_NS,
    "tail_limit_ns": TAIL_LIMIT_NS,
    "tail_floating": list(TAIL_FLOATING),
    "tail_thread_bound": list(TAIL_THREAD_BOUND),
}


def print_instruction_lines(report):
    """The machine-readable line of each instruction count."""
    for sc in report:
        for e in sc["rows"]:
            if e.get("instructions") is not None:
                print("INSTRUCTIONS %s %s %.2f" % (sc["scenario"], e["impl"], e["instructions"]))


def instructions_only(args, pairs, unsupported, scenarios, rounds_of, started):
    """--instructions: count, print the column and its targets, write JSON."""
    scenarios = [sc for sc in scenarios if sc in SINGLE_THREAD_SCENARIOS]
    pairs = instruction_pairs(pairs)
    if not pairs:
        sys.exit("run.py: no single-thread scenario selected")
    unsupported = [u for u in unsupported if u[0] in SINGLE_THREAD_SCENARIOS]
    measure_all_instructions(pairs, rounds_of, args.functions)
    report = summarize(pairs, unsupported, scenarios)
    elapsed = time.monotonic() - started
    info = machine_info()
    print()
    print("syncband instructions per round (callgrind), %s, %s cores"
          % (info["cpu"] or info["machine"], info["cores"]))
    print("ratio = instructions / syncband's; R and 2R rounds differenced; "
          "targets from bench/targets.toml")
    print()
    print_instruction_table(report, args.functions)
    print()
    print_instruction_lines(report)
    verdicts = [t for sc in report for e in sc["rows"] for t in e.get("targets", [])]
    missed = sum(t["status"] == "MISS" for t in verdicts)
    passed = sum(t["status"] == "pass" for t in verdicts)
    os.makedirs(args.out, exist_ok=True)
    doc = {
        "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "mode": "instructions", "machine": info, "wall_seconds": round(elapsed, 1),
        "targets": {"pass": passed, "miss": missed},
        "instructions": INSTRUCTIONS_METHOD, "scenarios": report,
    }
    path = os.path.join(args.out, "instructions.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print()
    print("instruction targets: %d pass, %d missed" % (passed, missed))
    print("wrote %s (%.0f s)" % (path, elapsed))
    failed = [p for p in pairs if p.errors]
    for p in failed:
        print("FAILED %s %s: %s" % (p.scenario, p.impl, "; ".join(p.errors)), file=sys.stderr)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", required=True, help="directory of the bench_* binaries")
    ap.add_argument("--peers", required=True, help="the peers binary (bench/peers)")
    ap.add_argument("--go", metavar="PATH",
                    help="the Go peer (bench/peers/go): its channel rows are shown as context")
    ap.add_argument("--out", default="build/bench", help="where results.json/.svg go")
    ap.add_argument("--publish", metavar="DIR",
                    help="after a full, unfiltered run, also write DIR/latest.json, "
                    "DIR/latest.txt (the table) and DIR/latest.svg (best peer vs syncband)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true",
                      help="%d repetitions of 1/100 of the rounds" % QUICK_REPEAT)
    mode.add_argument("--smoke", action="store_true",
                      help="every pair once with %d rounds; fail unless all print RESULT"
                      % SMOKE_ROUNDS)
    mode.add_argument("--instructions", action="store_true",
                      help="only the instructions per round of the single-thread rows "
                      "(callgrind), no timing")
    ap.add_argument("--functions", action="store_true",
                    help="with --instructions: also each function's instructions per round")
    ap.add_argument("--no-instructions", action="store_true",
                    help="skip the instruction count of a full or --quick run")
    ap.add_argument("--repeat", type=int, default=None,
                    help="repetitions (default 10; --quick: %d)" % QUICK_REPEAT)
    ap.add_argument("filters", nargs="*", metavar="FILTER",
                    help="keep scenarios whose name contains one of these")
    args = ap.parse_args()
    if args.functions and not args.instructions:
        ap.error("--functions goes with --instructions")
    if args.instructions and args.no_instructions:
        ap.error("--instructions and --no-instructions contradict each other")
    count_instructions = not args.no_instructions
    if count_instructions and not (shutil.which("valgrind") and shutil.which("callgrind_annotate")):
        if args.instructions or args.smoke:
            sys.exit("run.py: valgrind (callgrind) is needed for the instruction counts")
        log("run.py: no valgrind in PATH: the instruction column stays empty")
        count_instructions = False

    started = time.monotonic()
    pairs, unsupported = discover(args.bin_dir, args.peers, args.go)
    if args.filters:
        # The futex probe goes with any contention row: the thread-bound
        # rows' tail targets read its maximum from the same run.
        wanted = lambda sc: any(f in sc for f in args.filters)
        with_tails = any(wanted(p.scenario) and TAIL_SCENARIO_RE.match(p.scenario) for p in pairs)
        keep = lambda sc: wanted(sc) or (with_tails and sc == FUTEX_SCENARIO)
        pairs = [p for p in pairs if keep(p.scenario)]
        unsupported = [u for u in unsupported if keep(u[0])]
        if not pairs:
            sys.exit("run.py: no scenario matches %s" % " ".join(args.filters))
    seen = []
    for p in pairs:
        if p.scenario not in seen:
            seen.append(p.scenario)
    scenarios = sorted(seen, key=lambda s: scenario_key(s, seen))

    # Rounds per invocation: the default (None), 10 (smoke), or 1/100 of
    # syncband's default for the scenario (quick; the same count for every
    # implementation, so that no peer runs its full count).
    syncband_rounds = {}
    for p in pairs:
        if p.side == "c" and p.rounds and p.scenario not in syncband_rounds:
            syncband_rounds[p.scenario] = p.rounds

    def rounds_for(p):
        if args.smoke:
            return SMOKE_ROUNDS
        if p.threads is not None:
            base = syncband_rounds.get(p.scenario) or p.rounds
            if not base:
                sys.exit("run.py: no default rounds for %s" % p.scenario)
            r = contention_rounds(base, p.threads, p.impl)
            return max(1, r // 100) if args.quick else r
        if args.quick:
            # A peer runs syncband's count where syncband has the row, its
            # own default (from `peers list`) where it does not yet.
            if p.side != "c":
                r = syncband_rounds.get(p.scenario) or p.rounds
            else:
                r = p.rounds or syncband_rounds.get(p.scenario)
            return max(1, r // 100) if r else None
        return None

    def instr_rounds_for(p):
        if args.smoke:
            return SMOKE_INSTR_ROUNDS
        r = syncband_rounds.get(p.scenario) or p.rounds or 0
        return max(INSTR_MIN_ROUNDS, r // INSTR_ROUNDS_DIVISOR)

    if args.instructions:
        return instructions_only(args, pairs, unsupported, scenarios, instr_rounds_for, started)

    repeat = args.repeat or (1 if args.smoke else QUICK_REPEAT if args.quick else 10)
    timeout = 60 if (args.smoke or args.quick) else 300
    mode_name = "smoke" if args.smoke else "quick" if args.quick else "full"
    log("==> %d pairs (%d C, %d peers, %d Go) in %d scenarios, %d repetition(s), mode %s"
        % (len(pairs), sum(p.side == "c" for p in pairs), sum(p.side == "peers" for p in pairs),
           sum(p.side == "go" for p in pairs), len(scenarios), repeat, mode_name))

    for rep in range(repeat):
        for sc in scenarios:
            group = sorted((p for p in pairs if p.scenario == sc), key=lambda p: impl_order(p.impl))
            start = rep % len(group)
            order = group[start:] + group[:start]
            progress = []
            for p in order:
                ok = run_pair(p, rounds_for(p), timeout)
                progress.append("%s %s" % (p.impl, fmt_ns(p.samples[-1]) if ok else "FAILED"))
            log("[%d/%d] %-36s %s" % (rep + 1, repeat, sc, "  ".join(progress)))
            # The waits runs, after the timed ones, in the same order.
            waited = []
            for p in order:
                if not p.times_waits:
                    continue
                ok = run_waits(p, rounds_for(p), timeout)
                waited.append("%s %s" % (p.impl, fmt_ns(p.waits[-1]["max_ns"]) if ok
                                         else "FAILED"))
            if waited:
                log("[%d/%d] %-36s max wait: %s" % (rep + 1, repeat, sc, "  ".join(waited)))

    # After the timed repetitions, so that callgrind never runs beside them.
    if count_instructions:
        measure_all_instructions(pairs, instr_rounds_for, False)

    failed = [p for p in pairs if p.errors]
    report = summarize(pairs, unsupported, scenarios)
    elapsed = time.monotonic() - started

    if args.smoke:
        for p in pairs:
            st = p.stats()
            if st:
                print("RESULT %s %s %s allocs_per_round=%s" % (
                    p.scenario, p.impl, fmt_result_ns(st["median"]), fmt_allocs(st["allocs"])))
        print_waits_lines(report)
        print_instruction_lines(report)
        for p in failed:
            print("FAILED %s %s: %s" % (p.scenario, p.impl, "; ".join(p.errors)))
        contention = [p for p in pairs if p.times_waits]
        print("bench smoke: %d of %d pairs printed their RESULT line, %d of %d contention "
              "and probe pairs their WAITS line, %d of %d single-thread pairs their instruction count "
              "(%.0f s)"
              % (sum(bool(p.samples) for p in pairs), len(pairs),
                 sum(bool(p.waits) for p in contention), len(contention),
                 sum(p.instructions is not None for p in instruction_pairs(pairs)),
                 len(instruction_pairs(pairs)), elapsed))
        return 1 if failed else 0

    info = machine_info()
    table = io.StringIO()
    with contextlib.redirect_stdout(table):
        print("syncband benchmarks: %s run, %d repetition(s), %s, %s cores, Linux %s"
              % (mode_name, repeat, info["cpu"] or info["machine"], info["cores"],
                 info["kernel"]))
        print("ratio = median / syncband's median (above 1: syncband is faster); "
              "rank 1 = fastest; targets from bench/targets.toml")
        print()
        print_table(report)
        print_side_waits(report)
        print_delivered(report)
        if unsupported:
            print()
            for (sc, impl, why) in unsupported:
                print("UNSUPPORTED %s %s %s" % (sc, impl, why))
    print()
    sys.stdout.write(table.getvalue())
    print()
    for sc in report:
        for e in sc["rows"]:
            if "median" in e:
                print("RESULT %s %s %s allocs_per_round=%s" % (
                    sc["scenario"], e["impl"], fmt_result_ns(e["median"]),
                    fmt_allocs(e["allocs"])))
    print_waits_lines(report)
    print_instruction_lines(report)

    verdicts = [t for sc in report for e in sc["rows"] for t in e.get("targets", [])]
    missed = sum(t["status"] == "MISS" for t in verdicts)
    passed = sum(t["status"] == "pass" for t in verdicts)

    os.makedirs(args.out, exist_ok=True)
    doc = {
        "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "mode": mode_name, "repetitions": repeat, "machine": info,
        "wall_seconds": round(elapsed, 1),
        "targets": {"pass": passed, "miss": missed},
        "instructions": INSTRUCTIONS_METHOD if count_instructions else None,
        "contention": CONTENTION_METHOD,
        "scenarios": report,
    }
    json_path = os.path.join(args.out, "results.json")
    with open(json_path, "w") as f:
        json.dump(doc, f, indent=1)
    svg_path = os.path.join(args.out, "results.svg")
    svg_chart(report, svg_path, "syncband vs peers - %s, %s cores (%s run)"
              % (info["cpu"] or info["machine"], info["cores"], mode_name))
    print()
    print("targets: %d pass, %d missed" % (passed, missed))
    print("wrote %s and %s (%.0f s)" % (json_path, svg_path, elapsed))
    if args.publish and mode_name == "full" and not args.filters and not failed:
        os.makedirs(args.publish, exist_ok=True)
        with open(os.path.join(args.publish, "latest.json"), "w") as f:
            json.dump(doc, f, indent=1)
        with open(os.path.join(args.publish, "latest.txt"), "w") as f:
            f.write(table.getvalue())
            f.write("\ntargets: %d pass, %d missed\n" % (passed, missed))
        best_peer_chart(report, os.path.join(args.publish, "latest.svg"),
                        "best peer vs syncband - %s, %s cores, %s, %d repetitions"
                        % (info["cpu"] or info["machine"], info["cores"],
                           doc["generated"][:10], repeat))
        print("published %s/latest.{json,txt,svg}" % args.publish)
    if failed:
        for p in failed:
            print("FAILED %s %s: %s" % (p.scenario, p.impl, "; ".join(p.errors)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
