//go:build !linux

package eviction

import (
	"context"
	"errors"
)

func (n *PSINotifier) watch(ctx context.Context, notify func()) error {
	return errors.New("PSI triggers need Linux")
}
