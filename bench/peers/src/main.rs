//! `peers`: the syncband benchmark scenarios on Tokio and async-lock /
//! event-listener (and on Tokio's and async-executor's executors), printed
//! in the same machine-readable lines as syncband's own benchmarks so that a
//! driver can interleave the implementations batch by batch.
//!
//! ```text
//! peers list                     supported pairs, `<scenario> <impl> <default rounds>` a line
//! peers unsupported              `UNSUPPORTED <scenario> <impl> <reason>` lines
//! peers run <scenario> <impl> [--batches B] [--rounds R] [--threads N] [--permits K]
//!           [--once | --waits]
//! peers run-all [--quick]
//! ```
//!
//! `--once`: exactly one batch of R rounds and no warm-up (it counts the
//! allocations and is timed), so that two runs of R and 2R rounds differ by
//! R rounds and nothing else (the instruction counts of bench/run.py, under
//! callgrind).
//!
//! `--waits` (contention rows, and the channel rows of several producers or
//! receivers, which time every receive): exactly one batch of R rounds, no warm-up,
//! in which every acquire is timed; prints only
//! `WAITS <scenario> <impl> p50_ns=<x> p99_ns=<y> max_ns=<z> acquires=<n>`
//! (that batch's time is not reported: the clock reads slow it down); the
//! rwlock contention rows append `read_p50_ns= read_p99_ns= read_max_ns=
//! reads= write_p50_ns= write_p99_ns= write_max_ns= writes=` (each side
//! apart; the first fields stay the totals).

mod alloc_count;
mod broadcast;
mod channels;
mod contention;
mod executors;
mod harness;
mod one_slot;
mod primitives;
mod registry;
mod rwlock_barrier_once;
mod rwlock_contention;
mod watch;
mod select;

use std::process::ExitCode;

use harness::{Meter, Params, WaitHistogram};
use registry::{Row, Support};

#[global_allocator]
static ALLOCATOR: alloc_count::CountingAllocator = alloc_count::CountingAllocator;

/// Executor threads of the contention rows unless `--threads` says otherwise.
const DEFAULT_THREADS: usize = 2;
/// Permits of the contention semaphore (Tokio's contended sync_semaphore
/// bench uses Semaphore(5)).
const DEFAULT_PERMITS: usize = 5;

const USAGE: &str = "\
usage: peers list
       peers unsupported
       peers run <scenario> <impl> [--batches B] [--rounds R] [--threads N] [--permits K]
                 [--once | --waits]
       peers run-all [--quick]";

/// Options of `run`.
struct RunOptions {
    batches: usize,
    rounds: Option<u64>,
    threads: Option<usize>,
    permits: usize,
    /// One batch, no warm-up.
    once: bool,
    /// One batch, no warm-up, every acquire timed.
    waits: bool,
}

fn parse_number<T: std::str::FromStr>(flag: &str, value: Option<&String>) -> Result<T, String> {
    let value = value.ok_or_else(|| format!("{flag} needs a value"))?;
    value
        .parse::<T>()
        .map_err(|_| format!("{flag}: not a valid number: {value}"))
}

fn parse_run_options(args: &[String]) -> Result<RunOptions, String> {
    let mut opts = RunOptions {
        batches: 1,
        rounds: None,
        threads: None,
        permits: DEFAULT_PERMITS,
        once: false,
        waits: false,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--batches" => opts.batches = parse_number(flag, it.next())?,
            "--rounds" => opts.rounds = Some(parse_number(flag, it.next())?),
            "--threads" => opts.threads = Some(parse_number(flag, it.next())?),
            "--permits" => opts.permits = parse_number(flag, it.next())?,
            "--once" => opts.once = true,
            "--waits" => opts.waits = true,
            other => return Err(format!("unknown option: {other}")),
        }
    }
    if opts.batches == 0 || opts.rounds == Some(0) || opts.threads == Some(0) || opts.permits == 0 {
        return Err("--batches, --rounds, --threads and --permits must be at least 1".into());
    }
    if opts.once && opts.waits {
        return Err("--once and --waits exclude each other".into());
    }
    Ok(opts)
}

/// Formats a per-round allocation count with up to three decimals.
fn format_allocs(per_round: f64) -> String {
    let s = format!("{per_round:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() {
        "0".into()
    } else {
        s.into()
    }
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    let n = samples.len();
    if n % 2 == 1 {
        samples[n / 2]
    } else {
        (samples[n / 2 - 1] + samples[n / 2]) / 2.0
    }
}

/// One untimed warm-up batch (counting allocations), then `batches` timed
/// batches; prints a BATCH line per batch and the RESULT line.
fn run_pair(row: &Row, batch: harness::BatchFn, params: &Params, batches: usize) {
    let name = row.name(params.threads);

    alloc_count::set_counting(true);
    let mut meter = Meter::default();
    let units = batch(params, &mut meter);
    alloc_count::set_counting(false);
    let allocs_per_round = meter.allocations() as f64 / units as f64;

    let mut samples = Vec::with_capacity(batches);
    for _ in 0..batches {
        let mut meter = Meter::default();
        let units = batch(params, &mut meter);
        let ns = meter.elapsed().as_nanos() as f64 / units as f64;
        println!("BATCH {name} {} {ns:.3}", row.imp);
        samples.push(ns);
    }
    println!(
        "RESULT {name} {} {:.3} allocs_per_round={}",
        row.imp,
        median(&mut samples),
        format_allocs(allocs_per_round)
    );
}

