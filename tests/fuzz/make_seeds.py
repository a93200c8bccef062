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
        # Strict FIFO (header bit 1): the partial grant passes on in order.
        "fifo-partial-grant-cancel": ([2, P(2)], [
            ("INIT", 0, P(5)), ("POLL", 0, OWN_A), ("INIT", 1, P(1)), ("POLL", 1, SHARED1_A),
            ("RELEASE", P(1)), ("TRY", P(1)), ("CANCEL", 0), ("POLL", 1, OWN_A),
            ("TRY", P(2)), ("POLL", 0, OWN_A)]),
        # Eventually fair: a 3-permit head passed by 1-permit bargers, then
        # past the bound (TIME 0): releases gather for it in a phase.
        "fair-phase-multi-permit": ([0, P(0)], [
            ("INIT", 0, P(3)), ("POLL", 0, OWN_A), ("INIT", 1, P(1)), ("POLL", 1, OWN_B),
            ("RELEASE", P(1)), ("TRY", P(1)), ("TIME", 0), ("RELEASE", P(1)),
            ("TRY", P(1)), ("RELEASE", P(2)),
            ("POLL", 0, OWN_A), ("RELEASE", P(1)), ("POLL", 1, OWN_B), ("CANCEL", 0)]),
        # Eventually fair: a woken head loses to a barger, is woken again.
        "fair-woken-head": ([0, P(0)], [
            ("INIT", 0, P(1)), ("POLL", 0, OWN_A), ("INIT", 1, P(1)), ("POLL", 1, OWN_B),
            ("RELEASE", P(1)), ("TRY", P(1)), ("POLL", 0, OWN_B), ("RELEASE", P(1)),
            ("CANCEL", 0), ("POLL", 1, OWN_B), ("CLOSE",)]),
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


