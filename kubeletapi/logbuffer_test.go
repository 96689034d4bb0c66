package kubeletapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/kubeletapi"
)

var logT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newTestLogBuffer returns a buffer on a fake clock at logT0.
func newTestLogBuffer(t testing.TB, maxBytes int64) (*kubeletapi.LogBuffer, *clocktesting.FakePassiveClock) {
	t.Helper()
	clk := clocktesting.NewFakePassiveClock(logT0)
	b, err := kubeletapi.NewLogBuffer(kubeletapi.LogBufferConfig{Clock: clk, MaxBytesPerContainer: maxBytes})
	require.NoError(t, err)
	return b, clk
}

// write writes s to w, failing the test on an error.
func write(t testing.TB, w io.Writer, s string) {
	t.Helper()
	_, err := io.WriteString(w, s)
	require.NoError(t, err)
}

// readLogs calls ContainerLogs for container c of testPod without follow
// and returns the output of the requested streams, both into one buffer.
func readLogs(t *testing.T, b *kubeletapi.LogBuffer, opts *v1.PodLogOptions, stdout, stderr bool) string {
	t.Helper()
	var out bytes.Buffer
	var wo, we io.Writer
	if stdout {
		wo = &out
	}
	if stderr {
		we = &out
	}
	require.NoError(t, b.ContainerLogs(context.Background(), testPod(), "c", opts, wo, we))
	return out.String()
}

func TestNewLogBuffer(t *testing.T) {
	_, err := kubeletapi.NewLogBuffer(kubeletapi.LogBufferConfig{MaxBytesPerContainer: -1})
	require.ErrorIs(t, err, kubeletapi.ErrInvalidConfig)

	b, err := kubeletapi.NewLogBuffer(kubeletapi.LogBufferConfig{})
	require.NoError(t, err)
	stdout, _ := b.Start(podUID, "c")
	// A line counts its text, its newline and 64 bytes.
	write(t, stdout, strings.Repeat("x", kubeletapi.DefaultLogBufferMaxBytes-1-64)+"\n")
	require.Zero(t, b.Dropped(podUID, "c"))
	write(t, stdout, "y\n")
	require.Equal(t, int64(kubeletapi.DefaultLogBufferMaxBytes-64), b.Dropped(podUID, "c"))
}

func TestLogBufferOptions(t *testing.T) {
	b, clk := newTestLogBuffer(t, 0)
	stdout, stderr := b.Start(podUID, "c")
	// One line a second from logT0: out0 err1 out2 err3 out4.
	for i := range 5 {
		w := stdout
		name := "out"
		if i%2 == 1 {
			w, name = stderr, "err"
		}
		write(t, w, fmt.Sprintf("%s%d\n", name, i))
		clk.SetTime(clk.Now().Add(time.Second))
	}
	clk.SetTime(logT0.Add(10 * time.Second))
	all := "out0\nerr1\nout2\nerr3\nout4\n"

	for _, tc := range []struct {
		name            string
		opts            v1.PodLogOptions
		noStdout, noErr bool
		want            string
	}{
		{name: "all", want: all},
		{name: "tail", opts: v1.PodLogOptions{TailLines: ptr.To[int64](2)}, want: "err3\nout4\n"},
		{name: "tail zero", opts: v1.PodLogOptions{TailLines: ptr.To[int64](0)}, want: ""},
		{name: "tail beyond", opts: v1.PodLogOptions{TailLines: ptr.To[int64](9)}, want: all},
		{name: "tail negative means all", opts: v1.PodLogOptions{TailLines: ptr.To[int64](-1)}, want: all},
		{name: "since seconds on the buffer's clock", opts: v1.PodLogOptions{SinceSeconds: ptr.To[int64](7)}, want: "err3\nout4\n"},
		{name: "since time inclusive", opts: v1.PodLogOptions{SinceTime: &metav1.Time{Time: logT0.Add(2 * time.Second)}}, want: "out2\nerr3\nout4\n"},
		{name: "tail and since", opts: v1.PodLogOptions{TailLines: ptr.To[int64](3), SinceTime: &metav1.Time{Time: logT0.Add(3 * time.Second)}}, want: "err3\nout4\n"},
		{name: "limit cuts a line", opts: v1.PodLogOptions{LimitBytes: ptr.To[int64](7)}, want: "out0\ner"},
		{name: "limit on a line's end", opts: v1.PodLogOptions{LimitBytes: ptr.To[int64](10)}, want: "out0\nerr1\n"},
		{name: "timestamps", opts: v1.PodLogOptions{Timestamps: true, TailLines: ptr.To[int64](1)}, want: "2026-01-02T03:04:09.000000000Z out4\n"},
		{name: "timestamps count toward the limit", opts: v1.PodLogOptions{Timestamps: true, LimitBytes: ptr.To[int64](12)}, want: "2026-01-02T0"},
		{name: "stdout only", noErr: true, want: "out0\nout2\nout4\n"},
		{name: "stderr only", noStdout: true, want: "err1\nerr3\n"},
		{name: "skipped stream not counted in limit", noStdout: true, opts: v1.PodLogOptions{LimitBytes: ptr.To[int64](6)}, want: "err1\ne"},
		{name: "tail counts both streams", noStdout: true, opts: v1.PodLogOptions{TailLines: ptr.To[int64](2)}, want: "err3\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, readLogs(t, b, &tc.opts, !tc.noStdout, !tc.noErr))
		})
	}
}

