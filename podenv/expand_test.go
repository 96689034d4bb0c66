package podenv

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestExpand(t *testing.T) {
	env := map[string]string{"A": "x", "B": "y"}
	look := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	for in, want := range map[string]string{
		"$(A)/$(B)": "x/y", "$$(A)": "$(A)", "$(C)": "$(C)", "a$": "a$", "$(A": "$(A", "$x": "$x", "$()": "$()",
	} {
		assert.Equal(t, want, Expand(in, look), in)
	}
}
