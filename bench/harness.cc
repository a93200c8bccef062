// SPDX-License-Identifier: Apache-2.0
//
// bench/harness.cc - main(), the command line, the allocation counter and the
// registry shared by every benchmark binary.  See harness.h.
#include "harness.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

// ------------------------------------------------------------ allocation counter
//
// The benchmark binaries interpose the allocator: every malloc, calloc,
// realloc and aligned allocation of the process (the library's, libstdc++'s,
// google-benchmark's) comes here and goes on to glibc's own implementation.
// Like bench/peers' counting allocator, frees are not counted, counting is on
// only during the warm-up batch, and a timed batch pays one relaxed load per
// allocation (the primitives make none).

extern "C" {
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void __libc_free(void *);
}

namespace {
// relaxed: a statistic read by the same thread after the work it counts, or
// after joining the threads that did it (the join orders it).
std::atomic<uint64_t> g_allocations{0};
std::atomic<bool> g_counting{false};

inline void count_one()
{
	if (g_counting.load(std::memory_order_relaxed))
		g_allocations.fetch_add(1, std::memory_order_relaxed);
}
} // namespace

extern "C" {
void *malloc(size_t n) noexcept
{
	count_one();
	return __libc_malloc(n);
}
void *calloc(size_t n, size_t size) noexcept
{
	count_one();
	return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n) noexcept
{
	count_one();
	return __libc_realloc(p, n);
}
void *memalign(size_t align, size_t n) noexcept
{
	count_one();
	return __libc_memalign(align, n);
}
void *aligned_alloc(size_t align, size_t n) noexcept
{
	count_one();
	return __libc_memalign(align, n);
}
int posix_memalign(void **out, size_t align, size_t n) noexcept
{
	count_one();
	void *p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}
void free(void *p) noexcept
{
	__libc_free(p);
}
}

