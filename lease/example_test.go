package lease_test

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/lease"
)

// A node agent renews its own lease. Here a fake clientset stands in for the
// API server; a real agent passes the CoordinationV1() of a heartbeat client
// and runs ctl.Run(ctx) in a goroutine.
func ExampleController_Renew() {
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ctl, err := lease.New(lease.Config{
		Client:   clientset.Wrap(client),
		NodeName: "node-1",
		Clock:    clk,
	})
	if err != nil {
		panic(err)
	}
	if err := ctl.Renew(context.Background(), "node-1"); err != nil {
		panic(err)
	}
	l, _ := client.CoordinationV1().Leases(lease.DefaultNamespace).Get(context.Background(), "node-1", metav1.GetOptions{})
	next, _ := ctl.NextRenewal("node-1")
	fmt.Println(*l.Spec.HolderIdentity, *l.Spec.LeaseDurationSeconds, next.Sub(clk.Now()) >= 10*time.Second)
	// Output: node-1 40 true
}

// One controller renews the leases of many virtual nodes with a bounded
// worker pool, spreading their first renewals over the interval.
func ExampleController_Run() {
	client := fake.NewClientset()
	ctl, err := lease.New(lease.Config{
		Client:        clientset.Wrap(client),
		Names:         []string{"vnode-0", "vnode-1", "vnode-2"},
		InitialSpread: 10 * time.Second,
		Workers:       2,
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_ = ctl.Add("vnode-3") // renewed at once
	fmt.Println(ctl.Run(ctx))
	l, err := client.CoordinationV1().Leases(lease.DefaultNamespace).Get(context.Background(), "vnode-3", metav1.GetOptions{})
	fmt.Println(l.Name, err)
	// Output:
	// <nil>
	// vnode-3 <nil>
}
