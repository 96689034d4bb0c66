package containerid_test

import (
	"fmt"

	"github.com/nodekit/nodekit/containerid"
)

func ExampleParse() {
	id, err := containerid.Parse("containerd://4f2a")
	if err != nil {
		panic(err)
	}
	fmt.Println(id.Type, id.ID, id)
	fmt.Println(id.Same(containerid.ID{ID: "4f2a"}))
	// Output:
	// containerd 4f2a containerd://4f2a
	// true
}
