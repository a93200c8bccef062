#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Logic mutation runner: one small logic mutation at a time in src/ (and
in the inline fast paths of include/syncband/).

The counterpart of tests/model/mutate.py (memory orders): each mutant below
is a (file, exact source snippet, replacement, description) that negates a
condition, drops a wake, skips a re-check, moves a count by one or swaps
two statements.  For every mutant the runner works in a scratch copy of the
tree (never in the checkout: others build from it), applies the mutant,
rebuilds what it needs and runs, cheapest first, stopping at the first
layer that kills it:

  1. unit     the primitive's cmocka programs (tests/test_<primitive>.c)
  2. explorer the interleaving explorer programs that reach it
              (tests/model/test_model*, SC exhaustive first, then the
              atomic counts, the weak model, the random schedules)
  3. fuzz     its model-based fuzzer for --fuzz-seconds (tests/fuzz/run.sh,
              clang, ASan+UBSan; src/loop.c has none)

then restores the file.  A mutant that no layer kills is "survived", or
"equivalent" with the reason from EQUIVALENT below; one that does not
compile (warnings are errors) or whose snippet is not found once is
"invalid", which is no kill: fix the mutant.  Prints (or writes to --out)
the Markdown of tests/model/MUTANTS.md: the command, the totals per file and
per layer, and a row per mutant.

    tests/model/mutate_logic.py [--list] [--only PATTERN] [--jobs N]
                                [--out FILE] [--scratch DIR] [--fuzz-seconds S]

--only takes a regular expression matched against the mutant's id, file and
description.  --jobs N runs N mutants at once, each in its own scratch copy
(SCRATCH/tree, tree1, ...; each builds its own debug and fuzz trees the
first time, a few minutes).  Needs python3, gcc, cmake, ninja, cmocka and
clang with libFuzzer.  Not run by ./x test.
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import shlex
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from mutate import strip_comments  # noqa: E402

CONFIGURE = ["-G", "Ninja", "-DSYNCBAND_BUILD_TESTS=ON", "-DSYNCBAND_BUILD_URING=ON",
             "-DSYNCBAND_LIBUV=ON", "-DCMAKE_BUILD_TYPE=Debug"]

# What reaches each file: unit test programs, explorer programs (with the
# SB_MODEL_SCENARIO part of a scenario name, or None for all of them), and
# the fuzz target.
LAYERS = {
    "loop.c": (["test_loop"], [("test_model_loop", None)], None),
    "mutex.c": (["test_mutex", "test_condvar"], [("test_model_mutex_races", None),
                                                 ("test_model_condvar", "mutex"),
                                                 ("test_model_mutex", None)], "mutex"),
    "semaphore.c": (["test_semaphore"], [("test_model_semaphore", None)], "semaphore"),
    "fairness.h": (["test_mutex", "test_semaphore"], [("test_model_mutex", None),
                                                      ("test_model_semaphore", None)], "mutex"),
    "rwlock.c": (["test_rwlock"], [("test_model_rwlock", None)], "rwlock"),
    "once.c": (["test_once"], [("test_model_once", None)], "once"),
    "latch.c": (["test_latch"], [("test_model_latch", None)], "latch"),
    "barrier.c": (["test_barrier"], [("test_model_barrier", None)], "barrier"),
    "channel.c": (["test_channel", "test_channel_ring"], [("test_model_channel", None)],
                  "channel"),
    "broadcast.c": (["test_broadcast"], [("test_model_broadcast", None)], "broadcast"),
    "broadcast.h": (["test_broadcast"], [("test_model_broadcast", None)], "broadcast"),
    "watch.c": (["test_watch"], [("test_model_watch", None)], "watch"),
    "watch.h": (["test_watch"], [("test_model_watch", None)], "watch"),
}


def source_path(root, name):
    """A mutant's file: src/NAME, else the public header include/syncband/NAME."""
    path = os.path.join(root, "src", name)
    return path if os.path.exists(path) else os.path.join(root, "include", "syncband", name)
# Every explorer program's cmocka tests, cheapest and likeliest first: the
# SC exhaustive search, the atomic-count tests (a name with "read_modify" or
# "cost"), the weak model's bounded search, the random schedules.
MODEL_STAGES = ["*four_preemptions", "*read_modify*", "*cost_one_atomic*",
                "*weak_model_with_bounded_stale_reads", "*random_schedules",
                "*random_schedules_under_the_weak_model"]

# Unit programs that take long unmutated (test_barrier: 14 s here): a multiple of --unit-timeout.
UNIT_SLOW = {"test_barrier": 3, "test_mutex": 2, "test_condvar": 2}
# A mutated unit program counts as hung only past this many times its
# unmutated run in the baseline (on a loaded machine test_mutex took 90 s).
UNIT_SLACK = 3
UNIT_TIMEOUT = {}  # program -> seconds, from the baseline

