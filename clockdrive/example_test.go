package clockdrive_test

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/clockdrive"
	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/lease"
)

// A lease controller on a fake clock, driven for a simulated minute: it
// renews every 10s, and no test sleeps.
func Example() {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cs := fake.NewClientset()
	leases, err := lease.New(lease.Config{Client: clientset.Wrap(cs), NodeName: "node-1", Clock: clk, RenewJitter: -1})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- leases.Run(ctx) }()

	d, err := clockdrive.New(clk, map[string]clockdrive.Waker{"lease": leases})
	if err != nil {
		panic(err)
	}
	safety, stop := context.WithTimeout(ctx, 10*time.Second) // real time: only if a block never parks
	defer stop()
	steps, err := d.StepUntil(safety, clk.Now().Add(time.Minute))
	if err != nil {
		panic(err)
	}
	l, _ := cs.CoordinationV1().Leases("kube-node-lease").Get(ctx, "node-1", metav1.GetOptions{})
	fmt.Println(len(steps), "steps; renewed at", l.Spec.RenewTime.UTC().Format("15:04:05"))
	cancel()
	<-done
	// Output: 6 steps; renewed at 00:01:00
}
