#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpus of the model-based fuzzers: tests/fuzz/corpus/<target>/.

    python3 tests/fuzz/make_seeds.py

Each seed is a short hand-made scenario in the fuzzers' input encoding: header
byte(s), then operations, each an opcode byte followed by its argument bytes.
The opcode bytes are read from the `enum { OP_... }` and `ops[]` tables of
each fuzz_<target>.c, so the seeds follow the fuzzers if the tables change.
The model in the fuzzer decides what every call must return; the seeds only
steer it to interesting states quickly.  Seeds named repro-* reproduce a
library defect the fuzzer found (see the comment beside each).
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def opcodes(target):
    """{'INIT': byte, ...} for fuzz_<target>.c: the first index of each op in ops[]."""
    text = open(os.path.join(HERE, f"fuzz_{target}.c")).read()
    shared = open(os.path.join(HERE, "fuzz_lifecycle.h")).read()
    names = []
    # fuzz_lifecycle.h's shared operations (OP_POLL...), then the driver's own
    # (its enum starts at FZ_OP_FIRST_OWN).
    for source, first in ((shared, "OP_POLL"), (text, "OP_INIT")):
        enum = re.search(r"enum\s*{\s*(" + first + r"[^}]*)}", source)
        names += [n.split("=")[0].strip() for n in enum.group(1).split(",")
                  if n.strip().startswith("OP_")]
    table = re.search(r"static const uint8_t ops\[(\d+)\]\s*=\s*{([^}]*)}", text)
    entries = [e.strip() for e in table.group(2).split(",") if e.strip()]
    assert len(entries) == int(table.group(1)), target
    codes = {}
    for name in names:
        assert name in entries, f"{target}: {name} missing from ops[]"
        codes[name[3:]] = entries.index(name)
    return codes


# fz_waker_choice(): byte % 5
OWN_A, OWN_B, SHARED1_A, SHARED2_A, SHARED1_B = range(5)
FREE = 0x80  # cancel argument: free the future afterwards

# fuzz_semaphore.c permit_value(): bytes >= 192 pick a special value.
SPECIAL = {"8": 192, "3": 193, "100": 194, "MAX/2": 195, "MAX/2+1": 196, "MAX-1": 197,
           "MAX": 198, "MAX+1": 199, "SIZE_MAX": 200, "SIZE_MAX>>1": 201, "MAX-7": 202,
           "1<<20": 203, "MAX/3": 204}


def P(n):
    """The byte for a permit count: 0..7 directly, else a special value by name."""
    if isinstance(n, int) and 0 <= n < 8:
        return n
    return SPECIAL[str(n)]


def encode(target, header, ops):
    codes = opcodes(target)
    out = bytearray(header)
    for op in ops:
        name, *args = op
        out.append(codes[name])
        out.extend(args)
    return bytes(out)