T, N = "\t", "\n"
# (id, file, snippet (exactly once in the file), replacement, description)
MUTANTS = [
    # ---- src/loop.c --------------------------------------------------------
    ("loop-01", "loop.c", "return top == NULL;", "return top != NULL;",
     "a push rings when the inbox was not empty, not when it was"),
    ("loop-02", "loop.c", "if (refs_of(old) != 1)" + N + T + T + "return;",
     "if (refs_of(old) != 2)" + N + T + T + "return;",
     "the last-reference check is off by one (released with one reference left)"),
    ("loop-03", "loop.c",
     "if (inbox_push(l, t))" + N + T + T + "ring(l);" + N + T + "/* release: our push and ring",
     "(void)inbox_push(l, t);" + N + T + "/* release: our push and ring",
     "a last-reference drop off the loop pushes the task but never rings"),
    ("loop-04", "loop.c",
     "if (inbox_push(l, t))" + N + T + T + "ring(l);" + N + T + "/* release: our push and ring happen-before" +
     " the acquire load in" + N + T + " * sb_loop_idle that reads 0. */" + N + T +
     "atomic_fetch_sub_explicit(&l->ringing, 1, memory_order_release);",
     "atomic_fetch_sub_explicit(&l->ringing, 1, memory_order_release);" + N + T +
     "if (inbox_push(l, t))" + N + T + T + "ring(l);",
     "a dropper leaves `ringing` before its push and ring, not after (swapped)"),
    ("loop-05", "loop.c", "next = (s & QUEUED) ? s : s + QUEUED + REF_ONE;",
     "next = (s & QUEUED) ? s : s + QUEUED;",
     "a wake that queues the task takes no reference for the queue"),
    ("loop-06", "loop.c", "if (s & DONE)" + N + T + T + T + "return;",
     "if ((s & DONE) && false)" + N + T + T + T + "return;",
     "a wake of a finished task queues it again"),
    ("loop-07", "loop.c", "if (s & QUEUED)" + N + T + T + "return;",
     "if (!(s & QUEUED))" + N + T + T + "return;",
     "a wake pushes the task when it was queued already, and not when it was not"),
    ("loop-08", "loop.c", "QUEUED + 3 * REF_ONE", "QUEUED + 2 * REF_ONE",
     "a spawn takes two references, not three"),
    ("loop-09", "loop.c", "task_unref(t);" + N + T + "return 0;",
     "return 0;", "a spawn never drops its own reference"),
    ("loop-10", "loop.c", "while (top != NULL && top != AWAKE)", "while (top != NULL)",
     "taking the inbox does not stop at the AWAKE marker"),
    ("loop-11", "loop.c", "if (refs_of(s) == 0) {", "if (refs_of(s) == 1) {",
     "run_one takes a task with one reference for a released one"),
    ("loop-12", "loop.c", "if (refs_of(old) == 1)" + N + T + T + T + "task_release(l, t);",
     "if (refs_of(old) == 2)" + N + T + T + T + "task_release(l, t);",
     "a finished task queued by a late wake is released one reference early"),
    ("loop-13", "loop.c", "DONE - REF_ONE, memory_order_acq_rel);", "DONE, memory_order_acq_rel);",
     "a finished poll sets DONE but does not drop the spawn's reference"),
    ("loop-14", "loop.c", "if (t->poll(t, &w) == SB_PENDING)", "if (t->poll(t, &w) != SB_PENDING)",
     "a pending poll is taken as finished and a finished one as pending"),
    ("loop-15", "loop.c", "ring(l); /* out of budget", "(void)0; /* out of budget",
     "the loop does not ring itself when it stops for its budget with tasks queued"),
    ("loop-16", "loop.c", "& ~LOOP_CLOSED) != 0)", "& ~LOOP_CLOSED) > 1)",
     "idle with one task still spawned"),
    ("loop-17", "loop.c",
     "(ringing = atomic_load_explicit(&l->ringing, memory_order_acquire)) != 0;",
     "(ringing = atomic_load_explicit(&l->ringing, memory_order_acquire)) != 0 && false;",
     "idle does not wait out a dropper between its push and ring"),
    ("loop-18", "loop.c",
     "sb_loop_task *next = next_of(t); /* read first: running may release t */" + N + T + T +
     "polled += run_one(l, t);",
     "polled += run_one(l, t);" + N + T + T + "sb_loop_task *next = next_of(t);",
     "the batch reads a task's link after running it (swapped)"),
    ("loop-19", "loop.c", "if (polled >= budget) {", "if (polled > budget) {",
     "the run takes another batch after polling exactly its budget (off by one)"),
    ("loop-20", "loop.c", "if (n & LOOP_CLOSED)" + N + T + T + T + "return false;",
     "if (false)" + N + T + T + T + "return false;",
     "a spawn on a closed loop is accepted"),
    ("loop-22", "loop.c",
     "if ((drained = inbox_sleep(l)))" + N + T + T + T + T + "break;" + N + T + T + T + "continue;",
     "drained = inbox_sleep(l);" + N + T + T + T + "break;",
     "a run whose end-of-run CAS fails (a push since the last take) stops without taking it or ringing"),
    # ---- src/mutex.c: the fairness phase, the budget, the WOKEN head -------
    ("mutex-01", "fairness.h", T + T + "if (*since)" + N + T + T + T + "return;" + N, "",
     "timing the passed waiters restarts the clock of those timed already"),
    ("mutex-02", "mutex.c", "budget * MUTEX_BUDGET_ONE, memory_order_relaxed);",
     "(budget - 1) * MUTEX_BUDGET_ONE, memory_order_relaxed);",
     "the budget written into the word is one less than the unlocks counted"),
    ("mutex-03", "mutex.c", T + "f->unlocks_at_front += budget;" + N, "",
     "a granted budget is not counted in the head's unlocks_at_front"),
    ("mutex-04", "mutex.c", "if (first || sb_fair_is_check(f->unlocks_at_front++)) {",
     "if (first || !sb_fair_is_check(f->unlocks_at_front++)) {",
     "the timed head is checked at every unlock but the 16th"),
    ("mutex-05", "mutex.c", "f->unlocks_at_front = 1; /* this unlock was its first check */",
     "f->unlocks_at_front = 0;",
     "a head's first check is not counted as one of its unlocks"),
    ("mutex-06", "mutex.c", "if (sb_fair_overdue(f->passed_since, now))",
     "if (!sb_fair_overdue(f->passed_since, now))",
     "a head starves when passed at most the bound ago, not more"),
    ("mutex-07", "mutex.c", "if (m->handoff_left) {", "if (m->handoff_left > 1) {",
     "the phase's last covered waiter is not handed the mutex (off by one)"),
    ("mutex-08", "mutex.c", "if (first && sb_waiter_remaining_locked(head) != SB_WAITER_WOKEN)",
     "if (first && sb_waiter_remaining_locked(head) == SB_WAITER_WOKEN)",
     "an untimed head's first pass is recognised when it was not woken, not when it was"),
    ("mutex-09", "mutex.c", "m->handoff_left = sb_waitq_count_from(head->next);",
     "m->handoff_left = 0 * sb_waitq_count_from(head->next);",
     "a starving head starts no handoff phase for those queued behind it"),
    ("mutex-10", "mutex.c", "m->handoff_left = sb_waitq_count_from(head->next);",
     "m->handoff_left = sb_waitq_count_from(head->next) + 1;",
     "the handoff phase covers one waiter more than were queued (a newcomer)"),
    ("mutex-11", "mutex.c", "if (!handed->next)" + N + T + T + "m->handoff_left = 0;",
     "if (handed->next)" + N + T + T + "m->handoff_left = 0;",
     "the phase ends when someone is queued behind the handed head, not when nobody is"),
    ("mutex-12", "mutex.c", "else if (!m->handoff_left)", "else if (m->handoff_left)",
     "newcomers are timed at every handoff of a phase but its last"),
    ("mutex-13", "mutex.c", "if (sb_waiter_remaining_locked(head) != SB_WAITER_WOKEN) {",
     "if (sb_waiter_remaining_locked(head) == SB_WAITER_WOKEN) {",
     "a handoff detaches a WOKEN head and only marks a sleeping one"),
    ("mutex-14", "mutex.c",
     "if (sb_waiter_remaining_locked(head) == SB_WAITER_WOKEN)" + N + T + T + "return;" + N +
     T + "b->wakers",
     "if (sb_waiter_remaining_locked(head) != SB_WAITER_WOKEN)" + N + T + T + "return;" + N +
     T + "b->wakers",
     "an unlock wakes a head only when it is woken already"),
    ("mutex-15", "mutex.c", T + T + T + "m->handoff_left = 0; /* nobody left to hand to */" + N, "",
     "an unlock that finds the queue empty does not end the phase"),
    ("mutex-16", "mutex.c",
     "state - SB_MUTEX_STATE_LOCKED - MUTEX_BUDGET_ONE,",
     "state - SB_MUTEX_STATE_LOCKED,",
     "a lock-free unlock within the budget does not spend it"),
    ("mutex-17", "mutex.c", "if (r == SB_WAITER_GRANTED || !(state & SB_MUTEX_STATE_LOCKED)) {",
     "if (r == SB_WAITER_GRANTED) {",
     "a woken head's retry that takes the free mutex re-arms instead of leaving"),
    ("mutex-18", "mutex.c", "(void)sb_waitq_unlink(&m->q, node); /* its waker was spent */",
     "(void)0;",
     "a woken head that takes the mutex stays in the queue"),
    ("mutex-19", "mutex.c",
     "sb_waitq_unlock_update(&m->q, MUTEX_BUDGET_BITS, 0);" + N + T + T + "sb_waker_drop_if(clone);",
     "sb_waitq_unlock_update(&m->q, 0, 0);" + N + T + T + "sb_waker_drop_if(clone);",
     "a woken head leaving with the mutex does not clear the budget"),
    ("mutex-20", "mutex.c", T + "f->unlocks_at_front -= mutex_budget_of(state); /* counted, never used */" + N,
     "", "a re-arming head keeps the unused budget in its unlocks_at_front"),
    ("mutex-21", "mutex.c", "node->waker = clone;" + N + T + "sb_waiter_set_remaining_locked(node, 1);",
     "node->waker = clone;",
     "a re-arming head stays WOKEN (unlocks never wake it again)"),
    ("mutex-22", "mutex.c", "if (head && !(mutex_load(m) & SB_MUTEX_STATE_LOCKED))",
     "if (head && (mutex_load(m) & SB_MUTEX_STATE_LOCKED))",
     "a woken head's cancel passes the wake on when the mutex is held, not when it is free"),
    ("mutex-23", "mutex.c", T + T + T + "mutex_pass_wake_and_unlock(m);" + N,
     T + T + T + "(void)mutex_pass_wake_and_unlock; /* no longer called */" + N + T + T + T +
     "sb_waitq_unlock(&m->q);" + N,
     "a woken head's cancel does not pass its wake on (nor clear the budget)"),
    ("mutex-24", "mutex.c", "if (sb_waitq_is_empty(&m->q))" + N + T + T + T + "m->handoff_left = 0;",
     "if (false)" + N + T + T + T + "m->handoff_left = 0;",
     "a cancel that empties the queue does not end the phase"),
    ("mutex-25", "mutex.c", T + T + "sb_mutex_unlock(m);" + N + T + T + "return;",
     T + T + "return;",
     "the cancel of a future handed the mutex does not pass it on"),
    ("mutex-26", "mutex.c", "if (state & SB_WAITQ_NONEMPTY)" + N + T + T + "return SB_PARK_LOOK_QUEUE;",
     "if ((state & SB_WAITQ_NONEMPTY) && false)" + N + T + T + "return SB_PARK_LOOK_QUEUE;",
     "a spinning locker keeps spinning past queued waiters (barges)"),
    # ---- src/semaphore.c ---------------------------------------------------
    ("sem-01", "semaphore.c", "if ((state & SB_WAITQ_NONEMPTY) || sem_count(state) < n)",
     "if ((state & SB_WAITQ_NONEMPTY) || sem_count(state) <= n)",
     "try_acquire needs one permit more than it takes"),
    ("sem-02", "semaphore.c", "if (owed > n) {", "if (owed >= n) {",
     "a grant of exactly what the head is owed leaves it a partial grant of 0"),
    ("sem-03", "semaphore.c", "sb_waiter_set_remaining_locked(w, owed - n);",
     "sb_waiter_set_remaining_locked(w, owed);",
     "a partial grant to the head is lost"),
    ("sem-04", "semaphore.c",
     "left = sem_fit(sem_count(sem_load(s)), left);", "(void)sem_fit(0, 0);",
     "permits left after granting are credited without saturating the counter"),
    ("sem-05", "semaphore.c",
     T + T + "if (checked && sem_count(state) > SB_SEMAPHORE_MAX_PERMITS - n)" + N,
     T + T + "if (checked && sem_count(state) >= SB_SEMAPHORE_MAX_PERMITS - n)" + N,
     "release refuses to reach the maximum exactly (off by one)"),
    ("sem-06", "semaphore.c", "(n - 1) * SB_SEMAPHORE_STATE_COUNT_ONE))",
     "n * SB_SEMAPHORE_STATE_COUNT_ONE))",
     "a release that pays the lone waiter also credits its permit to the counter"),
    ("sem-07", "semaphore.c", "sb_waitq_unlock_update(q, 0, returned * SB_SEMAPHORE_STATE_COUNT_ONE);",
     "sb_waitq_unlock_update(q, 0, 0 * returned);",
     "close drops the head's partial grant instead of returning it"),
    ("sem-08", "semaphore.c", "} else if (n - count == 1 && may_be_lone) {",
     "} else if (may_be_lone) {",
     "a first waiter owed more than one permit waits as the lone waiter"),
    ("sem-09", "semaphore.c",
     "next = (state - count * SB_SEMAPHORE_STATE_COUNT_ONE) | SB_QLOCK_HELD;",
     "next = state | SB_QLOCK_HELD;",
     "a first waiter that queues leaves the counter's permits there"),
    ("sem-10", "semaphore.c", T * 7 + "  n - count);",
     T * 7 + "  n);",
     "a first waiter is owed all its permits, though it took what the counter had"),
    ("sem-11", "semaphore.c",
     "if (f->permits > 1) /* what it took from the counter */" + N + T + T + T +
     "sem_release(s, f->permits - 1, false);",
     "(void)0;",
     "the cancel of a lone waiter does not give back what it took from the counter"),
    ("sem-12", "semaphore.c", "sem_grant_and_unlock(s, f->permits - remaining, mine);",
     "sem_grant_and_unlock(s, 0, mine);",
     "the cancel of a queued waiter keeps its partial grant"),
    ("sem-13", "semaphore.c", "if (remaining == SB_WAITER_GRANTED)" + N + T + T + T + "sem_release",
     "if (remaining != SB_WAITER_GRANTED)" + N + T + T + T + "sem_release",
     "the cancel of a detached waiter gives back permits it was not granted, not those it was"),
    ("sem-14", "semaphore.c", "return sb_waitq_is_empty(q) ? n : 0;",
     "return sb_waitq_is_empty(q) && n > 1 ? n : 0;",
     "a single permit left over after the queue emptied is lost"),
    # ---- src/semaphore.c: the eventually fair mode ---------------------------
    ("sem-15", "semaphore.c", "if (s->handoff_left || s->spare < n)" + N + T + T + "return false;",
     "if (s->spare < n)" + N + T + T + "return false;",
     "a newcomer barges during a handoff phase"),
    ("sem-16", "semaphore.c", "add = sem_fit(sem_count(sem_load(s)), s->spare);",
     "add = 0 * sem_count(sem_load(s));",
     "the free permits are lost when the queue empties"),
    ("sem-17", "semaphore.c", "if (s->handoff_left || r == SB_WAITER_WOKEN || r > s->spare)",
     "if (s->handoff_left || r == SB_WAITER_WOKEN || r >= s->spare)",
     "a head that the free permits cover exactly is not woken (off by one)"),
    ("sem-18", "semaphore.c",
     T + T + "s->spare += sem_acquire_of(head)->permits - r; /* its partial grant, if any */" + N, "",
     "a woken head's partial grant is lost instead of joining the free permits"),
    ("sem-19", "semaphore.c",
     "if (head && s->spare < sem_owed_locked(head))" + N + T + T + "sem_time_pass_locked(s);",
     "if (head && s->spare < sem_owed_locked(head))" + N + T + T + "(void)0;",
     "a barger that leaves the head short does not time the queue"),
    ("sem-20", "semaphore.c", "sb_fair_is_check(s->releases_timed++)",
     "sb_fair_is_check(s->releases_timed)",
     "a timed queue is compared with the bound at every release, not every 16th"),
    ("sem-21", "semaphore.c", "s->handoff_left = sb_waitq_count_from(s->q.head);",
     "s->handoff_left = 1 + 0 * sb_waitq_count_from(s->q.head);",
     "a handoff phase covers the head alone, not everyone queued"),
    ("sem-22", "semaphore.c", "if (--s->handoff_left != 0 && !sb_waitq_is_empty(&s->q))",
     "if (--s->handoff_left != 0)",
     "a phase whose queue emptied does not end"),
    ("sem-23", "semaphore.c",
     "s->passed_since = sb_waitq_is_empty(&s->q) ? 0 : sb_fair_phase_stamp(sb_fair_now());",
     "s->passed_since = 0 * sb_fair_now();",
     "the waiters that queued during a phase are not timed at its end"),
    ("sem-24", "semaphore.c", "if (owed > s->spare)" + N + T + T + T + T + "return;",
     "if (owed >= s->spare)" + N + T + T + T + T + "return;",
     "a woken head in a phase is not completed by spare permits that cover it exactly"),
    ("sem-25", "semaphore.c", "mine = SB_NO_WAKER;" + N + T + T + "} else {",
     "(void)0;" + N + T + T + "} else {",
     "the cancel of a woken waiter drops its spent waker again"),
    ("sem-26", "semaphore.c",
     T + T + "owed -= s->spare; /* the phase's: it is the head */" + N + T + T + "s->spare = 0;" + N,
     "", "a woken head that re-arms in a phase leaves the spare permits unused"),
    ("sem-27", "semaphore.c", T + T + "sem_time_pass_locked(s); /* a barger took what woke it */" + N,
     "", "a woken head that loses to a barger does not time the queue"),
    ("sem-28", "semaphore.c",
     "if (head && sb_waiter_remaining_locked(head) == SB_WAITER_WOKEN) {",
     "if (head && false) {",
     "close completes a woken head through its spent waker"),
    ("sem-29", "semaphore.c", "if (!head || !s->passed_since || s->handoff_left ||",
     "if (!head || s->handoff_left ||",
     "the budget opens for a queue nobody timed: bargers pass its head untimed"),
    ("sem-30", "semaphore.c",
     "s->releases_timed -= (uint16_t)((state & SEM_BUDGET_RELEASES) / SEM_BUDGET_RELEASE_ONE);",
     "",
     "a shut budget leaves the releases it did not let by counted: the check comes early"),
    ("sem-31", "semaphore.c", "s->spare += sem_budget_permits(state);", "",
     "a shut budget drops its permits instead of moving them into the spare"),
    ("sem-32", "semaphore.c", "if (sem_budget_is_spendable(state) && (state & SEM_BUDGET_RELEASES) &&",
     "if (sem_budget_is_spendable(state) &&",
     "a release goes by without the lock past the budget's count, the check skipped"),
    ("sem-33", "semaphore.c", "if (!sem_is_fifo(s) && n > 0 && n <= SB_SEMAPHORE_MAX_PERMITS &&",
     "if (!sem_is_fifo(s) && n > 0 &&",
     "a blocking acquire above the maximum spins and takes that many from a saturated counter"),
    # ---- src/fairness.h: the rules the mutex and the semaphore share --------
    ("fair-01", "fairness.h", "return now - since > SB_FAIR_BOUND_NS;",
     "return now - since >= SB_FAIR_BOUND_NS;",
     "a waiter passed exactly the bound ago starves (off by one)"),
    ("fair-02", "fairness.h", "return now > credit ? now - credit : 1;",
     "return now > credit ? now : 1;",
     "a phase's newcomers are timed at its end, not half a bound before"),
    ("fair-03", "fairness.h", "return seen % SB_FAIR_CHECKS_EVERY == 0;",
     "return seen % SB_FAIR_CHECKS_EVERY == 1;",
     "a timed head is first checked at the hand-over after the one that timed it"),
    ("fair-04", "fairness.h", "return now ? now : 1;", "return now;",
     "a stamp taken at time 0 reads as not timed"),
    ("fair-05", "fairness.h", "return budget < most ? budget : most;", "return budget < most ? budget : budget;",
     "a budget lets by more hand-overs than the primitive's bits hold"),
    # ---- src/rwlock.c: upgrade, downgrade, upgradable ----------------------
    ("rw-01", "rwlock.c", "if (queued || (state & SB_RWLOCK_STATE_WRITER))" + N + T + T + T + "return SB_PENDING;" + N + T + T + "if (rw_readers",
     "if (state & SB_RWLOCK_STATE_WRITER)" + N + T + T + T + "return SB_PENDING;" + N + T + T + "if (rw_readers",
     "a reader passes queued waiters and a pending upgrade"),
    ("rw-02", "rwlock.c", "if (rw_readers(state) == SB_RWLOCK_MAX_READERS)",
     "if (rw_readers(state) == SB_RWLOCK_MAX_READERS - 1)",
     "the readers' count overflows one early (off by one)"),
    ("rw-03", "rwlock.c", "if (queued || (state & RW_HELD_BITS))",
     "if (queued || (state & SB_RWLOCK_STATE_WRITER))",
     "a writer enters while readers or an upgradable reader hold the lock"),
    ("rw-04", "rwlock.c",
     "if (queued || (state & (SB_RWLOCK_STATE_WRITER | SB_RWLOCK_STATE_UPGRADABLE)))",
     "if (queued || (state & SB_RWLOCK_STATE_WRITER))",
     "a second upgradable reader enters"),
    ("rw-05", "rwlock.c", "if (state & SB_RWLOCK_STATE_UPGRADING)" + N + T + T + T + "return -EBUSY;" + N + T + T + "if (rw_readers",
     "if (rw_readers",
     "a second upgrade while one is pending is not refused"),
    ("rw-06", "rwlock.c", "if (rw_readers(state))" + N + T + T + T + "return SB_PENDING;",
     "if (rw_readers(state) > 1)" + N + T + T + T + "return SB_PENDING;",
     "an upgrade enters with one plain reader still in"),
    ("rw-07", "rwlock.c", "*next = (state & ~SB_RWLOCK_STATE_UPGRADABLE) | SB_RWLOCK_STATE_WRITER;",
     "*next = state | SB_RWLOCK_STATE_WRITER;",
     "an upgrade keeps UPGRADABLE set beside WRITER"),
    ("rw-08", "rwlock.c", T + T + "sb_waiter_set_remaining_locked(w, SB_WAITER_RELEASED_GRANTED);" + N, "",
     "a released run of readers is counted but its nodes are not marked"),
    ("rw-09", "rwlock.c", "if (rw_readers(*word) == 0) {", "if (rw_readers(*word) <= 1) {",
     "a pending upgrade is granted while one reader remains"),
    ("rw-10", "rwlock.c", T + T + T + T + "rw->upgrading = NULL;" + N, "",
     "a granted upgrade stays in rw->upgrading"),
    ("rw-11", "rwlock.c", "*word = (w & ~SB_RWLOCK_STATE_WRITER) + SB_RWLOCK_STATE_READER_ONE;",
     "*word = w & ~SB_RWLOCK_STATE_WRITER;",
     "a downgrade with waiters gives up the write lock without counting its read"),
    ("rw-12", "rwlock.c", "return rw_release(rw, RW_DOWNGRADE);",
     "size_t word = rw_lock(rw);" + N + T + "int rc = rw_giveback_word(&word, RW_DOWNGRADE);" + N + T +
     "rw_unlock_publish(rw, word);" + N + T + "return rc;",
     "a downgrade with waiters lets none of the queued readers in (no grant, no wake)"),
    ("rw-13", "rwlock.c", "if (w & SB_RWLOCK_STATE_UPGRADING)" + N + T + T + T + "return -EBUSY;" + N + T + T + "*word",
     "*word", "an upgradable unlock while its upgrade is pending is not refused"),
    ("rw-14", "rwlock.c", "*word = (w & ~SB_RWLOCK_STATE_WRITER) | SB_RWLOCK_STATE_UPGRADABLE;",
     "*word = w & ~SB_RWLOCK_STATE_WRITER;",
     "the cancel of a granted upgrade drops the upgradable read too"),
    ("rw-15", "rwlock.c", "!(state & (SB_QLOCK_HELD | SB_WAITQ_NONEMPTY | SB_RWLOCK_STATE_UPGRADING))",
     "!(state & (SB_QLOCK_HELD | SB_RWLOCK_STATE_UPGRADING))",
     "an upgradable unlock with waiters queued takes the lock-free path (no grant, no wake)"),
    ("rw-16", "rwlock.c", "rw_unlock_publish(rw, (state & RW_BITS) | SB_RWLOCK_STATE_UPGRADING);",
     "rw_unlock_publish(rw, state & RW_BITS);",
     "a pending upgrade does not set UPGRADING (readers pass it, nobody grants it)"),
    ("rw-17", "rwlock.c", T + T + "word &= ~SB_RWLOCK_STATE_UPGRADING;" + N, "",
     "a withdrawn upgrade leaves UPGRADING set"),
    ("rw-18", "rwlock.c", "if (rw->upgrading == &f->waiter) {", "if (rw->upgrading != &f->waiter) {",
     "an upgrade's cancel takes a withdrawn upgrade for a granted one and back"),
    ("rw-19", "rwlock.c", "if (remaining == SB_WAITER_GRANTED)" + N + T + T + "rw_release",
     "if (remaining != SB_WAITER_GRANTED)" + N + T + T + "rw_release",
     "the cancel of a detached lock gives back what it was not granted, not what it was"),
    ("rw-20", "rwlock.c", "if (kind == SB_RWLOCK_UPGRADABLE)" + N + T + T + "return RW_UPGRADABLE_UNLOCK;",
     "if (kind == SB_RWLOCK_UPGRADABLE)" + N + T + T + "return RW_READ_UNLOCK;",
     "the cancel of a granted upgradable read gives back a plain read"),
    # ---- src/rwlock.c: the fair mode's hints to lock-free readers -----------
    ("rw-21", "rwlock.c", "(state & RW_SHARED ? 0 : RW_BUDGET_ONE);", "0;",
     "a reader passing a timed writer without the lock does not spend the budget"),
    ("rw-22", "rwlock.c", T + T + "word &= ~(RW_SHARED | RW_QUIET); /* no longer woken */" + N, "",
     "a woken waiter that re-arms leaves SHARED or QUIET set"),
    ("rw-23", "rwlock.c", "head ? word & ~RW_HINT_BITS : word, mine, false);",
     "head ? word : word, mine, false);",
     "the cancel of the head keeps its hints"),
    ("rw-24", "rwlock.c", "!(state & (SB_QLOCK_HELD | SB_RWLOCK_STATE_UPGRADING))) {",
     "!(state & SB_QLOCK_HELD)) {",
     "the last reader leaves without the lock while an upgrade waits for it"),
    ("rw-25", "rwlock.c", "next &= ~RW_HINT_BITS;", "next &= ~(RW_SHARED | RW_QUIET);",
     "a woken writer that takes the lock by its retry leaves its budget in the word"),
    ("rw-26", "rwlock.c", "size_t hints = woken ? RW_QUIET : 0;", "size_t hints = RW_QUIET;",
     "a writer passed while not woken gets QUIET: the last reader does not wake it"),
    ("rw-27", "rwlock.c", T + "f->passes_at_front += budget;" + N + T + T + "hints |=",
     T + "(void)0;" + N + T + T + "hints |=",
     "a granted budget is not counted in the writer's passes"),
    # ---- src/once.c: the failure hand-over, HANDED -------------------------
    ("once-01", "once.c", "return once_is_running(state) && !(state & SB_ONCE_STATE_HANDED);",
     "return once_is_running(state);",
     "complete() and fail() are accepted while the job is HANDED to a future not told yet"),
    ("once-02", "once.c", "size_t next = (*state | SB_ONCE_STATE_RUNNING) + SB_ONCE_STATE_TENURE_ONE;",
     "size_t next = *state | SB_ONCE_STATE_RUNNING;",
     "a claim does not start a new tenure"),
    ("once-03", "once.c", "if (state & (SB_ONCE_STATE_RUNNING | SB_QLOCK_HELD))",
     "if (state & SB_ONCE_STATE_RUNNING)",
     "try() claims the job while a lock holder decides from RUNNING"),
    ("once-04", "once.c", ": !once_is_running(state) || once_tenure(state) != tenure)",
     ": !once_is_running(state) || (once_tenure(state) != tenure && false))",
     "a cancel fails the job in a tenure that is not its own"),
    ("once-05", "once.c",
     "state & ~(SB_ONCE_STATE_RUNNING |" + N + T + T + T + T + T + T + T + T + T + "    SB_ONCE_STATE_HANDED),",
     "state & ~SB_ONCE_STATE_RUNNING,",
     "a lock-free pass-on (nobody queued) leaves HANDED set"),
    ("once-07", "once.c", "->tenure =" + N + T + T + "once_tenure(state + SB_ONCE_STATE_TENURE_ONE);",
     "->tenure =" + N + T + T + "once_tenure(state);",
     "the handed future is given the failed runner's tenure, not the next"),
    ("once-08", "once.c", "SB_ONCE_STATE_HANDED + SB_ONCE_STATE_TENURE_ONE);",
     "SB_ONCE_STATE_TENURE_ONE);",
     "the hand-over does not set HANDED"),
    ("once-09", "once.c", "sb_waitq_detach(&o->q, head, ONCE_HANDED, &batch);",
     "sb_waitq_detach(&o->q, head, SB_WAITER_GRANTED, &batch);",
     "the head handed the job is told the job is done"),
    ("once-10", "once.c", "f->tenure = once_tenure(state + SB_ONCE_STATE_TENURE_ONE);",
     "f->tenure = once_tenure(state);",
     "a future that claims the job keeps the previous tenure"),
    ("once-11", "once.c", "state & ~SB_ONCE_STATE_HANDED," + N, "state," + N,
     "the told future's poll does not clear HANDED"),
    ("once-12", "once.c", "if (r != ONCE_HANDED)" + N + T + T + "return SB_PENDING;",
     "if (r == ONCE_HANDED)" + N + T + T + "return SB_PENDING;",
     "a re-poll handed the job stays pending, and one still queued is told to run"),
    ("once-13", "once.c",
     "if (sb_waitq_cancel(&f->once->q, &f->waiter) == ONCE_HANDED)" + N + T + T +
     "(void)once_pass_on(f->once, false, f->tenure);",
     "(void)sb_waitq_cancel(&f->once->q, &f->waiter);",
     "the cancel of a future handed the job but not told does not pass it on"),
    ("once-14", "once.c", "(void)once_pass_on(f->once, false, f->tenure);" + N + T + T + "return;",
     "return;", "the runner's cancel does not fail the job"),
    ("once-15", "once.c", "sb_waitq_after_unlock(&batch, SB_NO_WAKER);" + N + T + "return 0;" + N + "}" + N + N + "/*" + N + " * The runner's failure",
     "return 0;" + N + "}" + N + N + "/*" + N + " * The runner's failure",
     "complete() releases the waiters but never wakes them"),
    # ---- src/latch.c -------------------------------------------------------
    ("latch-01", "latch.c", "if (n > count)" + N + T + T + T + "return -ERANGE;",
     "if (n >= count && n > 1)" + N + T + T + T + "return -ERANGE;",
     "a count_down of more than one to exactly zero is refused"),
    ("latch-02", "latch.c", "if (n < count || !sb_waitq_may_have_waiters(state)) {",
     "if (n <= count || !sb_waitq_may_have_waiters(state)) {",
     "a count_down to zero with waits queued takes the lock-free path (no broadcast)"),
    ("latch-03", "latch.c", "if (n < count || !sb_waitq_may_have_waiters(state)) {",
     "if (n < count) {",
     "a count_down to zero with nobody waiting takes the queue lock anyway"),
    ("latch-04", "latch.c", T + "latch_open_and_unlock(l);" + N + T + "return 0;",
     T + "(void)latch_open_and_unlock; /* no longer called */" + N + T + "sb_waitq_unlock(&l->q);" + N +
     T + "return 0;",
     "the zeroing count_down unlocks without releasing the queued waits"),
    ("latch-05", "latch.c", "if (n > SB_LATCH_MAX_COUNT - latch_count_of(state))",
     "if (n >= SB_LATCH_MAX_COUNT - latch_count_of(state))",
     "add refuses to reach the maximum count exactly (off by one)"),
    ("latch-06", "latch.c", "if (sb_latch_try_wait(l) != 0) {", "if (false) {",
     "a first poll that read a zero count completes without the acquire re-read"),
    ("latch-07", "latch.c",
     "if (sb_qlock_try_take(&l->q.state, &state, state | SB_QLOCK_HELD, 0))" + N + T + T + T + "break;",
     "(void)sb_waitq_lock(&l->q, 0);" + N + T + T + "break;",
     "a registering wait takes the lock without re-checking that the count is still above zero"),
    ("latch-08", "latch.c", "(void)sb_waitq_cancel(&f->latch->q, &f->waiter); /* nothing to pass on */",
     "(void)f;", "a wait's cancel leaves its node queued"),
    ("latch-09", "latch.c", "sb_waitq_release_all(&l->q, SB_WAITER_GRANTED, &batch);",
     "sb_waitq_release_all(&l->q, SB_WAITER_CLOSED, &batch);",
     "the broadcast completes the waits with an error"),
    # ---- src/broadcast.c: the receive without the lock ---------------------
    ("bcast-01", "broadcast.h",
     "if (begun - next > rx->mask) /* lagged, or item cursor + capacity began */",
     "if (begun - next > rx->mask + 1)",
     "a one-unit (inline) receive misses a send that began overwriting its slot (off by one)"),
    ("bcast-02", "broadcast.c",
     "if (begun - cursor > bc->capacity) /* item cursor + capacity began: maybe torn */",
     "if (begun - cursor > bc->capacity + 1)",
     "a wide receive misses a send that began overwriting its slot (off by one)"),
    ("bcast-03", "broadcast.c",
     "atomic_store_explicit(bc_begun_atomic(bc), tail + 1, memory_order_relaxed);",
     "atomic_store_explicit(bc_begun_atomic(bc), tail, memory_order_relaxed);",
     "a send announces the item before the one it overwrites"),
    ("bcast-04", "broadcast.c", "if (tail - cursor - 1 >= bc->capacity) /* nothing new, or lagged */",
     "if (tail - cursor > bc->capacity)",
     "a wide receive without the lock reads when nothing new was sent"),
    ("bcast-05", "broadcast.h",
     "if (sb__broadcast_load_acquire(seq) == cursor) /* nothing new */",
     "if (sb__broadcast_load_acquire(seq) == cursor && rx->ring == 0)",
     "a one-unit (inline) receive leaves \"nothing new\" to the begun check (reads an unpublished slot)"),
    ("bcast-06", "broadcast.h", "sb__broadcast_store_relaxed(&bc->min, tail + 1);",
     "sb__broadcast_store_relaxed(&bc->min, tail);",
     "a one-unit (inline) send announces the item before the one it overwrites"),
    ("bcast-07", "broadcast.h", "if (!sb__state_cas_release(&bc->q, &held, state))" + N + T + T +
     "sb_broadcast_unlock_slow(bc);",
     "(void)sb__state_cas_release(&bc->q, &held, state);",
     "an inline send whose unlock CAS fails (a thread parked on the lock) never wakes it"),
    ("bcast-08", "broadcast.c", "rx->ring = 0;" + N + T + "rx->bc = NULL;", "rx->bc = NULL;",
     "unsubscribe leaves the inline receive its ring (it reads on)"),
    ("bcast-09", "broadcast.c",
     "bc->item_size == sizeof(uint64_t) &&" + N + T + "       (bc->capacity & (bc->capacity - 1)) == 0;",
     "bc->item_size == sizeof(uint64_t);",
     "a capacity not a power of two takes the inline receive (its mask)"),
    # ---- src/barrier.c: the cancel of an arrival ---------------------------
    ("barrier-01", "barrier.c", "barrier_set_arrived_locked(b, arrived - 1);",
     "barrier_set_arrived_locked(b, arrived);",
     "a cancel does not withdraw its arrival"),
    ("barrier-02", "barrier.c", T + "f->released = true;" + N, "",
     "a cancel that finds its wait released does not say so (a blocking wait then times out)"),
    ("barrier-03", "barrier.c", "if (arrived == parties - 1)", "if (arrived + 2 == parties)",
     "the arrival before the last leads (off by one)"),
    ("barrier-04", "barrier.c", "barrier_set_arrived_locked(b, 0); /* the next generation",
     "barrier_set_arrived_locked(b, barrier_arrived_locked(b)); /* the next generation",
     "the leader does not start the next generation at zero"),
    ("barrier-05", "barrier.c", "f->leader = true;" + N + T + "return 0;" + N + "}",
     "(void)f; /* not told */" + N + T + "return 0;" + N + "}",
     "the leader of a generation is not told it leads"),
    ("barrier-06", "barrier.c", "if (clone.vtable)" + N + T + T + T + "break;",
     "break;", "an arrival that guessed it would lead queues without a waker when it does not"),
    ("barrier-07", "barrier.c", "barrier_set_arrived_locked(b, arrived + 1);",
     "barrier_set_arrived_locked(b, arrived);", "a queueing arrival is not counted"),
    ("barrier-08", "barrier.c", "barrier_guess_last(b, parties) ? SB_NO_WAKER : sb_waker_clone(w)",
     "barrier_guess_last(b, 0) ? SB_NO_WAKER : sb_waker_clone(w)",
     "the leader clones its waker (and drops the clone) though it never waits"),
    ("barrier-09", "barrier.c", "sb_waitq_after_unlock(NULL, mine);",
     "sb_waitq_after_unlock(NULL, SB_NO_WAKER);",
     "a withdrawn arrival's waker clone is never dropped"),
    ("barrier-10", "barrier.c", "f->leader = true;" + N + T + T + "return 0;",
     "return 0;", "the single party of a one-party barrier is not told it leads"),
    # ---- src/channel.c: the stamped ring's freeze, thaw, close and await ----
    ("ring-01", "channel.c",
     "atomic_fetch_or_explicit(sb__channel_ring_head(ch), SB__CHANNEL_RING_FROZEN,",
     "atomic_fetch_or_explicit(sb__channel_ring_head(ch), 0,",
     "a lock holder does not freeze the head: inline receives race its pops"),
    ("ring-02", "channel.c", "(h & ~SB__CHANNEL_RING_FLAGS) | senders,",
     "(h & ~SB__CHANNEL_RING_FLAGS) | 0,",
     "the thaw leaves SENDERS out of the head: an inline receive skips the refill"),
    ("ring-03", "channel.c", "senders | (ch->q.head ? SB__CHANNEL_RING_RECEIVERS : 0)",
     "senders | 0",
     "the thaw leaves RECEIVERS out of the tail: an inline send passes a waiting receiver"),
    ("ring-04", "channel.c",
     T + T + "ch_lock(ch, ring);" + N + T + T + "/* release: CLOSED is read without the lock",
     T + T + "sb_waitq_lock(&ch->q, SB_CHANNEL_STATE_CLOSED);" + N + T + T + "ch_ring_freeze(ch);" +
     N + T + T + "/* release: CLOSED is read without the lock",
     "close publishes CLOSED before it freezes the ring"),
    ("ring-05", "channel.c", "if (s == want)" + N + T + T + T + "return;",
     "if (s == want || true)" + N + T + T + T + "return;",
     "a lock holder does not wait out an inline operation's copy"),
    ("ring-06", "channel.c", "sb_waitq_flush(&ch->q, b);" + N + T + "if (ring)" + N + T + T +
     "ch_ring_freeze(ch);",
     "sb_waitq_flush(&ch->q, b);" + N + T + "(void)ring;",
     "a flush's relock does not freeze the ring again"),
    ("ring-07", "channel.c", "return ch_capacity(ch) - hi + ti;", "return ti - hi;",
     "the ring's length ignores a lap between head and tail"),
    ("ring-08", "channel.c", "return ring ? 0 : SB__CHANNEL_STATE_RING;", "return ring ? 0 : 0;",
     "the lock's first poll and probe keep a stamped ring instead of handing it over"),
    # ---- src/watch.c and the inline read of include/syncband/watch.h -------
    ("watch-01", "watch.h", "if ((state ^ seen) >> SB_WATCH_VERSION_SHIFT)",
     "if ((state ^ seen) >> (SB_WATCH_VERSION_SHIFT + 1))",
     "a changed check ignores the version's lowest bit (misses every other send)"),
    ("watch-02", "watch.h", "return state & SB_WATCH_STATE_CLOSED ? -EPIPE : -EAGAIN;",
     "return -EAGAIN;", "a changed check on a closed watch with nothing new says 'not yet', not closed"),
    ("watch-03", "watch.h", "if (sb__likely(state == rx->seen)) {", "if (sb__likely(true)) {",
     "a lock-free read returns its first load of the word without comparing the state with `seen`"),
    ("watch-04", "watch.h", "if (sb__likely(sb__state_load_relaxed(&w->q) == state)) {",
     "if (sb__likely(true)) {",
     "a lock-free read of a new version skips its second look at the state"),
    ("watch-05", "watch.h", "memcpy(out, &v, sizeof v);" + N + T + T + T + T + "rx->seen = state;",
     "memcpy(out, &v, sizeof v);",
     "a lock-free read of a new version does not mark it seen"),
    ("watch-06", "watch.h", "size_t v = sb__watch_word_load_acquire(w);",
     "size_t v = atomic_load_explicit(&w->word, memory_order_relaxed);",
     "the lock-free read's first load of the word is relaxed, not acquire"),
    ("watch-07", "watch.h", "size_t state = sb__state_load_acquire(&w->q);",
     "size_t state = sb__state_load_relaxed(&w->q);",
     "the lock-free read's load of the state is relaxed, not acquire"),
    ("watch-08", "watch.h",
     "/* acquire: as the first load of the word. */" + N + T + T + T +
     "v = sb__watch_word_load_acquire(w);",
     "v = atomic_load_explicit(&w->word, memory_order_relaxed);",
     "the lock-free read's second load of the word (a new version) is relaxed, not acquire"),
    ("watch-09", "watch.c", "memcpy(out, w->value, w->size);" + N + T + "rx->seen = state;",
     "memcpy(out, w->value, w->size);", "a read under the lock does not mark its version seen"),
    ("watch-10", "watch.c", "sb_waitq_release_all(&w->q, SB_WAITER_CLOSED, &batch);",
     "sb_waitq_release_all(&w->q, SB_WAITER_GRANTED, &batch);",
     "close releases the waiting futures as changed, not closed"),
    ("watch-11", "watch.c", "if (!told) {", "if (told) {",
     "send_if publishes a version when the callback says nothing changed, and none when it did"),
    ("watch-12", "watch.c", "if (sb_waitq_is_empty(&w->q)) {", "if (true) {",
     "a send with futures waiting publishes the version in its unlock and wakes none"),
    ("watch-13", "watch.c", "if (r != -EAGAIN) {", "if (r == 0) {",
     "a first poll that finds the watch closed under the lock queues its future anyway"),
    ("watch-14", "watch.c", "return r == SB_WAITER_GRANTED ? 0 : -EPIPE;", "return 0;",
     "a re-poll released by close reports a change"),
]

