package objects

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestServicesListsWhatTheClusterHas(t *testing.T) {
	client := fake.NewClientset(&v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "a",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}})
	s := NewServices(client)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()
	require.Eventually(t, s.HasSynced, 10*time.Second, time.Millisecond)
	list, err := s.List()
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "web", list[0].Name)
	require.Nil(t, list[0].ManagedFields, "not kept")
	_, err = client.CoreV1().Services("b").Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "b"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { l, _ := s.List(); return len(l) == 2 }, 10*time.Second, time.Millisecond)
}
