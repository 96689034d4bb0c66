package volumes

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestExpandSubPath(t *testing.T) {
	env := map[string]string{"A": "x", "B": "y"}
	got, err := expandSubPath("$(A)/$(MISSING)", env)
	assert.Empty(t, got)
	assert.EqualError(t, err, "missing value for MISSING")
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