def semaphore_seeds():
    return {
        # A first waiter takes a partial grant; cancelling it passes the
        # permits on to the next waiter in FIFO order, the rest to the counter.
        "partial-grant-cancel": ([0, P(2)], [
            ("INIT", 0, P(5)), ("POLL", 0, OWN_A), ("INIT", 1, P(1)), ("POLL", 1, SHARED1_A),
            ("RELEASE", P(1)), ("TRY", P(1)), ("CANCEL", 0), ("POLL", 1, OWN_A),
            ("TRY", P(2)), ("POLL", 0, OWN_A)]),
        # close() completes every waiter with -ESHUTDOWN and returns their
        # partial grants; release still works, acquires fail.
        "close-with-waiters": ([1, P(1)], [
            ("INIT", 0, P(3)), ("POLL", 0, OWN_A), ("INIT", 1, P(1)), ("POLL", 1, OWN_B),
            ("RELEASE", P(1)), ("CLOSE",), ("POLL", 0, OWN_A), ("POLL", 1, OWN_A),
            ("TRY", P(1)), ("TRY", P(0)), ("RELEASE", P(2)), ("CLOSE",),
            ("INIT", 2, P(0)), ("POLL", 2, OWN_A)]),
        # Bad arguments: oversize counts, release overflow, acquire(0).
        "bad-arguments": ([0, P(0)], [
            ("TRY", P("MAX+1")), ("RELEASE", P("SIZE_MAX")), ("RELEASE", P("MAX")),
            ("RELEASE", P(1)), ("TRY", P("MAX")), ("RELEASE", P("MAX-1")),
            ("INIT", 0, P("SIZE_MAX")), ("POLL", 0, OWN_A), ("POLL", 0, OWN_A),
            ("INIT", 1, P(0)), ("POLL", 1, OWN_A), ("CANCEL", 1), ("CANCEL", 1)]),
        # destroy() while waited on is refused and changes nothing.
        "destroy-while-waited-on": ([0, P(0)], [
            ("INIT", 0, P(1)), ("POLL", 0, OWN_A), ("DESTROY", P(3)), ("RELEASE", P(1)),
            ("DESTROY", P(3)), ("POLL", 0, OWN_A), ("DESTROY", P(4)), ("TRY", P(4))]),
        # Waker replacement, cancel twice, poll after cancel.
        "waker-replacement": ([0, P(0)], [
            ("INIT", 0, P(2)), ("POLL", 0, OWN_A), ("POLL", 0, OWN_A), ("POLL", 0, OWN_B),
            ("POLL", 0, SHARED1_A), ("POLL", 0, SHARED1_B), ("POLL", 0, SHARED2_A),
            ("CANCEL", 0), ("CANCEL", 0), ("POLL", 0, OWN_A), ("CANCEL", 0 | FREE)]),
        # More waiters than one wake batch; release wakes them all.
        "crowd": ([0, P(0)], [
            ("CROWD", 33, P(1), SHARED1_A), ("RELEASE", P(8)), ("RELEASE", P("100")),
            ("POLL_ALL", OWN_A), ("CROWD", 33, P(2), OWN_A), ("CLOSE",),
            ("CANCEL_CROWD", 1)]),
        # Defect: two granted-but-unobserved futures cancelled while the
        # counter is near the maximum: the count field wraps (permits lost).
        "repro-count-wraps-on-cancel": ([0, P(0)], [
            ("INIT", 0, P("MAX")), ("POLL", 0, OWN_A), ("INIT", 1, P("MAX")),
            ("POLL", 1, OWN_A), ("RELEASE", P("MAX")), ("RELEASE", P("MAX")),
            ("RELEASE", P("MAX")), ("CANCEL", 0), ("CANCEL", 1)]),
    }


def mutex_seeds():
    return {
        # FIFO handoff; cancelling a future that was handed the mutex passes it on.
        "handoff-cancel": ([0], [
            ("TRY",), ("INIT", 0), ("POLL", 0, OWN_A), ("INIT", 1), ("POLL", 1, SHARED1_A),
            ("TRY",), ("UNLOCK",), ("CANCEL", 0), ("POLL", 1, OWN_A), ("UNLOCK",),
            ("UNLOCK",)]),
        # destroy() while locked / waited on is refused; unlock of an
        # unlocked mutex is -EPERM.
        "destroy-busy": ([1], [
            ("UNLOCK",), ("TRY",), ("DESTROY", 0), ("INIT", 0), ("POLL", 0, OWN_A),
            ("DESTROY", 1), ("UNLOCK",), ("DESTROY", 0), ("POLL", 0, OWN_A), ("UNLOCK",),
            ("DESTROY", 1), ("TRY",)]),
        "waker-replacement": ([0], [
            ("TRY",), ("INIT", 0), ("POLL", 0, OWN_A), ("POLL", 0, OWN_B),
            ("POLL", 0, SHARED2_A), ("POLL", 0, SHARED2_A), ("CANCEL", 0), ("CANCEL", 0),
            ("POLL", 0, OWN_A), ("UNLOCK",)]),
        "crowd": ([0], [
            ("TRY",), ("CROWD", 33, SHARED1_A), ("UNLOCK",), ("CANCEL_CROWD", 3),
            ("CROWD", 20, OWN_A), ("UNLOCK",), ("POLL_ALL", OWN_B), ("UNLOCK",)]),
        # Eventually fair: a barger passes two waiters past the bound, a
        # handoff phase serves both while a third queues, and bargers pass
        # the third for half a bound after the phase's last handoff.
        "phase-newcomer": ([0], [
            ("TRY",), ("INIT", 0), ("POLL", 0, OWN_A), ("INIT", 1), ("POLL", 1, OWN_B),
            ("UNLOCK",), ("TRY",), ("POLL", 0, OWN_A), ("TIME", 0), ("UNLOCK",),
            ("INIT", 2), ("POLL", 2, SHARED1_A), ("POLL", 0, OWN_A), ("UNLOCK",),
            ("POLL", 1, OWN_B), ("UNLOCK",), ("TRY",), ("TIME", 250), ("TIME", 250),
            ("UNLOCK",), ("TRY",), ("TIME", 1), ("UNLOCK",), ("TRY",), ("UNLOCK",),
            ("POLL", 2, SHARED1_A), ("UNLOCK",)]),
    }


