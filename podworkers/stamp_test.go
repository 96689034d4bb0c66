package podworkers

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStampsKeepOrderAndTime(t *testing.T) {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	times := []time.Time{epoch.Add(-time.Hour), epoch.Add(-1), epoch, epoch.Add(1), epoch.Add(90 * time.Second)}
	var prev stamp
	for i, at := range times {
		s := stampAt(epoch, at)
		require.NotZero(t, s, "only none is zero")
		require.True(t, s.time(epoch).Equal(at), "%v round trips", at)
		if i > 0 {
			require.Greater(t, s, prev, "%v after %v", at, times[i-1])
		}
		prev = s
	}
	require.True(t, stamp(0).time(epoch).IsZero())
	far := stampAt(time.Time{}, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	require.Equal(t, stamp(math.MaxInt64), far, "a saturated offset does not overflow")
}
