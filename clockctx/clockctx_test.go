package clockctx

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// tickerOnly hides AfterFunc to exercise the timer path.
type tickerOnly struct{ clock.WithTicker }

func TestWithTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	for name, wrap := range map[string]func(*clocktesting.FakeClock) clock.WithTicker{
		"afterfunc": func(c *clocktesting.FakeClock) clock.WithTicker { return c },
		"timer":     func(c *clocktesting.FakeClock) clock.WithTicker { return tickerOnly{c} },
	} {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(0, 0))
			ctx, cancel := WithTimeout(context.Background(), wrap(clk), time.Second)
			defer cancel()
			require.Eventually(t, clk.HasWaiters, time.Second, time.Millisecond)
			clk.Step(999 * time.Millisecond)
			require.NoError(t, ctx.Err())
			clk.Step(time.Millisecond)
			require.Eventually(t, func() bool { return ctx.Err() != nil }, time.Second, time.Millisecond)
			require.True(t, errors.Is(context.Cause(ctx), context.DeadlineExceeded))

			ctx2, cancel2 := WithTimeout(context.Background(), wrap(clk), time.Second)
			cancel2()
			require.ErrorIs(t, context.Cause(ctx2), context.Canceled)
			require.False(t, clk.HasWaiters(), "cancel stops the timer")
		})
	}
}