def channel_seeds():
    # header: [b0, capacity]: b0 & 1 SB_CHANNEL_INIT, b0 & 2 NULL storage
    # (capacity 0), (b0 >> 2) & 3 the item size: 8, 16, 12, 40 bytes.
    # INIT argument: slot | SEND, then a byte: a receive's size (0: recv_init
    # of 1; 1..4: recv_many of 2..5; 5: recv_many of 1; 250..254: n = 0,
    # INT_MAX, INT_MAX + 1, SIZE_MAX, NULL items), ignored by a send but 255
    # (a NULL item).  CROWD's value: v & 1 sends, else receives of
    # 1 + (v >> 1) % 4.  SEND_MANY: 0..6 items, 248..255: 33..47.  RECV_MANY:
    # 1..6 items, 250..255: INT_MAX.  BAD: 0..12 argument errors, 0x80 | i
    # init()'s cases.
    SEND = 8
    I12, I40 = 2 << 2, 3 << 2
    return {
        # A waiting receiver is handed the item directly; senders wait while
        # the ring is full and move into it, oldest first, as slots free.
        "handoff-and-refill": ([0, 2], [
            ("INIT", 0, 0), ("POLL", 0, OWN_A), ("TRY_SEND",), ("POLL", 0, OWN_A),
            ("TRY_SEND",), ("TRY_SEND",), ("TRY_SEND",), ("INIT", 1 | SEND, 0),
            ("POLL", 1, OWN_A), ("INIT", 2 | SEND, 0), ("POLL", 2, SHARED1_A), ("TRY_RECV",),
            ("POLL", 1, OWN_A), ("RECV_MANY", 4), ("POLL", 2, OWN_B), ("TRY_RECV",)]),
        # Capacity 0: sends wait for a receiver, which takes straight from
        # the oldest; a batch fills a waiting receive of many.
        "rendezvous": ([2, 0], [
            ("TRY_SEND",), ("FORCE",), ("INIT", 0 | SEND, 0), ("POLL", 0, OWN_A),
            ("INIT", 1 | SEND, 0), ("POLL", 1, OWN_B), ("TRY_RECV",), ("RECV_MANY", 2),
            ("POLL", 0, OWN_A), ("POLL", 1, OWN_A), ("INIT", 2, 2), ("POLL", 2, OWN_A),
            ("INIT", 3, 0), ("POLL", 3, SHARED2_A), ("SEND_MANY", 5), ("POLL", 2, OWN_A),
            ("POLL", 3, OWN_A), ("INIT", 4, 0), ("POLL", 4, OWN_A), ("FORCE",), ("TRY_RECV",)]),
        # close(): waiting senders get -EPIPE, the ring drains in order,
        # then -EPIPE; close again changes nothing.
        "close-and-drain": ([I12, 3], [
            ("TRY_SEND",), ("SEND_MANY", 2), ("INIT", 0 | SEND, 0), ("POLL", 0, OWN_A),
            ("CLOSE",), ("POLL", 0, OWN_A), ("TRY_RECV",), ("INIT", 1, 4), ("POLL", 1, OWN_A),
            ("TRY_RECV",), ("CLOSE",), ("TRY_SEND",), ("FORCE",), ("INIT", 2, 0),
            ("POLL", 2, OWN_A), ("BLOCKING", 1), ("BLOCKING", 0), ("CANCEL", 2)]),
        # close() completes waiting receivers with -EPIPE.
        "close-wakes-receivers": ([1, 1], [
            ("INIT", 0, 0), ("POLL", 0, OWN_A), ("INIT", 1, 3), ("POLL", 1, SHARED1_A),
            ("CLOSE",), ("CANCEL", 0), ("POLL", 1, OWN_A), ("POLL", 0, OWN_A)]),
        # cancel after completion reports it (0, the items are the caller's);
        # before, -ECANCELED; a poll after cancel says the same.
        "cancel-reports-completion": ([0, 1], [
            ("INIT", 0, 1), ("POLL", 0, OWN_A), ("SEND_MANY", 3), ("CANCEL", 0),
            ("POLL", 0, OWN_A), ("INIT", 1 | SEND, 0), ("POLL", 1, OWN_A), ("TRY_RECV",),
            ("CANCEL", 1), ("POLL", 1, OWN_B), ("INIT", 2 | SEND, 0), ("POLL", 2, OWN_A),
            ("CANCEL", 2), ("POLL", 2, OWN_A), ("CANCEL", 2 | FREE), ("TRY_RECV",),
            ("TRY_RECV",), ("INIT", 3, 0), ("CANCEL", 3), ("POLL", 3, OWN_A)]),
        # force_send evicts the oldest while senders wait (they keep their
        # place), and hands off to a waiting receiver.
        "force-send": ([I40, 2], [
            ("TRY_SEND",), ("TRY_SEND",), ("INIT", 0 | SEND, 0), ("POLL", 0, OWN_A),
            ("FORCE",), ("FORCE",), ("RECV_MANY", 1), ("POLL", 0, OWN_A), ("RECV_MANY", 5),
            ("INIT", 1, 0), ("POLL", 1, OWN_A), ("FORCE",), ("POLL", 1, OWN_A)]),
        # More waiters than one wake batch: receivers served by one batch,
        # senders drained by one receive of INT_MAX, close with a crowd.
        "crowd": ([0, 1], [
            ("CROWD", 33, 2, SHARED1_A), ("SEND_MANY", 6), ("SEND_MANY", 6), ("POLL_ALL", OWN_A),
            ("CANCEL_CROWD", 0), ("CROWD", 33, 0, SHARED2_A), ("SEND_MANY", 255),
            ("POLL_ALL", OWN_A), ("CANCEL_CROWD", 1), ("CROWD", 33, 1, OWN_A), ("RECV_MANY", 255),
            ("CROWD", 33, 1, SHARED2_A), ("BLOCKING", 0), ("CLOSE",), ("POLL_ALL", OWN_B),
            ("CANCEL_CROWD", 3)]),
        # destroy() while futures wait is refused; argument errors change
        # nothing; a receive future's edge sizes; init()'s refusals.
        "destroy-busy-and-bad-arguments": ([0, 2], [
            ("INIT", 0 | SEND, 255), ("POLL", 0, OWN_A), ("INIT", 1, 250), ("POLL", 1, OWN_A),
            ("INIT", 2, 252), ("POLL", 2, OWN_A), ("INIT", 3, 254), ("POLL", 3, OWN_A),
            ("CANCEL", 3), ("INIT", 4, 0), ("POLL", 4, OWN_A), ("DESTROY", 0x21),
            ("TRY_SEND",), ("POLL", 4, OWN_A), ("TRY_SEND",), ("BAD", 0), ("BAD", 1),
            ("BAD", 2), ("BAD", 3), ("BAD", 4), ("BAD", 5), ("BAD", 6), ("BAD", 7),
            ("BAD", 8), ("BAD", 9), ("BAD", 10), ("BAD", 11), ("BAD", 12),
            ("BAD", 0x80), ("BAD", 0x81), ("BAD", 0x82), ("BAD", 0x83), ("BAD", 0x84),
            ("BAD", 0x85), ("BAD", 0x86), ("BAD", 0x87), ("BAD", 0x88), ("BAD", 0x89),
            ("BAD", 0x8a), ("BAD", 0x8b), ("DESTROY", 0x03), ("TRY_SEND",), ("TRY_RECV",)]),
        "waker-replacement": ([0, 0], [
            ("INIT", 0, 0), ("POLL", 0, OWN_A), ("POLL", 0, OWN_A), ("POLL", 0, OWN_B),
            ("POLL", 0, SHARED1_A), ("POLL", 0, SHARED1_B), ("POLL", 0, SHARED2_A),
            ("INIT", 1 | SEND, 0), ("POLL", 1, OWN_A), ("POLL", 1, SHARED2_A),
            ("POLL", 1, OWN_B), ("TRY_SEND",), ("POLL", 0, OWN_A)]),
    }