# Survivors shown equivalent: id -> the reason, one line.
EQUIVALENT = {
    "once-03": "the queue lock is taken only while RUNNING or DONE is set (futures queue only behind a "
               "runner, complete() sets DONE in its lock CAS), so a word with HELD and neither never "
               "occurs and the RUNNING test alone refuses the same words",
    "sem-22": "every phase step is followed, under the same lock, by sem_unlock_fair, which ends the "
              "phase and stops the clock when it finds the queue empty; only a full wake batch's "
              "flush in between could let a newcomer see the phase, and it would be served in order",
    "sem-26": "the re-armed head is the queue's head in a running phase, so the sem_unlock_fair that "
              "follows feeds it the spare permits as the same partial grant",
    "sem-27": "a woken head finds too few spare permits only after a barger took them, and that barger, "
              "leaving it short, timed the queue already (sem_barge_locked)",
    "mutex-26": "not observable through the contract: in eventually fair mode any locker may take a free "
                "mutex past queued waiters, so the early stop only narrows the timing window in which a "
                "spinner barges (a latency heuristic for the benchmarks, not a property a test can pin)",
}


class Tree:
    """A scratch copy of the checkout with its own debug and fuzz builds."""

    def __init__(self, path, log):
        self.path = path
        self.build = os.path.join(path, "build")
        self.log = log

    def sync(self):
        """Copies the checkout in (changed files only, so ninja rebuilds little)."""
        for folder, dirs, files in os.walk(ROOT):
            rel = os.path.relpath(folder, ROOT)
            dirs[:] = [d for d in dirs if not (rel == "." and d in ("build", ".git"))]
            os.makedirs(os.path.join(self.path, rel), exist_ok=True)
            for name in files:
                src = os.path.join(folder, name)
                dst = os.path.join(self.path, rel, name)
                if os.path.islink(src):
                    continue
                try:
                    with open(src, "rb") as f:
                        data = f.read()
                except OSError:
                    continue
                old = None
                if os.path.exists(dst):
                    with open(dst, "rb") as f:
                        old = f.read()
                if old != data:
                    with open(dst, "wb") as f:
                        f.write(data)
                    shutil.copymode(src, dst)
        if not os.path.exists(os.path.join(self.build, "build.ninja")):
            run(["cmake", "-S", self.path, "-B", self.build] + CONFIGURE, self.log, check=True)

    def ninja(self, targets):
        rc, out = run(["ninja", "-C", self.build] + targets, self.log)
        return rc == 0, out


