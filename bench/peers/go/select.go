// SPDX-License-Identifier: Apache-2.0
//
// The select rows of bench/README.md on Go's select, the same rounds as
// bench/select.cc, on one P (GOMAXPROCS(1)):
//
//	select/two-channels            two channels of capacity 16; round i
//	                               sends item i into channel (i>>1)&1, then
//	                               selects a receive on each
//	select/semaphore-or-deadline   a token channel of capacity 1 (the
//	                               semaphore) or a context's deadline: even
//	                               rounds put a token first (it wins), odd
//	                               rounds take a deadline already past (its
//	                               Done channel is closed at creation)
package main

import (
	"context"
	"runtime"
	"time"
)

func selectTwoChannels(rounds uint64, m *meter) uint64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ch := [2]chan uint64{make(chan uint64, 16), make(chan uint64, 16)}
	m.start()
	for v := uint64(0); v < rounds; v++ {
		target := (v >> 1) & 1
		select {
		case ch[target] <- v:
		default:
			wrong("try_send into an empty channel")
		}
		var i, got uint64
		select {
		case got = <-ch[0]:
			i = 0
		case got = <-ch[1]:
			i = 1
		}
		if i != target || got != v {
			wrong("the item received is the item sent")
		}
	}
	m.stop()
	if len(ch[0]) != 0 || len(ch[1]) != 0 {
		wrong("the channels are empty")
	}
	return rounds
}

func selectSemaphoreOrDeadline(rounds uint64, m *meter) uint64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	sem := make(chan struct{}, 1)
	past := time.Now()
	far := past.Add(time.Hour)
	m.start()
	for v := uint64(0); v < rounds; v++ {
		permit := v&1 == 0
		deadline := past
		if permit {
			sem <- struct{}{}
			deadline = far
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		won := 0
		select {
		case <-sem:
		case <-ctx.Done():
			won = 1
		}
		cancel()
		if (won == 0) != permit {
			wrong("the permit, else the deadline")
		}
	}
	m.stop()
	if len(sem) != 0 {
		wrong("every permit was taken")
	}
	return rounds
}

func init() {
	rows = append(rows,
		row{"select/two-channels", 3000000, selectTwoChannels, false},
		row{"select/semaphore-or-deadline", 3000000, selectSemaphoreOrDeadline, false})
}
