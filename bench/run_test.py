#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests of bench/run.py's WAITS and DELIVERED parsing and its contention
tail targets (targets.toml [contention_tails]).  Run: python3 bench/run_test.py"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402

LIMIT = run.TAIL_LIMIT_NS
MS = 1000000


def waits(p99, mx, sides=None):
    w = {"p50_ns": 100, "p99_ns": p99, "max_ns": mx}
    for side, (sp99, smax) in (sides or {}).items():
        w[side] = {"p50_ns": 100, "p99_ns": sp99, "max_ns": smax}
    return {"median": 50.0, "allocs": 0, "waits": w}


def statuses(verdicts):
    return [(v["target"].split()[0], v["status"]) for v in verdicts]


class WaitsLine(unittest.TestCase):
    def test_the_old_line_parses_without_sides(self):
        m = run.WAITS_RE.match("WAITS contention/mutex-2-threads pthread "
                               "p50_ns=40 p99_ns=71 max_ns=6772 acquires=12800")
        self.assertIsNotNone(m)
        self.assertEqual(m.group(5), "6772")
        self.assertIsNone(m.group(7))

    def test_the_rwlock_line_carries_both_sides(self):
        m = run.WAITS_RE.match(
            "WAITS contention/rwlock-mixed-8-threads syncband p50_ns=40 p99_ns=51 max_ns=501 "
            "acquires=12800 read_p50_ns=40 read_p99_ns=51 read_max_ns=61 reads=6400 "
            "write_p50_ns=41 write_p99_ns=52 write_max_ns=501 writes=6400")
        self.assertIsNotNone(m)
        self.assertEqual([m.group(i) for i in range(7, 15)],
                         ["40", "51", "61", "6400", "41", "52", "501", "6400"])

    def test_a_half_suffix_is_rejected(self):
        self.assertIsNone(run.WAITS_RE.match(
            "WAITS s i p50_ns=1 p99_ns=2 max_ns=3 acquires=4 read_p50_ns=1 read_p99_ns=2"))

    def test_stats_take_each_sides_median_over_the_runs(self):
        p = run.Pair("contention/rwlock-mixed-2-threads", "syncband", [], 10, "c", threads=2)
        p.samples = [1.0]
        p.allocs = [0]
        for mx in (10, 30, 20):
            p.waits.append({"p50_ns": 1, "p99_ns": 2, "max_ns": mx, "acquires": 5,
                            "read": {"p50_ns": 1, "p99_ns": 2, "max_ns": mx, "acquires": 2},
                            "write": {"p50_ns": 1, "p99_ns": 2, "max_ns": 2 * mx,
                                      "acquires": 3}})
        w = p.stats()["waits"]
        self.assertEqual(w["read"]["max_ns"], 20)
        self.assertEqual(w["write"]["max_ns"], 40)
        self.assertEqual(w["write"]["max_worst_ns"], 60)


class DeliveredLine(unittest.TestCase):
    SC = "broadcast/fan-out-16-threads"
    WARM = ("DELIVERED broadcast/fan-out-16-threads syncband-blocking sent=1000 received=9000 "
            "fraction=0.562500 min=0.400000 max=0.700000")
    TIMED = ("DELIVERED broadcast/fan-out-16-threads syncband-blocking sent=1000 received=15000 "
             "fraction=0.937500 min=0.900000 max=1.000000")

    def pair(self, impl="syncband-blocking"):
        return run.Pair(self.SC, impl, [], 10, "c")

    def test_the_timed_batchs_line_is_kept_not_the_warm_ups(self):
        d = run.parse_delivered("noise\n%s\n%s\n" % (self.WARM, self.TIMED), self.pair())
        self.assertEqual(d, {"sent": 1000, "received": 15000, "fraction": 0.9375,
                             "min": 0.9, "max": 1.0})

    def test_another_rows_line_or_a_malformed_one_is_ignored(self):
        self.assertIsNone(run.parse_delivered(self.TIMED, self.pair("tokio")))
        self.assertIsNone(run.parse_delivered(self.TIMED.replace(" min=", " least="),
                                              self.pair()))
        self.assertIsNone(run.parse_delivered(None, self.pair()))

    def test_stats_take_the_median_fraction_and_the_extremes(self):
        p = self.pair()
        p.samples = [1.0]
        p.allocs = [0]
        for f, lo, hi in ((0.9, 0.8, 1.0), (0.5, 0.3, 0.7), (0.7, 0.6, 0.9)):
            p.delivered.append({"sent": 10, "received": 1, "fraction": f, "min": lo, "max": hi})
        d = p.stats()["delivered"]
        self.assertEqual((d["fraction"], d["fraction_min"], d["fraction_max"]), (0.7, 0.5, 0.9))
        self.assertEqual((d["min"], d["max"]), (0.3, 1.0))
        self.assertEqual(run.fmt_delivered(d),
                         "0.7000 (0.5000-0.9000), per receiver 0.3000-1.0000")

    def test_the_table_shows_each_row_that_delivered(self):
        import contextlib
        import io
        d = {"fraction": 0.75, "fraction_min": 0.7, "fraction_max": 0.8, "min": 0.5, "max": 1.0}
        report = [{"scenario": self.SC, "rows": [{"impl": "syncband-blocking", "delivered": d},
                                                 {"impl": "tokio", "delivered": d},
                                                 {"impl": "other"}]}]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            run.print_delivered(report)
        lines = [l for l in out.getvalue().splitlines() if "0.7500" in l]
        self.assertEqual(len(lines), 2)
        self.assertIn(self.SC, lines[0])
        self.assertIn("syncband-blocking", lines[0])
        self.assertIn("tokio", lines[1])

    def test_a_run_pair_keeps_the_line_from_stderr(self):
        script = ("import sys; print(%r, file=sys.stderr); print(%r, file=sys.stderr); "
                  "print('BATCH %s syncband-blocking 12.500'); "
                  "print('RESULT %s syncband-blocking 12.500 allocs_per_round=0')"
                  % (self.WARM, self.TIMED, self.SC, self.SC))
        p = run.Pair(self.SC, "syncband-blocking", [sys.executable, "-c", script, "--"], 10, "c")
        self.assertTrue(run.run_pair(p, None, 60))
        self.assertEqual([d["fraction"] for d in p.delivered], [0.9375])
        self.assertEqual(p.samples, [12.5])