def run(cmd, log, cwd=None, env=None, timeout=None, check=False):
    """Runs `cmd` niced in its own process group; (rc or None on timeout, output)."""
    p = subprocess.Popen(["nice", "-n", "10"] + cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, errors="replace",
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        rc = None
    if log:
        with open(log, "a") as f:
            f.write("$ %s\n%s\n[rc %s]\n" % (" ".join(cmd), out[-20000:], rc))
    if check and rc != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), out[-3000:]))
    return rc, out



def unit_timeout(program, args):
    """How long a unit program may run before it counts as hung."""
    return max(args.unit_timeout * UNIT_SLOW.get(program, 1), UNIT_TIMEOUT.get(program, 0))

FAILED = re.compile(r"^\[  (?:FAILED|ERROR) *\] (\w+)", re.M)
RUNNING = re.compile(r"^\[ RUN +\] (\w+)", re.M)
MODEL_FAILURE = re.compile(r"MODEL FAILURE in scenario '(.*?)', execution \d+: (.*)")


def unit_verdict(program, rc, out):
    if rc == 0:
        return None
    runs = RUNNING.findall(out)
    last = runs[-1] if runs else "?"
    if rc is None:
        return "unit: %s: %s (timed out: hang)" % (program, last)
    failed = FAILED.findall(out)
    if failed:
        return "unit: %s: %s" % (program, failed[0])
    if rc < 0:
        return "unit: %s: %s (%s)" % (program, last, signal.Signals(-rc).name)
    return "unit: %s: %s (exit %d)" % (program, last, rc)