/// `--once`: one batch and no warm-up; it counts the allocations and is timed.
fn run_once(row: &Row, batch: harness::BatchFn, params: &Params) {
    let name = row.name(params.threads);
    alloc_count::set_counting(true);
    let mut meter = Meter::default();
    let units = batch(params, &mut meter);
    alloc_count::set_counting(false);
    let ns = meter.elapsed().as_nanos() as f64 / units as f64;
    println!("BATCH {name} {} {ns:.3}", row.imp);
    println!(
        "RESULT {name} {} {ns:.3} allocs_per_round={}",
        row.imp,
        format_allocs(meter.allocations() as f64 / units as f64)
    );
}

/// `--waits`: one batch, no warm-up, every acquire timed; prints the WAITS line.
fn run_waits(row: &Row, batch: harness::BatchFn, params: &Params) -> Result<(), String> {
    let name = row.name(params.threads);
    let mut meter = Meter::default();
    meter.waits = Some(WaitHistogram::new());
    meter.read_waits = Some(WaitHistogram::new());
    meter.write_waits = Some(WaitHistogram::new());
    batch(params, &mut meter);
    let taken = (
        meter.waits.take(),
        meter.read_waits.take(),
        meter.write_waits.take(),
    );
    let (Some(waits), Some(reads), Some(writes)) = taken else {
        panic!("the histograms stay in the meter");
    };
    if waits.count() == 0 {
        return Err(format!("{name} {} does not time its acquires", row.imp));
    }
    // The rows that time their read and write locks apart append both sides.
    let sides = if reads.count() + writes.count() > 0 {
        format!(
            " read_p50_ns={} read_p99_ns={} read_max_ns={} reads={} \
             write_p50_ns={} write_p99_ns={} write_max_ns={} writes={}",
            reads.percentile(0.50),
            reads.percentile(0.99),
            reads.max(),
            reads.count(),
            writes.percentile(0.50),
            writes.percentile(0.99),
            writes.max(),
            writes.count()
        )
    } else {
        String::new()
    };
    println!(
        "WAITS {name} {} p50_ns={} p99_ns={} max_ns={} acquires={}{sides}",
        row.imp,
        waits.percentile(0.50),
        waits.percentile(0.99),
        waits.max(),
        waits.count()
    );
    Ok(())
}

fn print_unsupported(row: &Row, threads: usize, why: &str) {
    println!("UNSUPPORTED {} {} {why}", row.name(threads), row.imp);
}

fn cmd_list(rows: &[Row], want_supported: bool) -> Result<(), String> {
    for row in rows {
        match (&row.support, want_supported) {
            (Support::Run(_), true) => {
                println!("{} {} {}", row.name(DEFAULT_THREADS), row.imp, row.rounds)
            }
            (Support::Unsupported(why), false) => print_unsupported(row, DEFAULT_THREADS, why),
            _ => {}
        }
    }
    Ok(())
}

fn cmd_run(rows: &[Row], args: &[String]) -> Result<(), String> {
    let [scenario, imp, rest @ ..] = args else {
        return Err("run needs <scenario> <impl>".into());
    };
    let opts = parse_run_options(rest)?;
    let (row, named_threads) = rows
        .iter()
        .filter(|row| row.imp == imp)
        .find_map(|row| row.matches(scenario).map(|threads| (row, threads)))
        .ok_or_else(|| format!("unknown pair: {scenario} {imp} (see `peers list`)"))?;

    let threads = match (named_threads, opts.threads) {
        (Some(named), Some(flag)) if named != flag => {
            return Err(format!(
                "{scenario} names {named} threads but --threads says {flag}"
            ))
        }
        (named, flag) => named.or(flag).unwrap_or(DEFAULT_THREADS),
    };
    if opts.threads.is_some() && !row.has_threads() {
        return Err(format!(
            "--threads applies only to contention rows, not {scenario}"
        ));
    }
    if opts.waits && !row.times_waits() {
        return Err(format!(
            "--waits applies only to contention rows and the channel rows with several \
             producers or receivers, not {scenario}"
        ));
    }
    let params = Params {
        rounds: opts.rounds.unwrap_or(row.rounds),
        threads,
        permits: opts.permits,
    };
    match row.support {
        Support::Run(batch) if opts.waits => run_waits(row, batch, &params)?,
        Support::Run(batch) if opts.once => run_once(row, batch, &params),
        Support::Run(batch) => run_pair(row, batch, &params, opts.batches),
        Support::Unsupported(why) => print_unsupported(row, threads, why),
    }
    Ok(())
}

fn cmd_run_all(rows: &[Row], args: &[String]) -> Result<(), String> {
    let quick = match args {
        [] => false,
        [flag] if flag == "--quick" => true,
        _ => return Err("run-all takes only --quick".into()),
    };
    for row in rows {
        match row.support {
            Support::Run(batch) => {
                // --quick: a hundredth of the rounds, at least one.
                let rounds = if quick {
                    (row.rounds / 100).max(1)
                } else {
                    row.rounds
                };
                let params = Params {
                    rounds,
                    threads: DEFAULT_THREADS,
                    permits: DEFAULT_PERMITS,
                };
                run_pair(row, batch, &params, 1);
            }
            Support::Unsupported(why) => print_unsupported(row, DEFAULT_THREADS, why),
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rows = registry::rows();
    let result = match args.split_first() {
        Some((cmd, rest)) if cmd == "list" && rest.is_empty() => cmd_list(&rows, true),
        Some((cmd, rest)) if cmd == "unsupported" && rest.is_empty() => cmd_list(&rows, false),
        Some((cmd, rest)) if cmd == "run" => cmd_run(&rows, rest),
        Some((cmd, rest)) if cmd == "run-all" => cmd_run_all(&rows, rest),
        Some((cmd, _)) if cmd == "help" || cmd == "--help" || cmd == "-h" => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Err("no such command".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("peers: {message}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}
