#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints the README's Performance table from a published run.

    python3 bench/readme_table.py [bench/results/latest.json]

One row per scenario that has a target or a peer: syncband's median, Tokio's,
the smol-stack peer's (async-lock, event-listener or async-executor), each
peer's ratio to syncband, the instructions per round of the single-thread
rows (callgrind; "instr"), and the bench/README.md targets with their
verdicts, all read from the JSON that `./x bench` publishes.  Then the
contention rows (mutex, semaphore, rwlock at 2-16 threads): every syncband
row (floating tasks, pinned tasks, blocking threads) against the same run's
best baseline (the references of its median target), its wait p99 / max
(each side apart for the rwlock), and its median and tail verdicts.
"""
import json
import sys

SMOL = ("async-lock", "event-listener", "async-executor")
TOKIO = ("tokio", "tokio-current-thread")
SKIP = ("baseline/", "executor/spawn-batch", "executor/spawn-many-local",
        "executor/spawn-recursively", "notify/fan-out-", "contention/")
# The contention table's syncband rows (strict-FIFO rows have no target).
CONTENTION_ROWS = ("syncband", "syncband-pinned", "syncband-blocking")


def fmt_ns(ns):
    if ns >= 1e6:
        return "%.2f ms" % (ns / 1e6)
    if ns >= 1e4:
        return "%.1f µs" % (ns / 1e3)
    if ns >= 100:
        return "%.0f ns" % ns
    return "%.1f ns" % ns


def fmt_instr(n):
    return ("%.0f" if n >= 100 else "%.1f") % n


def instr(e):
    """", 64.0 instr" for a row with an instruction count, else ""."""
    n = e.get("instructions")
    return ", %s instr" % fmt_instr(n) if n is not None else ""


def cell(rows, names):
    for name in names:
        e = rows.get(name)
        if not e:
            continue
        if "unsupported" in e:
            return "unsupported"
        text = "%s (%.2f×)%s" % (fmt_ns(e["median"]), e["ratio"], instr(e))
        allocs = e.get("allocs") or 0
        if allocs >= 0.5:
            n = round(allocs, 1)
            text += ", %g alloc%s" % (n, "" if n == 1 else "s")
        return text
    return "—"


def verdicts(entry):
    """The driver's verdict texts, e.g. '<=0.40x tokio: 0.42 MISS'."""
    return "; ".join(t["text"].replace(" MISS", " **missed**")
                     for t in entry.get("targets", []))


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "bench/results/latest.json"
    doc = json.load(open(path))
    print("| scenario | syncband | Tokio | async-lock / event-listener / async-executor "
          "| targets |")
    print("|---|---:|---:|---:|---|")
    for sc in doc["scenarios"]:
        name = sc["scenario"]
        if name.startswith(SKIP):
            continue
        rows = {e["impl"]: e for e in sc["rows"]}
        base = rows.get("syncband")
        if not base or "median" not in base:
            continue
        print("| %s | %s%s | %s | %s | %s |" % (name, fmt_ns(base["median"]), instr(base),
                                                cell(rows, TOKIO), cell(rows, SMOL),
                                                verdicts(base)))
    contention(doc)
    wake_floor(doc)


def tails(w):
    """'p99 / max' of a row's waits, each side apart where it has sides."""
    sides = [(side, w[side]) for side in ("read", "write") if side in w] or [("", w)]
    return "; ".join(("%s %s / %s" % (side, fmt_ns(v["p99_ns"]), fmt_ns(v["max_ns"]))).strip()
                     for side, v in sides)


def contention(doc):
    """The contention rows, every syncband row with its targets."""
    lines = []
    for sc in doc["scenarios"]:
        name = sc["scenario"]
        if not name.startswith("contention/"):
            continue
        for e in sc["rows"]:
            if e["impl"] not in CONTENTION_ROWS or "median" not in e:
                continue
            ref = next((t for t in e.get("targets", []) if t.get("reference")), None)
            versus = ("%.2f× %s" % (t_ratio(ref), ref["reference"])) if ref else "—"
            lines.append("| %s | %s | %s | %s | %s | %s |" % (
                name, e["impl"], fmt_ns(e["median"]), versus,
                tails(e["waits"]) if "waits" in e else "—", verdicts(e)))
    if lines:
        print()
        print("| contention row | syncband row | median | vs best baseline "
              "| wait p99 / max | targets |")
        print("|---|---|---:|---:|---|---|")
        for line in lines:
            print(line)


def t_ratio(t):
    return t["ratio"] if t.get("ratio") is not None else float("nan")


def wake_floor(doc):
    """The line under the table: the machine's futex wake-up latency, the
    floor under every wait that sleeps (bench/baseline.cc)."""
    for sc in doc["scenarios"]:
        if sc["scenario"] != "baseline/futex-wake-to-run":
            continue
        w = next((e["waits"] for e in sc["rows"] if "waits" in e), None)
        if w:
            print()
            print("Waking a sleeping thread on this machine (baseline/futex-wake-to-run, "
                  "medians of %d runs): p50 %s, p99 %s, max %s (the runs' maxima %s-%s)."
                  % (len(w["runs"]), fmt_ns(w["p50_ns"]), fmt_ns(w["p99_ns"]), fmt_ns(w["max_ns"]),
                     fmt_ns(w["max_min_ns"]), fmt_ns(w["max_worst_ns"])))


if __name__ == "__main__":
    main()
