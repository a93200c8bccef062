// SPDX-License-Identifier: Apache-2.0
//
// go-peers: the channel rows of bench/README.md on Go's own channels, with
// the command line and output lines of bench/peers and the bench_* binaries,
// so that bench/run.py runs it as one more peer.  Standard library only;
// ./x bench builds it offline into build/bench/go-peers.  Its rows are shown
// as context: no target reads them.
//
//	go-peers list                 <scenario> go <default rounds>, one a line
//	go-peers unsupported          (none)
//	go-peers run <scenario> go [--batches B] [--rounds R] [--once | --waits]
//
// Items are uint64: producer p sends p<<32 | seq; receivers check each
// producer's order and add up count, sum and sum of squares, which must
// equal what was sent (bench/channel.cc does the same).  The last producer
// closes the channel; receivers run until it is closed and drained.
// Single-thread rows (try-send-try-recv, the ping-pongs) run with
// GOMAXPROCS(1): both goroutines on one P, the "one loop" of the scenario.
package main

import (
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const impl = "go"

// ------------------------------------------------------------ meter

type meter struct {
	elapsed    time.Duration
	allocs     uint64
	started    time.Time
	allocsThen uint64
	counting   bool
	waits      *histogram
}

func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

func (m *meter) start() {
	if m.counting {
		m.allocsThen = mallocs()
	}
	m.started = time.Now()
}

func (m *meter) stop() {
	m.elapsed += time.Since(m.started)
	if m.counting {
		m.allocs += mallocs() - m.allocsThen
	}
}

// ------------------------------------------------------------ waits

// The log-linear histogram of bench/harness.h: exact below 32 ns, then 32
// buckets per power of two; a percentile is its bucket's upper edge.
const (
	subBits = 5
	topBit  = 40
	buckets = (topBit - subBits + 2) << subBits
)

type histogram struct {
	counts [buckets]uint64
	max    uint64
}

func bucket(ns uint64) int {
	if ns < 1<<subBits {
		return int(ns)
	}
	top := uint(63 - bits.LeadingZeros64(ns))
	if top > topBit {
		return buckets - 1
	}
	shift := top - subBits
	return int((uint64(shift+1) << subBits) | ((ns >> shift) & ((1 << subBits) - 1)))
}

func upperEdge(i int) uint64 {
	group, sub := i>>subBits, uint64(i&((1<<subBits)-1))
	if group == 0 {
		return sub
	}
	return (((1 << subBits) + sub + 1) << uint(group-1)) - 1
}

func (h *histogram) record(since time.Time) {
	ns := uint64(time.Since(since))
	h.counts[bucket(ns)]++
	if ns > h.max {
		h.max = ns
	}
}

func (h *histogram) merge(o *histogram) {
	for i := range h.counts {
		h.counts[i] += o.counts[i]
	}
	if o.max > h.max {
		h.max = o.max
	}
}

func (h *histogram) count() uint64 {
	var n uint64
	for _, c := range h.counts {
		n += c
	}
	return n
}

func (h *histogram) percentile(q float64) uint64 {
	n := h.count()
	if n == 0 {
		return 0
	}
	want := q * float64(n)
	rank := uint64(want)
	if float64(rank) < want {
		rank++
	}
	if rank == 0 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			if i+1 < buckets && upperEdge(i) < h.max {
				return upperEdge(i)
			}
			return h.max
		}
	}
	return h.max
}

// ------------------------------------------------------------ checks

const maxProducers = 16

type received struct {
	count, sum, squares uint64
	nextSeq             [maxProducers]uint64
}

func (r *received) take(v uint64) {
	p, seq := v>>32, v&0xffffffff
	if p >= maxProducers || seq < r.nextSeq[p] {
		wrong("one producer's items arrive in order")
	}
	r.nextSeq[p] = seq + 1
	r.count++
	r.sum += v
	r.squares += v * v
}

func itemsOf(total uint64, producers, p int) uint64 {
	n := total / uint64(producers)
	if uint64(p) < total%uint64(producers) {
		n++
	}
	return n
}