def condvar_seeds():
    LOCK = 0x30  # init argument: a mutex lock future instead of a wait
    return {
        # wait: registers, unlocks; notified, re-acquires the mutex in FIFO order.
        "wait-notify": ([0], [
            ("TRY_LOCK",), ("INIT", 0), ("POLL", 0, OWN_A), ("TRY_LOCK",), ("NOTIFY_ONE",),
            ("POLL", 0, OWN_A), ("UNLOCK",), ("POLL", 0, OWN_B), ("UNLOCK",)]),
        # notify_one's target is cancelled: the notification passes on.
        "notify-one-cancel-passes-on": ([3], [
            ("TRY_LOCK",), ("INIT", 0), ("POLL", 0, OWN_A), ("TRY_LOCK",), ("INIT", 1),
            ("POLL", 1, SHARED1_A), ("NOTIFY_ONE",), ("TRY_LOCK",), ("CANCEL", 0), ("POLL", 1, OWN_A),
            ("UNLOCK",), ("POLL", 1, OWN_A), ("UNLOCK",)]),
        # A notified wait queues behind a lock future; the lock future,
        # handed the mutex, is cancelled and passes it on.
        "mutex-queue-mix": ([0], [
            ("TRY_LOCK",), ("INIT", 0), ("POLL", 0, OWN_A), ("TRY_LOCK",),
            ("INIT", 1 | LOCK), ("POLL", 1, OWN_A), ("NOTIFY_ALL",), ("POLL", 0, SHARED2_A),
            ("UNLOCK",), ("CANCEL", 1), ("POLL", 0, OWN_A), ("UNLOCK",)]),
        "destroy-while-registered": ([0], [
            ("TRY_LOCK",), ("INIT", 0), ("POLL", 0, OWN_A), ("DESTROY", 0),
            ("NOTIFY_ALL",), ("DESTROY", 0), ("POLL", 0, OWN_A), ("UNLOCK",),
            ("DESTROY", 1)]),
        "crowd-notify-all": ([0], [
            ("CROWD", 33, 0, SHARED1_A), ("NOTIFY_ALL",), ("POLL_ALL", OWN_A),
            ("UNLOCK",), ("POLL_ALL", OWN_A), ("CANCEL_CROWD", 1)]),
        # Defect: a wait whose first poll returned -EPERM (mutex not locked)
        # is not left done: polled again it registers and unlocks the mutex,
        # and its cancel unlocks a mutex that someone else now holds.
        "repro-eperm-wait-not-done": ([0], [
            ("INIT", 0), ("POLL", 0, OWN_A), ("TRY_LOCK",), ("CANCEL", 0), ("UNLOCK",)]),
    }


