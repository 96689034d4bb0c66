package lease_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/lease"
	"github.com/nodekit/nodekit/lease/leasetest"
)

// BenchmarkRenewManyNodes measures one steady-state renewal (the UPDATE
// path) among 10,000 managed names against the in-memory fake, and the
// controller's memory per name.
func BenchmarkRenewManyNodes(b *testing.B) {
	const n = 10000
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("node-%05d", i)
	}
	client := leasetest.New()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

	ctl, err := lease.New(lease.Config{Client: client, Names: names, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range names {
		if err := ctl.Renew(ctx, name); err != nil {
			b.Fatal(err)
		}
	}
	client.ResetCalls()
	withCtl := heapInUse()

	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := ctl.Renew(ctx, names[i%n]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if got := client.Calls("get") + client.Calls("create"); got != 0 {
		b.Fatalf("steady state made %d GET/CREATE calls", got)
	}
	runtime.KeepAlive(ctl)
	// What the controller holds per name: the heap with it minus without it
	// (the fake server's leases stay in both).
	b.ReportMetric(float64(withCtl-heapInUse())/n, "ctlB/node")
}

func heapInUse() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