func checkReceived(rs []received, total uint64, producers int) {
	var count, sum, squares, wantSum, wantSquares uint64
	for i := range rs {
		count += rs[i].count
		sum += rs[i].sum
		squares += rs[i].squares
	}
	for p := 0; p < producers; p++ {
		for i, n := uint64(0), itemsOf(total, producers, p); i < n; i++ {
			v := uint64(p)<<32 | i
			wantSum += v
			wantSquares += v * v
		}
	}
	if count != total {
		wrong(fmt.Sprintf("every item received (count): expected %d, got %d", total, count))
	}
	if sum != wantSum || squares != wantSquares {
		wrong("every item received once (sum, sum of squares)")
	}
}

var current = "?"

func wrong(step string) {
	fmt.Fprintf(os.Stderr, "wrong result in %s at step `%s`\n", current, step)
	os.Exit(134)
}

// ------------------------------------------------------------ scenarios

type batchFn func(rounds uint64, m *meter) uint64

// try_send + try_recv on a capacity-16 channel (select with default).
func trySendTryRecv(rounds uint64, m *meter) uint64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ch := make(chan uint64, 16)
	m.start()
	for v := uint64(0); v < rounds; v++ {
		select {
		case ch <- v:
		default:
			wrong("try_send into an empty channel")
		}
		select {
		case got := <-ch:
			if got != v {
				wrong("the item received is the item sent")
			}
		default:
			wrong("try_recv of the item")
		}
	}
	m.stop()
	if len(ch) != 0 {
		wrong("the channel is empty")
	}
	return rounds
}

// Two goroutines on one P hand an item back and forth; a round is a round trip.
func pingPong(capacity int) batchFn {
	return func(rounds uint64, m *meter) uint64 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		ab, ba := make(chan uint64, capacity), make(chan uint64, capacity)
		var out uint64
		done := make(chan struct{})
		m.start()
		go func() {
			for i := uint64(0); i < rounds; i++ {
				v := <-ab
				ba <- v + 1
			}
			close(done)
		}()
		for i := uint64(0); i < rounds; i++ {
			ab <- out
			if <-ba != out+1 {
				wrong("the pong is the ping + 1")
			}
			out += 2
		}
		<-done
		m.stop()
		if out != 2*rounds {
			wrong("every round trip ran")
		}
		return rounds
	}
}

// P producer and C receiver goroutines on a channel of `capacity`, started
// before the segment and released by closing `start`.
func threads(producers, consumers, capacity int) batchFn {
	return func(total uint64, m *meter) uint64 {
		ch := make(chan uint64, capacity)
		start := make(chan struct{})
		var ready, finished sync.WaitGroup
		left := int32(producers)
		rs := make([]received, consumers)
		var hs []histogram
		if m.waits != nil {
			hs = make([]histogram, consumers)
		}
		ready.Add(producers + consumers)
		finished.Add(producers + consumers)
		for c := 0; c < consumers; c++ {
			go func(c int) {
				defer finished.Done()
				var r received
				var h *histogram
				if hs != nil {
					h = &hs[c]
				}
				ready.Done()
				<-start
				for {
					var t time.Time
					if h != nil {
						t = time.Now()
					}
					v, ok := <-ch
					if !ok {
						break
					}
					if h != nil {
						h.record(t)
					}
					r.take(v)
				}
				rs[c] = r
			}(c)
		}
		for q := 0; q < producers; q++ {
			go func(q int) {
				defer finished.Done()
				n := itemsOf(total, producers, q)
				ready.Done()
				<-start
				for i := uint64(0); i < n; i++ {
					ch <- uint64(q)<<32 | i
				}
				if atomic.AddInt32(&left, -1) == 0 {
					close(ch)
				}
			}(q)
		}
		ready.Wait()
		m.start()
		close(start)
		finished.Wait()
		m.stop()
		for i := range hs {
			m.waits.merge(&hs[i])
		}
		checkReceived(rs, total, producers)
		return total
	}
}

type row struct {
	scenario string
	rounds   uint64
	batch    batchFn
	waits    bool
}

