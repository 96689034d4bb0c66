//go:build !linux

package eviction

import (
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func fsStats(path string, now metav1.Time) (*statsapi.FsStats, error) {
	return nil, errors.New("eviction: host filesystem statistics need Linux")
}