def model_verdict(program, stage, rc, out):
    if rc == 0:
        return None
    m = MODEL_FAILURE.search(out)
    if m:
        scenario, what = m.groups()
        what = re.sub(r"^\S+?:\d+: ", "", what)
        if what.startswith("data race"):
            what = "data race"
        what = what[:90]
        return "explorer: %s: '%s' (%s)" % (program, scenario, what.replace("|", "\\|"))
    failed = FAILED.findall(out)
    runs = RUNNING.findall(out)
    test = failed[0] if failed else (runs[-1] if runs else stage)
    if rc is None:
        return "explorer: %s: %s (timed out)" % (program, test)
    return "explorer: %s: %s (exit %s)" % (program, test, rc)


def fuzz_verdict(target, rc, out):
    if rc == 0:
        return None
    if rc is None:
        return "fuzz: fuzz_%s (timed out)" % target
    m = re.search(r"^\*\*\* syncband model mismatch.*\n(.*)", out, re.M)
    if m:
        return "fuzz: fuzz_%s: model mismatch: %s" % (target, m.group(1).strip()[:80].replace("|", "\\|"))
    m = re.search(r"(ERROR: \w+Sanitizer: [\w-]+|runtime error: [^\n]{0,60}|ERROR: libFuzzer: [\w-]+|Assertion[^\n]{0,80})", out)
    what = m.group(1) if m else "rc %d" % rc
    return "fuzz: fuzz_%s: %s" % (target, what.replace("|", "\\|"))


