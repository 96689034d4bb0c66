package clockctx_test

import (
	"context"
	"fmt"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/clockctx"
)

// A request timeout that expires when a fake clock is stepped, not after
// real time: a test drives it without sleeping.
func ExampleWithTimeout() {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx, cancel := clockctx.WithTimeout(context.Background(), clk, 10*time.Second)
	defer cancel()
	clk.Step(9 * time.Second)
	fmt.Println("after 9s:", ctx.Err())
	clk.Step(time.Second)
	<-ctx.Done()
	fmt.Println("after 10s:", ctx.Err(), "/", context.Cause(ctx))
	// Output:
	// after 9s: <nil>
	// after 10s: context canceled / context deadline exceeded
}