def event_seeds():
    return {
        # set(); reset(); before the first poll is not owed to the wait; a
        # released wait stays ready after reset().
        "set-reset-before-poll": ([0], [
            ("INIT", 0), ("SET",), ("RESET",), ("POLL", 0, OWN_A), ("TRY",), ("SET",),
            ("RESET",), ("POLL", 0, OWN_B), ("TRY",), ("CANCEL", 0), ("POLL", 0, OWN_A)]),
        "destroy-while-registered": ([2], [
            ("INIT", 0), ("POLL", 0, OWN_A), ("DESTROY", 0), ("CANCEL", 0), ("DESTROY", 1),
            ("INIT", 1), ("POLL", 1, OWN_A)]),
        "crowd": ([0], [
            ("CROWD", 33, SHARED1_A), ("SET",), ("SET",), ("RESET",), ("CROWD", 10, OWN_A),
            ("POLL_ALL", OWN_B), ("CANCEL_CROWD", 2), ("SET",)]),
        "waker-replacement": ([0], [
            ("INIT", 0), ("POLL", 0, OWN_A), ("POLL", 0, SHARED1_B), ("POLL", 0, SHARED1_A),
            ("POLL", 0, SHARED1_A), ("SET",), ("POLL", 0, OWN_A)]),
    }


def auto_event_seeds():
    return {
        # Repeated sets coalesce into one stored signal.
        "coalesce": ([0], [("SET",), ("SET",), ("TRY",), ("TRY",), ("INIT", 0),
                           ("POLL", 0, OWN_A), ("SET",), ("SET",), ("POLL", 0, OWN_A),
                           ("TRY",)]),
        # A wait handed the signal and cancelled passes it to the next wait,
        # or stores it again.
        "cancel-passes-signal": ([0], [
            ("INIT", 0), ("POLL", 0, OWN_A), ("INIT", 1), ("POLL", 1, SHARED1_A),
            ("SET",), ("TRY",), ("CANCEL", 0), ("POLL", 1, OWN_A), ("INIT", 2),
            ("POLL", 2, OWN_A), ("SET",), ("CANCEL", 2), ("TRY",)]),
        "destroy-while-registered": ([3], [
            ("TRY",), ("INIT", 0), ("POLL", 0, OWN_A), ("DESTROY", 0), ("SET",),
            ("DESTROY", 2), ("INIT", 0), ("POLL", 0, OWN_A)]),
        "crowd": ([0], [
            ("CROWD", 33, SHARED2_A), ("SET",), ("SET",), ("CANCEL_CROWD", 0),
            ("POLL_ALL", OWN_A), ("TRY",)]),
    }


def barrier_seeds():
    # header byte: parties = (1, 2, 3, 4, 5, 8, 40, 0)[b % 8]; b & 8: SB_BARRIER_INIT
    TWO, THREE, FORTY, ZERO = 1, 2, 6, 7
    return {
        # Generations back to back: the leader arrives again before the
        # other party observed its release, and belongs to the next one.
        "generations-back-to-back": ([TWO], [
            ("INIT", 0), ("POLL", 0, OWN_A), ("INIT", 1), ("POLL", 1, OWN_A),
            ("INIT", 1), ("POLL", 1, SHARED1_A), ("POLL", 0, OWN_A), ("INIT", 0),
            ("POLL", 0, OWN_B), ("POLL", 1, OWN_A), ("POLL", 0, OWN_A)]),
        # A waiting party cancelled withdraws its arrival; one cancelled
        # after its generation completed changes nothing.
        "cancel-withdraws-or-keeps": ([THREE], [
            ("INIT", 0), ("POLL", 0, OWN_A), ("INIT", 1), ("POLL", 1, OWN_A),
            ("CANCEL", 0), ("INIT", 2), ("POLL", 2, SHARED2_A), ("INIT", 3),
            ("POLL", 3, OWN_A), ("CANCEL", 1), ("POLL", 2, OWN_A), ("POLL", 1, OWN_A),
            ("INIT", 4), ("POLL", 4, OWN_A), ("CANCEL", 4 | FREE)]),
        # A generation of 40, past a wake batch, completed by the crowd and
        # the slots; the blocking wait leads or withdraws.
        "wide-generation": ([FORTY], [
            ("CROWD", 33, SHARED1_A), ("BLOCKING",), ("INIT", 0), ("POLL", 0, OWN_A),
            ("CANCEL_CROWD", 2), ("CROWD", 33, OWN_A), ("INIT", 1), ("POLL", 1, OWN_A),
            ("INIT", 2), ("POLL", 2, OWN_A), ("INIT", 3), ("POLL", 3, OWN_A),
            ("INIT", 4), ("POLL", 4, OWN_A), ("INIT", 5), ("POLL", 5, OWN_A),
            ("BLOCKING",), ("POLL_ALL", OWN_B)]),
        # destroy() while waited on is refused; a barrier of 0 parties
        # refuses every wait.
        "destroy-and-zero-parties": ([TWO | 8], [
            ("INIT", 0), ("POLL", 0, OWN_A), ("DESTROY", ZERO), ("BLOCKING",),
            ("POLL", 0, OWN_A), ("DESTROY", ZERO | 8), ("INIT", 1), ("POLL", 1, OWN_A),
            ("BLOCKING",), ("DESTROY", 0), ("BLOCKING",), ("INIT", 2), ("POLL", 2, OWN_A)]),
        "waker-replacement": ([THREE], [
            ("INIT", 0), ("POLL", 0, OWN_A), ("POLL", 0, OWN_B), ("POLL", 0, SHARED1_A),
            ("POLL", 0, SHARED1_B), ("INIT", 1), ("POLL", 1, SHARED1_A), ("BLOCKING",),
            ("POLL", 0, OWN_A), ("POLL", 1, OWN_A)]),
    }


