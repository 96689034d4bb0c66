package component_test

import (
	"context"
	"fmt"

	"github.com/nodekit/nodekit/component"
)

// A program of two parts: the second uses what the first started, and
// they stop in reverse order.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	var conn string
	g, err := component.New(component.Config{Parts: []component.Part{
		{Name: "runtime",
			Start: func(context.Context) error { conn = "unix:///run/containerd/containerd.sock"; return nil },
			Stop:  func(context.Context) error { fmt.Println("runtime closed"); return nil }},
		{Name: "pleg",
			Start: func(context.Context) error { fmt.Println("pleg relists", conn); return nil },
			Run:   func(ctx context.Context) error { <-ctx.Done(); fmt.Println("pleg stopped"); return nil }},
	}})
	if err != nil {
		panic(err)
	}
	go func() { <-g.Ready(); cancel() }()
	fmt.Println(g.Run(ctx))
	// Output:
	// pleg relists unix:///run/containerd/containerd.sock
	// pleg stopped
	// runtime closed
	// <nil>
}