def enclosing_function(stripped_lines, line):
    """The function whose body holds `line` (1-based): the last definition
    line above it at column 0, its name the first call-like word that is not
    __attribute__."""
    for text in reversed(stripped_lines[:line - 1]):
        if not text or text[0] in " \t#{}/*" or text.startswith(("typedef", "struct", "enum")):
            continue
        names = [n for n in re.findall(r"(\w+)\s*\(", text) if n != "__attribute__"]
        if names:
            return names[0]
    return "?"


def locate(mutant):
    mid, name, snippet, _replacement, _desc = mutant
    text = open(source_path(ROOT, name)).read()
    count = text.count(snippet)
    if count != 1:
        return None, "snippet found %d times" % count
    at = text.index(snippet)
    line = text.count("\n", 0, at) + 1
    stripped = strip_comments(text).split("\n")
    return line, enclosing_function(stripped, line)


def run_mutant(tree, mutant, args):
    mid, name, snippet, replacement, _desc = mutant
    path = source_path(tree.path, name)
    original = open(path).read()
    if original.count(snippet) != 1:
        return "invalid: snippet found %d times" % original.count(snippet)
    units, models, fuzz = LAYERS[name]
    try:
        with open(path, "w") as f:
            f.write(original.replace(snippet, replacement))
        ok, out = tree.ninja(units + [p for p, _ in models])
        if not ok:
            errors = [l for l in out.splitlines() if "error:" in l] or \
                [l for l in out.splitlines() if "error" in l]
            return "invalid: does not compile: %s" % (errors[0] if errors else out[-200:])
        for program in units:
            rc, out = run([os.path.join(tree.build, "tests", program)], tree.log,
                          cwd=os.path.join(tree.build, "tests"),
                          timeout=unit_timeout(program, args))
            v = unit_verdict(program, rc, out)
            if v:
                return v
        for program, scenario in models:
            env = dict(os.environ)
            if scenario:
                env["SB_MODEL_SCENARIO"] = scenario
            for stage in MODEL_STAGES:
                rc, out = run([os.path.join(tree.build, "tests", program), stage], tree.log,
                              cwd=os.path.join(tree.build, "tests"), env=env,
                              timeout=args.model_timeout)
                v = model_verdict(program, stage, rc, out)
                if v:
                    return v
        if fuzz and args.fuzz_seconds > 0:
            env = dict(os.environ, SB_FUZZ_ARGS="-seed=1")
            rc, out = run([os.path.join(tree.path, "tests", "fuzz", "run.sh"),
                           str(args.fuzz_seconds), fuzz], tree.log, cwd=tree.path, env=env,
                          timeout=args.fuzz_seconds + 900)
            if rc != 0 and "building the fuzzers failed" in out:
                return "invalid: does not compile (clang): %s" % out[-300:]
            v = fuzz_verdict(fuzz, rc, out)
            if v:
                return v
        return "survived"
    finally:
        with open(path, "w") as f:
            f.write(original)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--only", help="regular expression over id, file and description")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", help="write the Markdown table here")
    ap.add_argument("--scratch", default="/tmp/mutants")
    ap.add_argument("--fuzz-seconds", type=int, default=15)
    ap.add_argument("--unit-timeout", type=int, default=30)
    ap.add_argument("--model-timeout", type=int, default=600)
    ap.add_argument("--skip-baseline", action="store_true",
                    help="do not first check that every layer passes unmutated")
    args = ap.parse_args()

    todo = []
    for m in MUTANTS:
        if args.only and not re.search(args.only, " ".join((m[0], m[1], m[4]))):
            continue
        todo.append(m)
    ids = [m[0] for m in MUTANTS]
    assert len(ids) == len(set(ids)), "duplicate mutant ids"
    where = {}
    bad = False
    for m in todo:
        line, function = locate(m)
        if line is None:
            print("%s: %s" % (m[0], function), file=sys.stderr)
            bad = True
        where[m[0]] = (line, function)
    if bad:
        sys.exit("fix the snippets above first")
    if args.list:
        for m in todo:
            line, function = where[m[0]]
            print("%-11s %s:%d %s: %s" % (m[0], m[1], line, function, m[4]))
        print("%d mutants" % len(todo))
        return

    start = time.time()
    os.makedirs(args.scratch, exist_ok=True)
    trees = []
    for i in range(max(1, args.jobs)):
        name = "tree%s" % (i or "")
        tree = Tree(os.path.join(args.scratch, name), os.path.join(args.scratch, name + ".log"))
        open(tree.log, "w").close()
        print("setting up %s ..." % tree.path, file=sys.stderr, flush=True)
        tree.sync()
        trees.append(tree)

    files = sorted({m[1] for m in todo})
    for tree in trees:
        # Builds every layer's programs (the fuzzers with a 1 s run).
        units = sorted({u for n in files for u in LAYERS[n][0]})
        models = sorted({p for n in files for p, _ in LAYERS[n][1]})
        ok, out = tree.ninja(units + models)
        if not ok:
            sys.exit("the unmutated tree does not build:\n" + out[-3000:])
        fuzzers = sorted({LAYERS[n][2] for n in files if LAYERS[n][2]})
        if fuzzers and args.fuzz_seconds > 0:
            run([os.path.join(tree.path, "tests", "fuzz", "run.sh"), "1"] + fuzzers,
                tree.log, cwd=tree.path, check=True)
    if not args.skip_baseline:
        # Every layer passes unmutated.
        tree = trees[0]
        for name in files:
            units, models, fuzz = LAYERS[name]
            for program in units:
                t0 = time.time()
                rc, out = run([os.path.join(tree.build, "tests", program)], tree.log,
                              cwd=os.path.join(tree.build, "tests"),
                              timeout=10 * unit_timeout(program, args))
                if rc != 0:
                    sys.exit("unmutated %s fails:\n%s" % (program, out[-3000:]))
                UNIT_TIMEOUT[program] = UNIT_SLACK * (time.time() - t0)
                print("unmutated %s: %.0f s" % (program, time.time() - t0), file=sys.stderr)
            for program, scenario in models:
                env = dict(os.environ)
                if scenario:
                    env["SB_MODEL_SCENARIO"] = scenario
                rc, out = run([os.path.join(tree.build, "tests", program)], tree.log,
                              cwd=os.path.join(tree.build, "tests"), env=env,
                              timeout=args.model_timeout)
                if rc != 0:
                    sys.exit("unmutated %s fails:\n%s" % (program, out[-3000:]))
        print("baseline passes (%.0f s)" % (time.time() - start), file=sys.stderr, flush=True)

    free = list(trees)
    lock = threading.Lock()

    def one(m):
        with lock:
            tree = free.pop()
        t0 = time.time()
        try:
            result = run_mutant(tree, m, args)
        finally:
            with lock:
                free.append(tree)
        if result == "survived" and m[0] in EQUIVALENT:
            result = "equivalent: " + EQUIVALENT[m[0]]
        print("%s (%.0f s): %s" % (m[0], time.time() - t0, result), file=sys.stderr, flush=True)
        return result

    # Run the files' mutants interleaved, so that a partial run covers every file.
    rank = {}
    order = sorted(range(len(todo)),
                   key=lambda i: (rank.setdefault(todo[i][1], {}).setdefault(i, len(rank[todo[i][1]])), i))
    with concurrent.futures.ThreadPoolExecutor(len(trees)) as pool:
        done = dict(zip(order, pool.map(one, [todo[i] for i in order])))
    results = [done[i] for i in range(len(todo))]

    elapsed = time.time() - start
    text = report(todo, results, where, elapsed, len(trees))
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)