def once_seeds():
    return {
        # The first poll runs it; failure hands the job to the oldest waiter,
        # whose next poll runs it; success completes the rest.
        "fail-hands-on-then-success": ([0], [
            ("INIT", 0), ("POLL", 0, OWN_A), ("INIT", 1), ("POLL", 1, SHARED1_A),
            ("INIT", 2), ("POLL", 2, OWN_B), ("TRY",), ("FAIL",), ("POLL", 2, OWN_A),
            ("POLL", 1, OWN_A), ("COMPLETE",), ("POLL", 2, OWN_A), ("COMPLETE",),
            ("INIT", 3), ("POLL", 3, OWN_A)]),
        # A waiter handed the job and cancelled before observing it passes it
        # on; the runner's own cancel before reporting is a failure.
        "cancel-passes-the-job-on": ([1], [
            ("INIT", 0), ("POLL", 0, OWN_A), ("INIT", 1), ("POLL", 1, OWN_A),
            ("INIT", 2), ("POLL", 2, SHARED2_A), ("FAIL",), ("CANCEL", 1),
            ("POLL", 2, OWN_A), ("INIT", 3), ("POLL", 3, OWN_A), ("CANCEL", 2),
            ("POLL", 3, OWN_A), ("FAIL",), ("TRY",)]),
        # A late cancel of a former runner must not fail a later runner.
        "late-runner-cancel": ([0], [
            ("INIT", 0), ("POLL", 0, OWN_A), ("FAIL",), ("TRY",), ("INIT", 1),
            ("POLL", 1, OWN_A), ("CANCEL", 0), ("FAIL",), ("CANCEL", 0 | FREE),
            ("POLL", 1, OWN_A), ("COMPLETE",)]),
        # Refusals: destroy while run or waited on, reports without a runner,
        # blocking waits that run, time out and see it done.
        "destroy-busy-and-blocking": ([0], [
            ("COMPLETE",), ("FAIL",), ("BLOCKING",), ("DESTROY", 0), ("BLOCKING",),
            ("INIT", 0), ("POLL", 0, OWN_A), ("DESTROY", 1), ("FAIL",),
            ("POLL", 0, OWN_B), ("FAIL",), ("DESTROY", 1), ("TRY",), ("COMPLETE",),
            ("BLOCKING",), ("DESTROY", 0)]),
        # More waiters than one wake batch, released by one success.
        "crowd": ([0], [
            ("TRY",), ("CROWD", 33, SHARED1_A), ("FAIL",), ("CANCEL_CROWD", 0),
            ("CROWD", 20, OWN_A), ("FAIL",), ("POLL_ALL", OWN_B), ("COMPLETE",),
            ("POLL_ALL", OWN_A)]),
    }