func TestLogBufferSplitStreams(t *testing.T) {
	b, _ := newTestLogBuffer(t, 0)
	stdout, stderr := b.Start(podUID, "c")
	write(t, stdout, "a\nb") // a final fragment is a line
	write(t, stderr, "e\n\n")
	write(t, stdout, "c\n")
	var out, errOut bytes.Buffer
	require.NoError(t, b.ContainerLogs(context.Background(), testPod(), "c", &v1.PodLogOptions{}, &out, &errOut))
	require.Equal(t, "a\nb\nc\n", out.String())
	require.Equal(t, "e\n\n", errOut.String())
}

func TestLogBufferInstances(t *testing.T) {
	b, _ := newTestLogBuffer(t, 0)
	ctx := context.Background()
	pod := testPod()
	logs := func(opts *v1.PodLogOptions) (string, error) {
		var out bytes.Buffer
		err := b.ContainerLogs(ctx, pod, "c", opts, &out, &out)
		return out.String(), err
	}

	_, err := logs(&v1.PodLogOptions{})
	require.EqualError(t, err, `container "c" in pod "p" is waiting to start - no logs yet`)
	pod.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}
	_, err = logs(&v1.PodLogOptions{})
	require.EqualError(t, err, `container "c" in pod "p" is waiting to start: ContainerCreating`)
	_, err = logs(&v1.PodLogOptions{Previous: true})
	require.EqualError(t, err, `previous terminated container "c" in pod "p" not found`)

	// Started without lines: no output, no error, but the headers' write.
	first, _ := b.Start(podUID, "c")
	cw := &countingWriter{}
	require.NoError(t, b.ContainerLogs(ctx, pod, "c", &v1.PodLogOptions{}, cw, nil))
	require.Equal(t, 1, cw.writes)
	require.Zero(t, cw.bytes)

	write(t, first, "run 1\n")
	b.Close(podUID, "c")
	_, err = first.Write([]byte("late\n"))
	require.ErrorIs(t, err, kubeletapi.ErrLogClosed)
	out, err := logs(&v1.PodLogOptions{})
	require.NoError(t, err)
	require.Equal(t, "run 1\n", out, "a closed instance is still served")
	_, err = logs(&v1.PodLogOptions{Previous: true})
	require.Error(t, err)

	second, _ := b.Start(podUID, "c")
	write(t, second, "run 2\n")
	out, err = logs(&v1.PodLogOptions{})
	require.NoError(t, err)
	require.Equal(t, "run 2\n", out)
	out, err = logs(&v1.PodLogOptions{Previous: true})
	require.NoError(t, err)
	require.Equal(t, "run 1\n", out)

	third, _ := b.Start(podUID, "c")
	_, err = second.Write([]byte("x\n"))
	require.ErrorIs(t, err, kubeletapi.ErrLogClosed, "a restart ends the instance")
	write(t, third, "run 3\n")
	out, err = logs(&v1.PodLogOptions{Previous: true})
	require.NoError(t, err)
	require.Equal(t, "run 2\n", out, "only one previous instance is kept")

	b.Remove(podUID)
	_, err = third.Write([]byte("x\n"))
	require.ErrorIs(t, err, kubeletapi.ErrLogClosed)
	_, err = logs(&v1.PodLogOptions{})
	require.ErrorContains(t, err, "is waiting to start")
	_, err = logs(&v1.PodLogOptions{Previous: true})
	require.ErrorContains(t, err, "not found")

	// Unknown containers and pods are ignored.
	b.Close("nope", "c")
	b.Remove("nope")
	require.Zero(t, b.Dropped("nope", "c"))
}

