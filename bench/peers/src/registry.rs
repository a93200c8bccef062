//! Every (scenario, implementation) pair the harness knows, with its default
//! rounds per batch, and the honest reason where a peer cannot express one.

use crate::broadcast as bc;
use crate::channels as ch;
use crate::contention::{smol_mt, tokio_mt};
use crate::executors::{async_exec, tokio_ct};
use crate::harness::BatchFn;
use crate::primitives::{async_lock_peer, event_listener_peer, std_baseline, tokio_peer};
use crate::rwlock_barrier_once as rbo;
use crate::watch as wt;

/// Placeholder for the thread count in a contention row's name.
pub const THREADS_PLACEHOLDER: &str = "-N-threads";

pub enum Support {
    Run(BatchFn),
    Unsupported(&'static str),
}

pub struct Row {
    /// Scenario name as in bench/README.md; contention rows carry `-N-threads`.
    pub scenario: &'static str,
    pub imp: &'static str,
    /// Rounds per batch by default (contention rows: operations per task).
    pub rounds: u64,
    pub support: Support,
}

impl Row {
    /// Whether the name has a thread count (`contention/*-N-threads`).
    pub fn has_threads(&self) -> bool {
        self.scenario.ends_with(THREADS_PLACEHOLDER)
    }

    /// Whether `--waits` applies: the contention rows, the channel rows
    /// with several producers or receivers (every receive timed) and
    /// `watch/read-while-sending` (every send timed).
    pub fn times_waits(&self) -> bool {
        self.has_threads()
            || CHANNEL_WAITS.contains(&self.scenario)
            || self.scenario == WATCH_WAITS
    }

    /// The scenario name with the thread count filled in.
    pub fn name(&self, threads: usize) -> String {
        match self.scenario.strip_suffix(THREADS_PLACEHOLDER) {
            Some(stem) => format!("{stem}-{threads}-threads"),
            None => self.scenario.to_string(),
        }
    }