def rwlock_seeds():
    # init argument: slot | kind << 3, kind 0..3 = read, write, upgradable, upgrade
    READ, WRITE, UPGRADABLE, UPGRADE = 0, 1 << 3, 2 << 3, 3 << 3
    # try argument: 0..3 = read, write, upgradable, upgrade
    T_READ, T_WRITE, T_UPGRADABLE, T_UPGRADE = 0, 1, 2, 3
    return {
        # A writer queues behind readers; readers behind it wait for it; a
        # granted writer cancelled passes the lock to the readers behind.
        "phases-cancel-granted-writer": ([0], [
            ("TRY", T_READ), ("INIT", 0 | WRITE), ("POLL", 0, OWN_A), ("INIT", 1 | READ),
            ("POLL", 1, SHARED1_A), ("INIT", 2 | READ), ("POLL", 2, OWN_B), ("TRY", T_READ),
            ("READ_UNLOCK",), ("CANCEL", 0), ("POLL", 1, OWN_A), ("POLL", 2, OWN_A),
            ("READ_UNLOCK",), ("READ_UNLOCK",)]),
        # downgrade lets in the readers queued up to the next writer.
        "downgrade": ([1], [
            ("TRY", T_WRITE), ("INIT", 0 | READ), ("POLL", 0, OWN_A), ("INIT", 1 | WRITE),
            ("POLL", 1, OWN_A), ("INIT", 2 | READ), ("POLL", 2, OWN_A), ("DOWNGRADE",),
            ("POLL", 0, OWN_A), ("READ_UNLOCK",), ("READ_UNLOCK",), ("POLL", 1, OWN_A),
            ("WRITE_UNLOCK",), ("POLL", 2, OWN_A)]),
        # The upgradable read beside readers; its upgrade waits for them and
        # goes ahead of a queued writer; a granted upgrade cancelled gives
        # back the upgradable read.
        "upgrade": ([0], [
            ("TRY", T_READ), ("INIT", 0 | UPGRADABLE), ("POLL", 0, OWN_A), ("TRY", T_READ),
            ("INIT", 1 | WRITE), ("POLL", 1, OWN_A), ("INIT", 2 | UPGRADE), ("POLL", 2, OWN_B),
            ("TRY", T_UPGRADE), ("UPGRADABLE_UNLOCK",), ("READ_UNLOCK",), ("READ_UNLOCK",),
            ("CANCEL", 2), ("INIT", 3 | UPGRADE), ("POLL", 3, OWN_A), ("UPGRADABLE_UNLOCK",),
            ("POLL", 1, OWN_A), ("WRITE_UNLOCK",)]),
        "destroy-busy": ([1], [
            ("READ_UNLOCK",), ("WRITE_UNLOCK",), ("TRY", T_UPGRADE), ("TRY", T_UPGRADABLE),
            ("DESTROY", 0), ("UPGRADABLE_UNLOCK",), ("INIT", 0 | WRITE), ("POLL", 0, OWN_A),
            ("DESTROY", 1), ("WRITE_UNLOCK",), ("POLL", 0, OWN_A), ("WRITE_UNLOCK",),
            ("DESTROY", 1), ("TRY", T_WRITE)]),
        # A run of readers longer than a wake batch, behind a writer.
        "crowd": ([0], [
            ("TRY", T_WRITE), ("CROWD", 33, SHARED1_A), ("INIT", 0 | WRITE), ("POLL", 0, OWN_A),
            ("WRITE_UNLOCK",), ("CANCEL_CROWD", 3), ("CROWD", 0x40 | 20, OWN_A),
            ("POLL", 0, OWN_A), ("WRITE_UNLOCK",), ("POLL_ALL", OWN_B), ("CANCEL_CROWD", 0)]),
    }


# fuzz_latch.c amount(): 0..7 directly; bytes >= 192 pick by byte % 10.
LATCH = {"MAX": 200, "MAX-1": 201, "SIZE_MAX": 192, "MAX/2+1": 193, "COUNT": 194,
         "COUNT+1": 195, "100": 196, "MAX-COUNT": 197, "MAX-COUNT+1": 198, "33": 199}