KINDS = ("unit", "explorer", "fuzz", "equivalent", "survived", "invalid")


def kind_of(result):
    """unit, explorer, fuzz (the killing layer), equivalent, survived or invalid."""
    kind = result.split(":")[0]
    return kind if kind in KINDS else "invalid"


def report(todo, results, where, elapsed, jobs):
    """The Markdown of tests/model/MUTANTS.md: how to regenerate it, the
    totals per file and per layer, then one row per mutant."""
    command = " ".join(shlex.quote(a) for a in
                       ["tests/model/mutate_logic.py"] + [a for a in sys.argv[1:]])
    files = sorted({m[1] for m in todo}, key=lambda n: [m[1] for m in todo].index(n))
    out = ["# Logic mutants", "",
           "Generated by `tests/model/mutate_logic.py` (its docstring says what it does):", "",
           "    " + command, "",
           "%d mutants in %.0f s with %d job%s.  A mutant is killed by the first layer that fails "
           "(unit, then explorer, then fuzz); *equivalent* gives the reason, from the runner's "
           "EQUIVALENT table, why no test can kill it; *invalid* is a mutant that does not "
           "compile or apply, which counts as nothing." % (len(todo), elapsed, jobs,
                                                            "" if jobs == 1 else "s"),
           "", "| file | mutants | " + " | ".join(KINDS) + " |",
           "|---|---:|" + "---:|" * len(KINDS)]
    for name in files + [None]:
        kinds = [kind_of(r) for m, r in zip(todo, results) if name in (None, m[1])]
        out.append("| %s | %d | %s |" % (name or "**all**", len(kinds),
                                         " | ".join(str(kinds.count(k)) for k in KINDS)))
    out += ["", "| mutant | file:function | description | result |", "|---|---|---|---|"]
    for m, result in zip(todo, results):
        _line, function = where[m[0]]
        out.append("| %s | %s:%s | %s | %s |" % (m[0], m[1], function, m[4].replace("|", "\\|"),
                                                 re.sub(r"(?<!\\)\|", r"\\|", result)))
    return "\n".join(out) + "\n"

if __name__ == "__main__":
    main()