var rows = []row{
	{"channel/try-send-try-recv", 10000000, trySendTryRecv, false},
	{"channel/ping-pong", 1000000, pingPong(1), false},
	{"channel/rendezvous-ping-pong", 1000000, pingPong(0), false},
	{"channel/spsc-cap-1", 1000000, threads(1, 1, 1), false},
	{"channel/spsc-cap-64", 1000000, threads(1, 1, 64), false},
	{"channel/spsc-cap-1024", 1000000, threads(1, 1, 1024), false},
	{"channel/mpsc-4-to-1", 200000, threads(4, 1, 64), true},
	{"channel/mpsc-16-to-1", 200000, threads(16, 1, 64), true},
	{"channel/spmc-1-to-4", 200000, threads(1, 4, 64), true},
	{"channel/mpmc-4-to-4", 200000, threads(4, 4, 64), true},
	{"channel/mpmc-16-to-16", 200000, threads(16, 16, 64), true},
}

// ------------------------------------------------------------ command line

func usage(why string) {
	fmt.Fprintf(os.Stderr, "go-peers: %s\nusage: go-peers list | unsupported | "+
		"run <scenario> go [--batches B] [--rounds R] [--once | --waits]\n", why)
	os.Exit(2)
}

func formatAllocs(x float64) string {
	s := strconv.FormatFloat(x, 'f', 3, 64)
	for len(s) > 0 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	if s == "" {
		return "0"
	}
	return s
}

func median(v []float64) float64 {
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

func run(args []string) {
	if len(args) < 2 {
		usage("run needs <scenario> <impl>")
	}
	scenario, name := args[0], args[1]
	batches, rounds := uint64(1), uint64(0)
	once, waits := false, false
	for i := 2; i < len(args); i++ {
		switch args[i] {
		case "--once":
			once = true
		case "--waits":
			waits = true
		case "--batches", "--rounds", "--threads", "--permits":
			if i+1 >= len(args) {
				usage(args[i] + " needs a value")
			}
			n, err := strconv.ParseUint(args[i+1], 10, 64)
			if err != nil || n == 0 {
				usage(args[i] + " needs a number of at least 1")
			}
			if args[i] == "--batches" {
				batches = n
			} else if args[i] == "--rounds" {
				rounds = n
			} else {
				usage(args[i] + " applies to no go row")
			}
			i++
		default:
			usage("unknown option: " + args[i])
		}
	}
	if once && waits {
		usage("--once and --waits exclude each other")
	}
	var r *row
	for i := range rows {
		if rows[i].scenario == scenario && name == impl {
			r = &rows[i]
		}
	}
	if r == nil {
		usage("unknown pair: " + scenario + " " + name + " (see list)")
	}
	if rounds == 0 {
		rounds = r.rounds
	}
	current = scenario + " " + impl
	if waits {
		if !r.waits {
			usage("--waits: this row does not time its waits")
		}
		m := meter{waits: &histogram{}}
		r.batch(rounds, &m)
		h := m.waits
		fmt.Printf("WAITS %s %s p50_ns=%d p99_ns=%d max_ns=%d acquires=%d\n", scenario, impl,
			h.percentile(0.50), h.percentile(0.99), h.max, h.count())
		return
	}
	if once {
		m := meter{counting: true}
		units := r.batch(rounds, &m)
		ns := float64(m.elapsed.Nanoseconds()) / float64(units)
		fmt.Printf("BATCH %s %s %.3f\n", scenario, impl, ns)
		fmt.Printf("RESULT %s %s %.3f allocs_per_round=%s\n", scenario, impl, ns,
			formatAllocs(float64(m.allocs)/float64(units)))
		return
	}
	warm := meter{counting: true}
	units := r.batch(rounds, &warm)
	allocs := float64(warm.allocs) / float64(units)
	var samples []float64
	for b := uint64(0); b < batches; b++ {
		m := meter{}
		units := r.batch(rounds, &m)
		ns := float64(m.elapsed.Nanoseconds()) / float64(units)
		fmt.Printf("BATCH %s %s %.3f\n", scenario, impl, ns)
		samples = append(samples, ns)
	}
	fmt.Printf("RESULT %s %s %.3f allocs_per_round=%s\n", scenario, impl, median(samples),
		formatAllocs(allocs))
}

func main() {
	args := os.Args[1:]
	switch {
	case len(args) == 1 && args[0] == "list":
		for _, r := range rows {
			fmt.Printf("%s %s %d\n", r.scenario, impl, r.rounds)
		}
	case len(args) == 1 && args[0] == "unsupported":
	case len(args) >= 1 && args[0] == "run":
		run(args[1:])
	default:
		usage("no such command")
	}
}