def L(n):
    """The byte for a latch count or amount: 0..7 directly, else a special value by name."""
    if isinstance(n, int) and 0 <= n < 8:
        return n
    return LATCH[str(n)]


def latch_seeds():
    return {
        # A wait group reused: add before the work, count_down after it; an
        # add on the open latch closes it again for later waits.
        "wait-group-reuse": ([0, L(0)], [
            ("ADD", L(2)), ("INIT", 0), ("POLL", 0, OWN_A), ("COUNT_DOWN", L(1)),
            ("POLL", 0, OWN_A), ("COUNT_DOWN", L(1)), ("POLL", 0, OWN_A), ("ADD", L(1)),
            ("INIT", 1), ("POLL", 1, SHARED1_A), ("TRY",), ("COUNT_DOWN", L(1)),
            ("POLL", 1, SHARED1_A), ("POLL", 0, OWN_B)]),
        # init past the maximum, count_down past the count, add past the
        # maximum: refused, nothing changed; exactly up to it and back.
        "bad-arguments": ([0, L("SIZE_MAX")], [
            ("COUNT_DOWN", L("COUNT+1")), ("COUNT_DOWN", L("SIZE_MAX")), ("ADD", L("MAX")),
            ("ADD", L("MAX-COUNT+1")), ("ADD", L("MAX-COUNT")), ("ADD", L(1)),
            ("COUNT_DOWN", L("MAX")), ("TRY",), ("COUNT_DOWN", L(0)), ("ADD", L(0)),
            ("COUNT_DOWN", L(1))]),
        "destroy-while-registered": ([1, L(1)], [
            ("INIT", 0), ("POLL", 0, OWN_A), ("DESTROY", 0, L(0)), ("BLOCKING",),
            ("COUNT_DOWN", L(1)), ("DESTROY", 1, L(3)), ("INIT", 1), ("POLL", 1, OWN_A),
            ("BLOCKING",), ("DESTROY", 0, L("SIZE_MAX"))]),
        # More waits than one wake batch, some cancelled, the latch reopened.
        "crowd": ([0, L(2)], [
            ("CROWD", 33, SHARED1_A), ("COUNT_DOWN", L(1)), ("CANCEL_CROWD", 2),
            ("CROWD", 33, OWN_A), ("COUNT_DOWN", L(1)), ("POLL_ALL", OWN_B), ("ADD", L(3)),
            ("CROWD", 10, OWN_A), ("COUNT_DOWN", L("COUNT"))]),
        # A released wait cancelled before its poll passes nothing on.
        "cancel-after-release": ([0, L(1)], [
            ("INIT", 0), ("POLL", 0, OWN_A), ("INIT", 1), ("POLL", 1, SHARED1_A),
            ("COUNT_DOWN", L(1)), ("CANCEL", 0), ("POLL", 1, OWN_A), ("POLL", 0, OWN_A),
            ("CANCEL", 1 | FREE)]),
        "waker-replacement": ([0, L(1)], [
            ("INIT", 0), ("POLL", 0, OWN_A), ("POLL", 0, OWN_B), ("POLL", 0, SHARED1_B),
            ("POLL", 0, SHARED1_A), ("POLL", 0, SHARED1_A), ("COUNT_DOWN", L(1)),
            ("POLL", 0, OWN_A)]),
    }


def main():
    seeds = {
        "semaphore": semaphore_seeds(),
        "mutex": mutex_seeds(),
        "condvar": condvar_seeds(),
        "event": event_seeds(),
        "auto_event": auto_event_seeds(),
        "barrier": barrier_seeds(),
        "once": once_seeds(),
        "rwlock": rwlock_seeds(),
        "latch": latch_seeds(),
    }
    for target, table in seeds.items():
        d = os.path.join(HERE, "corpus", target)
        os.makedirs(d, exist_ok=True)
        for old in os.listdir(d):
            os.remove(os.path.join(d, old))
        for name, (header, ops) in table.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(encode(target, header, ops))
        print(f"{target}: {len(table)} seeds in {os.path.relpath(d)}", file=sys.stderr)


if __name__ == "__main__":
    main()