def broadcast_seeds():
    # header: [b0, c]: b0 & 1 SB_BROADCAST_INIT, b0 & 2 back-pressure,
    # (b0 >> 2) & 3 the item size: 8, 16, 12, 40 bytes; capacity 1 + c % 4.
    # INIT arguments: slot | SEND | receiver << 4, then 255 for a NULL item.
    # TRY_RECV, SUBSCRIBE, UNSUBSCRIBE: a receiver 0..7.  CROWD_SUBSCRIPTION:
    # odd subscribes the crowd's receivers, even unsubscribes them.  CROWD's
    # value: v & 1 sends, else receives of each slot's own receiver.
    # BLOCKING: odd a send, even a receive of receiver (a >> 1) % 8.  BAD: 0..6
    # argument errors, 0x80 | i init()'s cases.
    SEND = 8
    BP = 2

    def rx(i):
        return i << 4
    return {
        # Lagging: the sender never waits; a receiver that fell behind gets
        # -EOVERFLOW with the count, then resumes at the oldest item held.
        "lagging-receiver": ([0, 1], [
            ("SUBSCRIBE", 0), ("SUBSCRIBE", 1), ("TRY_SEND",), ("TRY_RECV", 1), ("TRY_SEND",),
            ("TRY_SEND",), ("TRY_SEND",), ("TRY_RECV", 0), ("TRY_RECV", 0), ("TRY_RECV", 0),
            ("INIT", 0 | rx(1), 0), ("POLL", 0, OWN_A), ("TRY_SEND",), ("TRY_SEND",),
            ("TRY_SEND",), ("POLL", 0, OWN_A), ("TRY_RECV", 1), ("TRY_RECV", 1)]),
        # Back-pressure: a send waits for the slowest subscriber; its read,
        # or its unsubscribe, lets the waiting senders in, oldest first.
        "backpressure": ([BP, 0], [
            ("SUBSCRIBE", 0), ("SUBSCRIBE", 1), ("TRY_SEND",), ("TRY_RECV", 1),
            ("INIT", 0 | SEND, 0), ("POLL", 0, OWN_A), ("INIT", 1 | SEND, 0),
            ("POLL", 1, SHARED1_A), ("INIT", 2 | rx(1), 0), ("POLL", 2, OWN_A), ("TRY_SEND",),
            ("TRY_RECV", 0), ("POLL", 0, OWN_A), ("POLL", 2, OWN_A), ("TRY_RECV", 1),
            ("UNSUBSCRIBE", 0), ("POLL", 1, OWN_A), ("TRY_RECV", 1), ("CANCEL", 1)]),
        # close(): waiting senders fail, waiting receives drain then -EPIPE.
        "close-with-waiters": ([BP | 4, 1], [
            ("SUBSCRIBE", 2), ("SUBSCRIBE", 3), ("TRY_SEND",), ("TRY_SEND",), ("TRY_RECV", 3),
            ("TRY_RECV", 3), ("INIT", 0 | SEND, 0), ("POLL", 0, OWN_A),
            ("INIT", 1 | rx(3), 0), ("POLL", 1, OWN_B), ("DESTROY", 0), ("UNSUBSCRIBE", 3),
            ("CLOSE",), ("POLL", 0, OWN_A), ("POLL", 1, OWN_A), ("TRY_RECV", 2),
            ("TRY_RECV", 2), ("TRY_RECV", 2), ("SUBSCRIBE", 4), ("CLOSE",)]),
        # More waiting receives than a wake batch, all released by one send.
        "crowd": ([1, 3], [
            ("CROWD_SUBSCRIPTION", 1), ("CROWD", 33, 0, OWN_A), ("TRY_SEND",),
            ("POLL_ALL", OWN_A), ("CROWD", 33, 0, SHARED1_A), ("CANCEL_CROWD", 1),
            ("CROWD", 33, 0, SHARED2_A), ("TRY_SEND",), ("CANCEL_CROWD", 0),
            ("CROWD", 33, 0, OWN_B), ("CLOSE",), ("POLL_ALL", OWN_A),
            ("CROWD_SUBSCRIPTION", 0)]),
        # Bad arguments and init()'s refusals change nothing.
        "bad-arguments": ([BP, 2], [
            ("SUBSCRIBE", 0), ("SUBSCRIBE", 0), ("UNSUBSCRIBE", 1), ("INIT", 0 | SEND, 255),
            ("POLL", 0, OWN_A), ("INIT", 1, 255), ("POLL", 1, OWN_A), ("INIT", 2 | rx(5), 0),
            ("POLL", 2, OWN_A), ("BAD", 0), ("BAD", 1), ("BAD", 2), ("BAD", 3), ("BAD", 4),
            ("BAD", 5), ("BAD", 6), ("BAD", 0x80), ("BAD", 0x81), ("BAD", 0x82), ("BAD", 0x83),
            ("BAD", 0x84), ("BAD", 0x85), ("BAD", 0x86), ("BAD", 0x87), ("BAD", 0x88),
            ("BAD", 0x89), ("BLOCKING", 0), ("BLOCKING", 1), ("TRY_SEND",), ("BLOCKING", 1),
            ("UNSUBSCRIBE", 0), ("DESTROY", 0x13)]),
    }