namespace sbb {

uint64_t allocations()
{
	return g_allocations.load(std::memory_order_relaxed);
}

void set_counting(bool on)
{
	g_counting.store(on, std::memory_order_relaxed);
}

// ------------------------------------------------------------ checks

namespace {
std::string g_current = "?"; // "<scenario> <impl>" being run, for messages
}

void wrong_result(const char *step, long expected, long got)
{
	fflush(stdout);
	fprintf(stderr, "wrong result in %s at step `%s`: expected %ld, got %ld\n",
		g_current.c_str(), step, expected, got);
	abort();
}

// ------------------------------------------------------------ registry

namespace {
const char THREADS_PLACEHOLDER[] = "-N-threads";

std::vector<Row> &rows()
{
	static std::vector<Row> r;
	return r;
}

bool has_threads(const Row &row)
{
	size_t n = strlen(row.scenario), k = strlen(THREADS_PLACEHOLDER);
	return n > k && strcmp(row.scenario + n - k, THREADS_PLACEHOLDER) == 0;
}

// The row's name with the thread count filled in.
std::string row_name(const Row &row, unsigned threads)
{
	if (!has_threads(row))
		return row.scenario;
	std::string stem(row.scenario, strlen(row.scenario) - strlen(THREADS_PLACEHOLDER));
	return stem + "-" + std::to_string(threads) + "-threads";
}

// Whether `name` names this row; *threads receives the count it names
// (0 for a literal "N" or a row without threads).
bool row_matches(const Row &row, const std::string &name, unsigned *threads)
{
	*threads = 0;
	if (!has_threads(row))
		return name == row.scenario;
	std::string stem(row.scenario, strlen(row.scenario) - strlen(THREADS_PLACEHOLDER));
	const std::string suffix = "-threads";
	if (name.size() <= stem.size() + 1 + suffix.size() || name.compare(0, stem.size(), stem) != 0 ||
	    name[stem.size()] != '-' ||
	    name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
		return false;
	std::string n = name.substr(stem.size() + 1, name.size() - stem.size() - 1 - suffix.size());
	if (n == "N")
		return true;
	if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos || n.size() > 4)
		return false;
	*threads = (unsigned)std::stoul(n);
	return *threads > 0;
}

std::string format_allocs(double per_round)
{
	char buf[64];
	snprintf(buf, sizeof buf, "%.3f", per_round);
	std::string s = buf;
	while (!s.empty() && s.back() == '0')
		s.pop_back();
	if (!s.empty() && s.back() == '.')
		s.pop_back();
	return s.empty() ? "0" : s;
}

double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	size_t n = v.size();
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

[[noreturn]] void usage(const char *prog, const char *why)
{
	fprintf(stderr,
		"%s: %s\n"
		"usage: %s --list\n"
		"       %s --run <scenario> [<impl>] [--batches B] [--rounds R] [--threads N] "
		"[--permits K] [--once | --waits]\n"
		"       %s [google-benchmark flags, e.g. --benchmark_filter=REGEX]\n",
		prog, why, prog, prog, prog);
	exit(2);
}

bool parse_u64(const char *s, uint64_t *out)
{
	if (!s || !*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 18)
		return false;
	*out = strtoull(s, nullptr, 10);
	return *out > 0;
}

int cmd_list()
{
	for (const Row &row : rows())
		printf("%s %s %llu\n", row_name(row, DEFAULT_THREADS).c_str(), row.impl,
		       (unsigned long long)row.rounds);
	return 0;
}

int cmd_run(const char *prog, int argc, char **argv)
{
	if (argc < 1)
		usage(prog, "--run needs a scenario");
	std::string scenario = argv[0];
	std::string impl;
	int i = 1;
	if (i < argc && strncmp(argv[i], "--", 2) != 0)
		impl = argv[i++];
	uint64_t batches = 1, rounds = 0, threads = 0, permits = DEFAULT_PERMITS;
	bool once = false, waits = false;
	while (i < argc) {
		const char *flag = argv[i++];
		if (!strcmp(flag, "--once")) {
			once = true;
			continue;
		}
		if (!strcmp(flag, "--waits")) {
			waits = true;
			continue;
		}
		const char *value = i < argc ? argv[i++] : nullptr;
		uint64_t *slot = !strcmp(flag, "--batches")   ? &batches
				 : !strcmp(flag, "--rounds")  ? &rounds
				 : !strcmp(flag, "--threads") ? &threads
				 : !strcmp(flag, "--permits") ? &permits
							      : nullptr;
		if (!slot)
			usage(prog, (std::string("unknown option: ") + flag).c_str());
		if (!parse_u64(value, slot))
			usage(prog, (std::string(flag) + " needs a number of at least 1").c_str());
	}
	if (threads > 1024 || permits > 1000000)
		usage(prog, "--threads or --permits out of range");
	if (once && waits)
		usage(prog, "--once and --waits exclude each other");

	const Row *found = nullptr;
	unsigned named = 0;
	for (const Row &row : rows()) {
		unsigned n;
		if (!row_matches(row, scenario, &n))
			continue;
		// Without an impl: syncband's row, or the scenario's only row.
		if (impl.empty() ? (!strcmp(row.impl, SYNCBAND) || !found) : impl == row.impl) {
			found = &row;
			named = n;
		}
	}
	if (!found)
		usage(prog, ("unknown pair: " + scenario + " " + impl + " (see --list)").c_str());
	const Row &row = *found;
	if (threads && !has_threads(row))
		usage(prog, "--threads applies only to the -N-threads rows");
	if (named && threads && named != threads)
		usage(prog, "the scenario's name and --threads disagree");
	Params p{rounds ? rounds : row.rounds,
		 (unsigned)(named ? named : threads ? threads : DEFAULT_THREADS), (unsigned)permits};
	std::string name = row_name(row, p.threads);
	g_current = name + " " + row.impl;

	if (waits) {
		// One batch, no warm-up, every acquire timed; its own time is
		// slowed by the clock reads and not reported.
		// (Static: three histograms of 9.5 KiB each stay off the stack.)
		static WaitHistogram histogram, reads, writes;
		Meter m(&histogram, &reads, &writes);
		row.batch(p, m);
		if (histogram.count() == 0)
			usage(prog, "--waits: this row does not time its waits");
		printf("WAITS %s %s p50_ns=%llu p99_ns=%llu max_ns=%llu acquires=%llu", name.c_str(),
		       row.impl, (unsigned long long)histogram.percentile(0.50),
		       (unsigned long long)histogram.percentile(0.99),
		       (unsigned long long)histogram.max(), (unsigned long long)histogram.count());
		// The rows that time their read and write locks apart.
		if (reads.count() + writes.count() > 0)
			printf(" read_p50_ns=%llu read_p99_ns=%llu read_max_ns=%llu reads=%llu"
			       " write_p50_ns=%llu write_p99_ns=%llu write_max_ns=%llu writes=%llu",
			       (unsigned long long)reads.percentile(0.50),
			       (unsigned long long)reads.percentile(0.99),
			       (unsigned long long)reads.max(), (unsigned long long)reads.count(),
			       (unsigned long long)writes.percentile(0.50),
			       (unsigned long long)writes.percentile(0.99),
			       (unsigned long long)writes.max(), (unsigned long long)writes.count());
		printf("\n");
		fflush(stdout);
		return 0;
	}

	if (once) {
		// One batch, no warm-up: it counts the allocations and is timed.
		Meter m;
		set_counting(true);
		uint64_t units = row.batch(p, m);
		set_counting(false);
		double ns = (double)m.elapsed_ns() / (double)units;
		printf("BATCH %s %s %.3f\n", name.c_str(), row.impl, ns);
		printf("RESULT %s %s %.3f allocs_per_round=%s\n", name.c_str(), row.impl, ns,
		       format_allocs((double)m.allocs() / (double)units).c_str());
		fflush(stdout);
		return 0;
	}

	// Warm-up: untimed for the result, and the only batch that counts
	// allocations.
	Meter warm;
	set_counting(true);
	uint64_t units = row.batch(p, warm);
	set_counting(false);
	double allocs_per_round = (double)warm.allocs() / (double)units;

	std::vector<double> samples;
	for (uint64_t b = 0; b < batches; b++) {
		Meter m;
		units = row.batch(p, m);
		double ns = (double)m.elapsed_ns() / (double)units;
		printf("BATCH %s %s %.3f\n", name.c_str(), row.impl, ns);
		fflush(stdout);
		samples.push_back(ns);
	}
	printf("RESULT %s %s %.3f allocs_per_round=%s\n", name.c_str(), row.impl,
	       median(samples), format_allocs(allocs_per_round).c_str());
	fflush(stdout);
	return 0;
}

int cmd_gbench(int argc, char **argv)
{
	for (const Row &row : rows()) {
		std::string name = row_name(row, DEFAULT_THREADS) + "/" + row.impl;
		auto *b = benchmark::RegisterBenchmark(name.c_str(), row.gbench);
		if (row.per_round)
			b->Iterations((benchmark::IterationCount)row.rounds);
		else
			b->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
	}
	benchmark::Initialize(&argc, argv);
	if (benchmark::ReportUnrecognizedArguments(argc, argv))
		return 2;
	benchmark::RunSpecifiedBenchmarks();
	benchmark::Shutdown();
	return 0;
}

void *nothing(void *)
{
	return nullptr;
}

} // namespace

void add_row(const Row &row)
{
	rows().push_back(row);
}

} // namespace sbb

int main(int argc, char **argv)
{
	// glibc 2.34+ skips the atomic instructions of pthread_mutex_lock/unlock
	// (and of other paths) while the process has never created a thread.  A
	// server is multi-threaded, so every benchmark binary creates and joins
	// one thread before anything is measured: the pthread baselines, and
	// everything else, then run as they would in a real multi-threaded
	// process.  (The flag never goes back once a thread was created.)
	pthread_t t;
	if (pthread_create(&t, nullptr, sbb::nothing, nullptr) != 0 || pthread_join(t, nullptr) != 0) {
		fprintf(stderr, "%s: cannot create the start-up thread\n", argv[0]);
		return 1;
	}

	if (argc >= 2 && !strcmp(argv[1], "--list")) {
		if (argc != 2)
			sbb::usage(argv[0], "--list takes no arguments");
		return sbb::cmd_list();
	}
	if (argc >= 2 && !strcmp(argv[1], "--run"))
		return sbb::cmd_run(argv[0], argc - 2, argv + 2);
	return sbb::cmd_gbench(argc, argv);
}