class TailTargets(unittest.TestCase):
    SC = "contention/mutex-8-threads"

    def test_the_limit_is_two_bounds_and_a_tenth_of_a_millisecond(self):
        self.assertEqual(LIMIT, 2 * run.FAIRNESS_BOUND_NS + 100000)

    def test_floating_tasks_are_judged_on_max_alone(self):
        v = run.evaluate_tail_targets(self.SC, "syncband", waits(5 * MS, LIMIT), 3 * MS)
        self.assertEqual(statuses(v), [("max", "pass")])
        v = run.evaluate_tail_targets(self.SC, "syncband", waits(1, LIMIT + 1), 3 * MS)
        self.assertEqual(statuses(v), [("max", "MISS")])

    def test_thread_bound_max_gets_the_same_runs_futex_max(self):
        futex = 2 * MS
        ok = run.evaluate_tail_targets(self.SC, "syncband-blocking",
                                       waits(LIMIT, LIMIT + futex), futex)
        self.assertEqual(statuses(ok), [("p99", "pass"), ("max", "pass")])
        self.assertEqual(ok[1]["limit_ns"], LIMIT + futex)
        over = run.evaluate_tail_targets(self.SC, "syncband-pinned",
                                         waits(LIMIT + 1, LIMIT + futex + 1), futex)
        self.assertEqual(statuses(over), [("p99", "MISS"), ("max", "MISS")])

    def test_thread_bound_max_without_a_futex_row_is_not_judged(self):
        v = run.evaluate_tail_targets(self.SC, "syncband-blocking", waits(1, 1), None)
        self.assertEqual(statuses(v), [("p99", "pass"), ("max", "n/a")])

    def test_rwlock_rows_are_judged_on_each_side(self):
        sc = "contention/rwlock-read-mostly-16-threads"
        w = waits(1, 1, {"read": (1, 1), "write": (1, LIMIT + 1)})
        v = run.evaluate_tail_targets(sc, "syncband", w, None)
        self.assertEqual(statuses(v), [("max", "MISS")])
        self.assertIn("write", v[0]["text"])

    def test_strict_fifo_rows_and_other_scenarios_have_no_tail_target(self):
        self.assertEqual(run.evaluate_tail_targets(self.SC, "syncband-fifo",
                                                   waits(1, 10 * MS), MS), [])
        self.assertEqual(run.evaluate_tail_targets("channel/mpsc-4-to-1", "syncband",
                                                   waits(1, 10 * MS), MS), [])


class MedianTargets(unittest.TestCase):
    def test_rwlock_medians_read_the_best_of_pthread_and_async_lock(self):
        sc = "contention/rwlock-mixed-4-threads"
        by_impl = {"syncband-blocking": {"median": 110.0, "allocs": 0},
                   "pthread": {"median": 100.0}, "async-lock": {"median": 90.0},
                   "tokio": {"median": 10.0}}
        v = run.evaluate_targets(sc, "syncband-blocking", by_impl)
        self.assertEqual(v[0]["reference"], "async-lock")
        self.assertEqual(v[0]["status"], "MISS")


if __name__ == "__main__":
    unittest.main()
