//go:build !linux

package stats

import (
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func fsStats(path string, now metav1.Time) (*statsapi.FsStats, error) {
	return nil, errors.New("stats: host filesystem statistics need Linux")
}
