package kubeletapitest_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/nodekit/nodekit/kubeletapi"
	"github.com/nodekit/nodekit/kubeletapi/kubeletapitest"
)

func TestCommandRunner(t *testing.T) {
	defer goleak.VerifyNone(t)
	var r kubeletapitest.CommandRunner // the zero value is usable
	ctx := context.Background()
	var out, errOut bytes.Buffer
	err := r.Run(ctx, "journalctl", []string{"--field", "_SYSTEMD_UNIT"}, &out, &errOut)
	require.ErrorIs(t, err, exec.ErrNotFound, "unknown commands are not installed")

	r.Set([]string{"journalctl"}, "any\n", "", nil)
	r.Set([]string{"journalctl", "--field"}, "units\n", "warn\n", &kubeletapitest.ExitError{Code: 2})
	r.Set([]string{"journalctl", "--field"}, "units\n", "warn\n", &kubeletapitest.ExitError{Code: 1}) // replaces
	err = r.Run(ctx, "journalctl", []string{"--field", "_SYSTEMD_UNIT"}, &out, &errOut)
	var exit interface{ ExitCode() int }
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 1, exit.ExitCode())
	require.Equal(t, "units\n", out.String(), "the longest prefix wins")
	require.Equal(t, "warn\n", errOut.String())
	out.Reset()
	require.NoError(t, r.Run(ctx, "journalctl", []string{"--utc"}, &out, &errOut))
	require.Equal(t, "any\n", out.String())
	require.Equal(t, []kubeletapitest.CommandCall{
		{Name: "journalctl", Args: []string{"--field", "_SYSTEMD_UNIT"}},
		{Name: "journalctl", Args: []string{"--field", "_SYSTEMD_UNIT"}},
		{Name: "journalctl", Args: []string{"--utc"}},
	}, r.Calls())

	r.Hang([]string{"journalctl", "--follow"}, "first\n")
	hctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	out.Reset()
	go func() { done <- r.Run(hctx, "journalctl", []string{"--follow"}, &out, &errOut) }()
	require.Eventually(t, func() bool { return r.Running() == 1 }, 10*time.Second, time.Millisecond)
	cancel()
	err = <-done
	require.ErrorAs(t, err, &exit)
	require.Equal(t, "signal: killed", err.Error())
	require.Equal(t, "first\n", out.String())
	require.Zero(t, r.Running())
}

func TestJournal(t *testing.T) {
	var j kubeletapitest.Journal
	units, err := j.Units(context.Background())
	require.NoError(t, err)
	require.Empty(t, units)
	j.SetUnits([]string{"kubelet.service"}, nil)
	units, _ = j.Units(context.Background())
	require.Equal(t, []string{"kubelet.service"}, units)
	j.SetUnits(nil, errors.New("no journal"))
	_, err = j.Units(context.Background())
	require.EqualError(t, err, "no journal")

	j.SetEntries("line\n", nil)
	var out bytes.Buffer
	require.NoError(t, j.Copy(context.Background(), &out, []string{"kubelet"}, kubeletapi.JournalOptions{Pattern: "x"}))
	require.Equal(t, "line\n", out.String())
	require.Equal(t, []kubeletapitest.JournalCall{{Services: []string{"kubelet"}, Options: kubeletapi.JournalOptions{Pattern: "x"}}}, j.Calls())
}
