package crinode_test

import (
	"context"
	"fmt"

	"github.com/nodekit/nodekit/nodestatus"
	"github.com/nodekit/nodekit/nodestatus/crinode"
)

// Example feeds the Ready condition and the runtime's handlers to a node's
// status from a CRI runtime.
func Example() {
	src, err := crinode.New(crinode.Config{Runtime: &fakeRuntime{status: status(true, false)}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	var b nodestatus.Builder
	b.Add(nodestatus.ReadyCondition(nodestatus.ReadyConfig{
		RuntimeErrors: func() error { return src.RuntimeErrors(ctx) },
		NetworkErrors: func() error { return src.NetworkErrors(ctx) },
	}))
	b.Add(nodestatus.RuntimeHandlers(src.RuntimeHandlers))
	if _, err := b.Setters(); err != nil {
		panic(err)
	}
	fmt.Println(src.RuntimeErrors(ctx), "|", src.NetworkErrors(ctx), "|", len(src.RuntimeHandlers()), "handlers")
	// Output: <nil> | container runtime network not ready: NetworkReady=false | 2 handlers
}