func TestLogBufferRotation(t *testing.T) {
	const o = 64 // what a line counts beyond its text and newline
	for _, tc := range []struct {
		name        string
		max         int64
		writes      []string
		want        string
		wantDropped int64
	}{
		{name: "within", max: 2*o + 8, writes: []string{"abc\n", "def\n"}, want: "abc\ndef\n"},
		{name: "oldest dropped", max: 2*o + 8, writes: []string{"abc\n", "def\n", "g\n"}, want: "def\ng\n", wantDropped: 4},
		{name: "several dropped by one write", max: 3*o + 8, writes: []string{"a\n", "b\n", "c\n", "12345\n"}, want: "c\n12345\n", wantDropped: 4},
		{name: "several lines in one write", max: 2*o + 4, writes: []string{"a\nb\nc\n"}, want: "b\nc\n", wantDropped: 2},
		{name: "long line keeps its start", max: o + 4, writes: []string{"a\n", "abcdefgh\n"}, want: "abc\n", wantDropped: 2 + 5},
		{name: "tiny limit keeps the newest line", max: 1, writes: []string{"ab\n", "c\n"}, want: "\n", wantDropped: 2 + 1 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newTestLogBuffer(t, tc.max)
			stdout, _ := b.Start(podUID, "c")
			for _, s := range tc.writes {
				write(t, stdout, s)
			}
			require.Equal(t, tc.want, readLogs(t, b, &v1.PodLogOptions{}, true, true))
			require.Equal(t, tc.wantDropped, b.Dropped(podUID, "c"))
		})
	}
}

// TestLogBufferWraps keeps five lines through many writes, so that the
// kept lines wrap around their storage, and reads them at each step.
func TestLogBufferWraps(t *testing.T) {
	b, _ := newTestLogBuffer(t, 5*(4+64)) // five lines of three digits
	stdout, _ := b.Start(podUID, "c")
	var want []string
	for i := range 200 {
		line := fmt.Sprintf("%03d\n", i)
		write(t, stdout, line)
		want = append(want, line)
		if len(want) > 5 {
			want = want[1:]
		}
		require.Equal(t, strings.Join(want, ""), readLogs(t, b, &v1.PodLogOptions{}, true, true))
		require.Equal(t, strings.Join(want[max(0, len(want)-3):], ""), readLogs(t, b, &v1.PodLogOptions{TailLines: ptr.To[int64](3)}, true, true))
	}
	require.Equal(t, int64(195*4), b.Dropped(podUID, "c"))
}

func TestLogBufferWriterErrors(t *testing.T) {
	b, _ := newTestLogBuffer(t, 0)
	stdout, _ := b.Start(podUID, "c")
	write(t, stdout, "a\nb\n")
	boom := errors.New("boom")
	err := b.ContainerLogs(context.Background(), testPod(), "c", &v1.PodLogOptions{}, failWriter{boom}, nil)
	require.ErrorIs(t, err, boom)
	err = b.ContainerLogs(context.Background(), testPod(), "c", &v1.PodLogOptions{}, shortWriter{}, nil)
	require.ErrorIs(t, err, io.ErrShortWrite)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = b.ContainerLogs(ctx, testPod(), "c", &v1.PodLogOptions{}, io.Discard, nil)
	require.ErrorIs(t, err, context.Canceled)
}

// chanWriter sends a copy of every write on ch ("" for the empty write
// that sends the headers), and calls onWrite, if set, before that.
type chanWriter struct {
	ch      chan string
	onWrite func(string)
}

func (w *chanWriter) Write(p []byte) (int, error) {
	if w.onWrite != nil {
		w.onWrite(string(p))
	}
	w.ch <- string(p)
	return len(p), nil
}