    /// Matches a scenario name given on the command line; for a contention
    /// row, returns the thread count it names (`None` for a literal `N`,
    /// which leaves the count to `--threads`).
    pub fn matches(&self, scenario: &str) -> Option<Option<usize>> {
        match self.scenario.strip_suffix(THREADS_PLACEHOLDER) {
            None => (self.scenario == scenario).then_some(None),
            Some(stem) => {
                let n = scenario
                    .strip_prefix(stem)?
                    .strip_prefix('-')?
                    .strip_suffix("-threads")?;
                if n == "N" {
                    return Some(None);
                }
                n.parse::<usize>().ok().filter(|&n| n > 0).map(Some)
            }
        }
    }
}

const fn run(scenario: &'static str, imp: &'static str, rounds: u64, f: BatchFn) -> Row {
    Row {
        scenario,
        imp,
        rounds,
        support: Support::Run(f),
    }
}

const fn unsupported(
    scenario: &'static str,
    imp: &'static str,
    rounds: u64,
    why: &'static str,
) -> Row {
    Row {
        scenario,
        imp,
        rounds,
        support: Support::Unsupported(why),
    }
}

const NO_ADD_PERMITS: &str =
    "async-lock 2.6 Semaphore has no add_permits/release: a permit returns \
     only when its guard drops, so a zero-permit semaphore can never be released into";

/// Impl names.
pub const TOKIO: &str = "tokio";
pub const ASYNC_LOCK: &str = "async-lock";
pub const EVENT_LISTENER: &str = "event-listener";
pub const RUST_STD: &str = "rust-std";
pub const TOKIO_CT: &str = "tokio-current-thread";
pub const ASYNC_EXECUTOR: &str = "async-executor";
pub const ASYNC_CHANNEL: &str = "async-channel";
pub const FLUME: &str = "flume";
pub const FLUME_BLOCKING: &str = "flume-blocking";
pub const CROSSBEAM: &str = "crossbeam";
pub const STD_SYNC_CHANNEL: &str = "std-sync-channel";
pub const ASYNC_BROADCAST: &str = "async-broadcast";

/// The channel rows that time every receive under `--waits`.
pub const CHANNEL_WAITS: [&str; 5] = [
    "channel/mpsc-4-to-1",
    "channel/mpsc-16-to-1",
    "channel/spmc-1-to-4",
    "channel/mpmc-4-to-4",
    "channel/mpmc-16-to-16",
];

const CROSSBEAM_BLOCKING_ONLY: &str =
    "crossbeam-channel is blocking only: it has no future to await on one loop";
const ZERO_CAPACITY_PANICS_TOKIO: &str =
    "tokio::sync::mpsc::channel(0) panics: Tokio has no rendezvous channel";
const ZERO_CAPACITY_PANICS_ASYNC_CHANNEL: &str =
    "async_channel::bounded(0) panics: async-channel has no rendezvous channel";
const TOKIO_ONE_RECEIVER: &str =
    "tokio::sync::mpsc has one receiver (not Clone): several receivers would need our own sharing";

/// The watch row that times every send under `--waits`.
pub const WATCH_WAITS: &str = "watch/read-while-sending";

/// The watch rows (src/watch.rs): `tokio::sync::watch`.
fn watch_rows() -> Vec<Row> {
    vec![
        run(
            "watch/update-16-receivers",
            TOKIO,
            200_000,
            wt::update_16_receivers,
        ),
        run("watch/read-latest", TOKIO, 10_000_000, wt::read_latest),
        run(
            "watch/read-while-sending",
            TOKIO,
            1_000_000,
            wt::read_while_sending,
        ),
    ]
}

/// The channel rows (src/channels.rs).
fn channel_rows() -> Vec<Row> {
    let mut rows = vec![
        run("channel/try-send-try-recv", TOKIO, 10_000_000, ch::try_tokio),
        run("channel/try-send-try-recv", ASYNC_CHANNEL, 10_000_000, ch::try_async_channel),
        run("channel/try-send-try-recv", FLUME, 10_000_000, ch::try_flume),
        run("channel/try-send-try-recv", CROSSBEAM, 10_000_000, ch::try_crossbeam),
        run("channel/ping-pong", TOKIO_CT, 1_000_000, ch::ping_pong_tokio),
        run("channel/ping-pong", ASYNC_CHANNEL, 1_000_000, ch::ping_pong_async_channel),
        run("channel/ping-pong", FLUME, 1_000_000, ch::ping_pong_flume),
        unsupported("channel/ping-pong", CROSSBEAM, 1_000_000, CROSSBEAM_BLOCKING_ONLY),
        unsupported("channel/rendezvous-ping-pong", TOKIO_CT, 1_000_000, ZERO_CAPACITY_PANICS_TOKIO),
        unsupported(
            "channel/rendezvous-ping-pong",
            ASYNC_CHANNEL,
            1_000_000,
            ZERO_CAPACITY_PANICS_ASYNC_CHANNEL,
        ),
        run("channel/rendezvous-ping-pong", FLUME, 1_000_000, ch::rendezvous_ping_pong_flume),
        unsupported("channel/rendezvous-ping-pong", CROSSBEAM, 1_000_000, CROSSBEAM_BLOCKING_ONLY),
        run("channel/spsc-cap-1", CROSSBEAM, 1_000_000, ch::crossbeam_threads::<1, 1, 1>),
        run("channel/spsc-cap-1", FLUME_BLOCKING, 1_000_000, ch::flume_threads::<1, 1, 1>),
        run("channel/spsc-cap-1", STD_SYNC_CHANNEL, 1_000_000, ch::std_threads::<1>),
        run("channel/spsc-cap-64", CROSSBEAM, 1_000_000, ch::crossbeam_threads::<1, 1, 64>),
        run("channel/spsc-cap-64", FLUME_BLOCKING, 1_000_000, ch::flume_threads::<1, 1, 64>),
        run("channel/spsc-cap-64", STD_SYNC_CHANNEL, 1_000_000, ch::std_threads::<64>),
        run("channel/spsc-cap-1024", CROSSBEAM, 1_000_000, ch::crossbeam_threads::<1, 1, 1024>),
        run("channel/spsc-cap-1024", FLUME_BLOCKING, 1_000_000, ch::flume_threads::<1, 1, 1024>),
        run("channel/spsc-cap-1024", STD_SYNC_CHANNEL, 1_000_000, ch::std_threads::<1024>),
    ];
    macro_rules! multi {
        ($name:literal, $p:literal, $c:literal) => {
            rows.push(run($name, CROSSBEAM, 200_000, ch::crossbeam_threads::<$p, $c, 64>));
            rows.push(run($name, FLUME_BLOCKING, 200_000, ch::flume_threads::<$p, $c, 64>));
            rows.push(run($name, FLUME, 200_000, ch::flume_tasks::<$p, $c>));
            rows.push(run($name, ASYNC_CHANNEL, 200_000, ch::async_channel_tasks::<$p, $c>));
            if $c == 1 {
                rows.push(run($name, TOKIO, 200_000, ch::tokio_tasks::<$p, 1>));
            } else {
                rows.push(unsupported($name, TOKIO, 200_000, TOKIO_ONE_RECEIVER));
            }
        };
    }
    multi!("channel/mpsc-4-to-1", 4, 1);
    multi!("channel/mpsc-16-to-1", 16, 1);
    multi!("channel/spmc-1-to-4", 1, 4);
    multi!("channel/mpmc-4-to-4", 4, 4);
    multi!("channel/mpmc-16-to-16", 16, 16);
    rows
}

pub fn rows() -> Vec<Row> {
    let mut rows = vec![
        // --- primitives, single thread, no-op waker -------------------------
        run(
            "semaphore/pending-handoff",
            TOKIO,
            3_000_000,
            tokio_peer::semaphore_pending_handoff,
        ),
        unsupported(
            "semaphore/pending-handoff",
            ASYNC_LOCK,
            3_000_000,
            NO_ADD_PERMITS,
        ),
        run(
            "semaphore/reused-handoff",
            TOKIO,
            3_000_000,
            tokio_peer::semaphore_reused_handoff,
        ),
        unsupported(
            "semaphore/reused-handoff",
            ASYNC_LOCK,
            3_000_000,
            NO_ADD_PERMITS,
        ),
        run(
            "semaphore/reused-handoff-guard-drop",
            TOKIO,
            3_000_000,
            tokio_peer::semaphore_reused_handoff_guard_drop,
        ),
        run(
            "semaphore/reused-handoff-guard-drop",
            ASYNC_LOCK,
            3_000_000,
            async_lock_peer::semaphore_reused_handoff_guard_drop,
        ),
        run(
            "semaphore/try-one-and-return",
            TOKIO,
            30_000_000,
            tokio_peer::semaphore_try_one_and_return,
        ),
        run(
            "semaphore/try-one-and-return",
            ASYNC_LOCK,
            30_000_000,
            async_lock_peer::semaphore_try_one_and_return,
        ),
        run(
            "mutex/uncontended-reuse",
            TOKIO,
            24_000_000,
            tokio_peer::mutex_uncontended_reuse,
        ),
        run(
            "mutex/uncontended-reuse",
            ASYNC_LOCK,
            24_000_000,
            async_lock_peer::mutex_uncontended_reuse,
        ),
        run(
            "mutex/four-queued-waiters",
            TOKIO,
            1_250_000,
            tokio_peer::mutex_four_queued_waiters,
        ),
        run(
            "mutex/four-queued-waiters",
            ASYNC_LOCK,
            1_250_000,
            async_lock_peer::mutex_four_queued_waiters,
        ),
        run(
            "notify/fresh-one-waiter",
            TOKIO,
            2_000_000,
            tokio_peer::notify_fresh_one_waiter,
        ),
        run(
            "notify/fresh-one-waiter",
            EVENT_LISTENER,
            2_000_000,
            event_listener_peer::notify_fresh_one_waiter,
        ),
        run(
            "notify/reused-one-waiter",
            TOKIO,
            2_000_000,
            tokio_peer::notify_reused_one_waiter,
        ),
        run(
            "notify/reused-one-waiter",
            EVENT_LISTENER,
            2_000_000,
            event_listener_peer::notify_reused_one_waiter,
        ),
        run(
            "event/fan-out-16",
            TOKIO,
            200_000,
            tokio_peer::event_fan_out_16,
        ),
        run(
            "event/fan-out-16",
            EVENT_LISTENER,
            200_000,
            event_listener_peer::event_fan_out_16,
        ),
        unsupported(
            "condvar/notify-one-waiter",
            TOKIO,
            2_000_000,
            "Tokio 1.24 has no async condition variable; a Notify+Mutex construction would be \
             our own algorithm, not Tokio's",
        ),
        unsupported(
            "condvar/notify-one-waiter",
            ASYNC_LOCK,
            2_000_000,
            "async-lock 2.6 and event-listener 2.5 have no condition variable",
        ),
        // --- read-write lock, barrier, once-cell (src/rwlock_barrier_once.rs) --
        run(
            "rwlock/uncontended-read",
            TOKIO,
            12_000_000,
            rbo::rwlock_uncontended_read::<tokio::sync::RwLock<()>>,
        ),
        run(
            "rwlock/uncontended-read",
            ASYNC_LOCK,
            12_000_000,
            rbo::rwlock_uncontended_read::<async_lock::RwLock<()>>,
        ),
        run(
            "rwlock/uncontended-write",
            TOKIO,
            12_000_000,
            rbo::rwlock_uncontended_write::<tokio::sync::RwLock<()>>,
        ),
        run(
            "rwlock/uncontended-write",
            ASYNC_LOCK,
            12_000_000,
            rbo::rwlock_uncontended_write::<async_lock::RwLock<()>>,
        ),
        run(
            "rwlock/write-queued-behind-readers",
            TOKIO,
            1_250_000,
            rbo::rwlock_write_queued_behind_readers::<tokio::sync::RwLock<()>>,
        ),
        run(
            "rwlock/write-queued-behind-readers",
            ASYNC_LOCK,
            1_250_000,
            rbo::rwlock_write_queued_behind_readers::<async_lock::RwLock<()>>,
        ),
        run(
            "barrier/generation-of-8",
            TOKIO,
            500_000,
            rbo::barrier_generation_of_8::<tokio::sync::Barrier>,
        ),
        run(
            "barrier/generation-of-8",
            ASYNC_LOCK,
            500_000,
            rbo::barrier_generation_of_8::<async_lock::Barrier>,
        ),
        run(
            "once/16-waiters",
            TOKIO,
            200_000,
            rbo::once_16_waiters::<tokio::sync::OnceCell<u64>>,
        ),
        run(
            "once/16-waiters",
            ASYNC_LOCK,
            200_000,
            rbo::once_16_waiters::<async_lock::OnceCell<u64>>,
        ),
        run(
            "baseline/cas-acquire+store-release",
            RUST_STD,
            24_000_000,
            std_baseline::cas_acquire_store_release,
        ),
        // --- executor rows, real wakers --------------------------------------
        run("executor/create", TOKIO_CT, 100_000, tokio_ct::create),
        run(
            "executor/create",
            ASYNC_EXECUTOR,
            100_000,
            async_exec::create,
        ),
        run(
            "executor/spawn-one",
            TOKIO_CT,
            1_000_000,
            tokio_ct::spawn_one,
        ),
        run(
            "executor/spawn-one",
            ASYNC_EXECUTOR,
            1_000_000,
            async_exec::spawn_one,
        ),
        run(
            "executor/spawn-batch",
            TOKIO_CT,
            10_000,
            tokio_ct::spawn_batch,
        ),
        run(
            "executor/spawn-batch",
            ASYNC_EXECUTOR,
            10_000,
            async_exec::spawn_batch,
        ),
        run(
            "executor/spawn-many-local",
            TOKIO_CT,
            30,
            tokio_ct::spawn_many_local,
        ),
        run(
            "executor/spawn-many-local",
            ASYNC_EXECUTOR,
            30,
            async_exec::spawn_many_local,
        ),
        run(
            "executor/spawn-recursively",
            TOKIO_CT,
            10,
            tokio_ct::spawn_recursively,
        ),
        run(
            "executor/spawn-recursively",
            ASYNC_EXECUTOR,
            10,
            async_exec::spawn_recursively,
        ),
        run(
            "loop/ping-pong-same-thread",
            TOKIO_CT,
            1_000_000,
            tokio_ct::ping_pong_same_thread,
        ),
        run("executor/yield-now", TOKIO_CT, 40, tokio_ct::yield_now_row),
        run(
            "executor/yield-now",
            ASYNC_EXECUTOR,
            40,
            async_exec::yield_now_row,
        ),
        run("executor/channels", TOKIO_CT, 20, tokio_ct::channels),
        run(
            "executor/channels",
            ASYNC_EXECUTOR,
            20,
            async_exec::channels,
        ),
        run(
            "executor/queued-handoff",
            TOKIO_CT,
            300_000,
            tokio_ct::queued_handoff,
        ),
        run(
            "executor/queued-handoff",
            ASYNC_EXECUTOR,
            300_000,
            async_exec::queued_handoff,
        ),
        run(
            "notify/fan-out-10",
            TOKIO_CT,
            100_000,
            tokio_ct::notify_fan_out::<10>,
        ),
        run(
            "notify/fan-out-10",
            ASYNC_EXECUTOR,
            100_000,
            async_exec::notify_fan_out::<10>,
        ),
        run(
            "notify/fan-out-100",
            TOKIO_CT,
            10_000,
            tokio_ct::notify_fan_out::<100>,
        ),
        run(
            "notify/fan-out-100",
            ASYNC_EXECUTOR,
            10_000,
            async_exec::notify_fan_out::<100>,
        ),
        run(
            "notify/fan-out-500",
            TOKIO_CT,
            2_000,
            tokio_ct::notify_fan_out::<500>,
        ),
        run(
            "notify/fan-out-500",
            ASYNC_EXECUTOR,
            2_000,
            async_exec::notify_fan_out::<500>,
        ),
        // --- contention rows, N threads ---------------------------------------
        run("contention/mutex-N-threads", TOKIO, 10_000, tokio_mt::mutex),
        run(
            "contention/mutex-N-threads",
            ASYNC_LOCK,
            10_000,
            smol_mt::mutex,
        ),
        run(
            "contention/semaphore-N-threads",
            TOKIO,
            10_000,
            tokio_mt::semaphore,
        ),
        run(
            "contention/semaphore-N-threads",
            ASYNC_LOCK,
            10_000,
            smol_mt::semaphore,
        ),
    ];
    rows.extend(rwlock_contention_rows());
    rows.extend(channel_rows());
    rows.extend([
        run("broadcast/fan-out-4", TOKIO, 4_000_000, bc::fan_out_4_tokio),
        run("broadcast/fan-out-4", ASYNC_BROADCAST, 4_000_000, bc::fan_out_4_async_broadcast),
        run("broadcast/fan-out-16", TOKIO, 1_000_000, bc::fan_out_16_tokio),
        run("broadcast/fan-out-16", ASYNC_BROADCAST, 1_000_000, bc::fan_out_16_async_broadcast),
        run("broadcast/fan-out-64", TOKIO, 250_000, bc::fan_out_64_tokio),
        run("broadcast/fan-out-64", ASYNC_BROADCAST, 250_000, bc::fan_out_64_async_broadcast),
        run("broadcast/lagging-receiver", TOKIO, 1_000_000, bc::lagging_receiver_tokio),
        run("broadcast/fan-out-16-threads", TOKIO, 1_000_000, bc::fan_out_16_threads_tokio),
        run(
            "broadcast/fan-out-16-threads-backpressure",
            ASYNC_BROADCAST,
            250_000,
            bc::fan_out_16_threads_backpressure_async_broadcast,
        ),
    ]);
    rows.extend(watch_rows());
    rows.extend(crate::select::rows());
    rows
}

/// The read-write lock's contention rows (src/rwlock_contention.rs).
fn rwlock_contention_rows() -> Vec<Row> {
    use crate::rwlock_contention::{smol_mt as rs, tokio_mt as rt, MIXED, READ_MOSTLY, WRITE_HEAVY};
    const READ_MOSTLY_ROW: &str = "contention/rwlock-read-mostly-N-threads";
    const MIXED_ROW: &str = "contention/rwlock-mixed-N-threads";
    const WRITE_HEAVY_ROW: &str = "contention/rwlock-write-heavy-N-threads";
    vec![
        run(READ_MOSTLY_ROW, TOKIO, 1_000, rt::rwlock::<READ_MOSTLY>),
        run(READ_MOSTLY_ROW, ASYNC_LOCK, 1_000, rs::rwlock::<READ_MOSTLY>),
        run(MIXED_ROW, TOKIO, 1_000, rt::rwlock::<MIXED>),
        run(MIXED_ROW, ASYNC_LOCK, 1_000, rs::rwlock::<MIXED>),
        run(WRITE_HEAVY_ROW, TOKIO, 1_000, rt::rwlock::<WRITE_HEAVY>),
        run(WRITE_HEAVY_ROW, ASYNC_LOCK, 1_000, rs::rwlock::<WRITE_HEAVY>),
    ]
}