def watch_seeds():
    # Slot s watches receiver s % 3; receivers 0 and 1 start subscribed.
    return {
        # A waiting future is woken by a send; the receiver reads the value
        # (marking it seen) and waits again; close ends that wait.
        "send-read-close": ([0], [
            ("INIT", 0), ("POLL", 0, OWN_A), ("SEND", 5), ("POLL", 0, OWN_A),
            ("READ", 0), ("INIT", 0), ("POLL", 0, OWN_B), ("TRY", 0), ("CLOSE",),
            ("POLL", 0, OWN_A), ("TRY", 0x80), ("SEND", 6), ("READ", 1)]),
        # send_if that keeps quiet, then one that tells; a new waker meanwhile.
        "send-if": ([1], [
            ("INIT", 1), ("POLL", 1, OWN_A), ("SEND_IF", 4), ("POLL", 1, SHARED1_B),
            ("SEND_IF", 5), ("POLL", 1, OWN_A), ("READ", 1), ("TRY", 1)]),
        # unsubscribe while a future waits, and after; a receiver never
        # subscribed; destroy while subscribed.
        "unsubscribe-busy": ([0], [
            ("INIT", 0), ("POLL", 0, OWN_A), ("SUBSCRIBE", 0), ("SEND", 1),
            ("SUBSCRIBE", 0), ("POLL", 0, OWN_A), ("SUBSCRIBE", 0), ("READ", 0),
            ("SUBSCRIBE", 0x82), ("INIT", 2), ("POLL", 2, OWN_A), ("DESTROY", 0),
            ("SUBSCRIBE", 1), ("DESTROY", 3)]),
        # more waiters than a wake batch, released by one send, then by close.
        "crowd": ([0], [
            ("CROWD", 33, SHARED1_A), ("SEND", 2), ("POLL_ALL", OWN_B), ("READ", 0),
            ("READ", 1), ("CROWD", 20, OWN_A), ("CANCEL_CROWD", 2), ("CROWD", 30, OWN_B),
            ("CLOSE",), ("POLL_ALL", OWN_A)]),
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
        "channel": channel_seeds(),
        "broadcast": broadcast_seeds(),
        "watch": watch_seeds(),
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