func TestLogBufferFollow(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, tc := range []struct {
		name string
		opts v1.PodLogOptions
		// end ends the follow after "new\n" was received.
		end     func(b *kubeletapi.LogBuffer, cancel context.CancelFunc)
		wantErr error
	}{
		{name: "close", end: func(b *kubeletapi.LogBuffer, _ context.CancelFunc) { b.Close(podUID, "c") }},
		{name: "restart", end: func(b *kubeletapi.LogBuffer, _ context.CancelFunc) { b.Start(podUID, "c") }},
		{name: "remove", end: func(b *kubeletapi.LogBuffer, _ context.CancelFunc) { b.Remove(podUID) }},
		{name: "cancel", end: func(_ *kubeletapi.LogBuffer, cancel context.CancelFunc) { cancel() }, wantErr: context.Canceled},
		{name: "limit", opts: v1.PodLogOptions{LimitBytes: ptr.To(int64(len("old\nnew\n")))}},
		{name: "limit with tail", opts: v1.PodLogOptions{TailLines: ptr.To[int64](0), LimitBytes: ptr.To(int64(len("new\n")))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newTestLogBuffer(t, 0)
			stdout, stderr := b.Start(podUID, "c")
			write(t, stdout, "old\n")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := &chanWriter{ch: make(chan string, 10)}
			opts := tc.opts
			opts.Follow = true
			done := make(chan error, 1)
			go func() { done <- b.ContainerLogs(ctx, testPod(), "c", &opts, w, w) }()

			require.Equal(t, "", <-w.ch, "the headers' write comes first")
			if opts.TailLines == nil {
				require.Equal(t, "old\n", <-w.ch)
			}
			write(t, stderr, "new\n")
			require.Equal(t, "new\n", <-w.ch)
			if tc.end != nil {
				tc.end(b, cancel)
			}
			require.ErrorIs(t, <-done, tc.wantErr)
			require.Empty(t, w.ch)
		})
	}
}

// TestLogBufferFollowLagging: a follower that falls behind rotation
// continues with the oldest kept line.
func TestLogBufferFollowLagging(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	b, _ := newTestLogBuffer(t, 3*(2+64)) // three lines of one letter
	stdout, _ := b.Start(podUID, "c")
	write(t, stdout, "a\n")
	w := &chanWriter{ch: make(chan string, 10)}
	w.onWrite = func(p string) {
		if p == "a\n" { // the follower holds "a": write past it while it writes
			write(t, stdout, "b\nc\nd\ne\n")
			b.Close(podUID, "c")
		}
	}
	err := b.ContainerLogs(context.Background(), testPod(), "c", &v1.PodLogOptions{Follow: true}, w, nil)
	require.NoError(t, err)
	close(w.ch)
	var got []string
	for s := range w.ch {
		got = append(got, s)
	}
	require.Equal(t, []string{"", "a\n", "c\nd\ne\n"}, got)
	require.Equal(t, int64(4), b.Dropped(podUID, "c"))
}

// TestLogBufferConcurrent writes from many goroutines while others follow
// and read; run it with -race.
func TestLogBufferConcurrent(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const writers, lines = 4, 200
	b, _ := newTestLogBuffer(t, 0)
	stdout, stderr := b.Start(podUID, "c")

	followed := make([]*bytes.Buffer, 3)
	var readers sync.WaitGroup
	for i := range followed {
		followed[i] = &bytes.Buffer{}
		readers.Go(func() {
			assert.NoError(t, b.ContainerLogs(context.Background(), testPod(), "c", &v1.PodLogOptions{Follow: true}, followed[i], followed[i]))
		})
	}
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			w := stdout
			if i%2 == 1 {
				w = stderr
			}
			for j := range lines {
				_, err := fmt.Fprintf(w, "w%d line %d\n", i, j)
				assert.NoError(t, err)
			}
		})
		wg.Go(func() {
			assert.NoError(t, b.ContainerLogs(context.Background(), testPod(), "c", &v1.PodLogOptions{TailLines: ptr.To[int64](10)}, io.Discard, io.Discard))
		})
	}
	wg.Wait()
	b.Close(podUID, "c")
	readers.Wait()
	for _, f := range followed {
		require.Equal(t, writers*lines, strings.Count(f.String(), "\n"))
	}
}

type countingWriter struct{ writes, bytes int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	w.bytes += len(p)
	return len(p), nil
}

type failWriter struct{ err error }

func (w failWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return 0, w.err
}

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

func BenchmarkLogBufferWrite(b *testing.B) {
	buf, err := kubeletapi.NewLogBuffer(kubeletapi.LogBufferConfig{MaxBytesPerContainer: 1 << 20})
	require.NoError(b, err)
	stdout, _ := buf.Start(podUID, "c")
	line := []byte(strings.Repeat("x", 99) + "\n")
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := stdout.Write(line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLogBufferWriteParallel(b *testing.B) {
	buf, err := kubeletapi.NewLogBuffer(kubeletapi.LogBufferConfig{MaxBytesPerContainer: 1 << 20})
	require.NoError(b, err)
	line := []byte(strings.Repeat("x", 99) + "\n")
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	var n sync.Mutex
	id := 0
	b.RunParallel(func(pb *testing.PB) {
		n.Lock()
		id++
		stdout, _ := buf.Start(podUID, fmt.Sprint("c", id))
		n.Unlock()
		for pb.Next() {
			if _, err := stdout.Write(line); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
