package nodeclaim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newClaim(t *testing.T, id string, objs ...runtime.Object) (*Claim, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	c, err := New(Config{Nodes: client.CoreV1(), Leases: client.CoordinationV1(), NodeName: "n1", ID: id,
		Clock: clocktesting.NewFakeClock(now)})
	require.NoError(t, err)
	return c, client
}

func node(owner string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "1"}}
	if owner != "" {
		n.Annotations = map[string]string{AnnotationAgentID: owner}
	}
	return n
}

func lease(renewed time.Duration, seconds int32) *coordinationv1.Lease {
	rt := metav1.NewMicroTime(now.Add(-renewed))
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: DefaultLeaseNamespace},
		Spec: coordinationv1.LeaseSpec{RenewTime: &rt, LeaseDurationSeconds: &seconds}}
}

func TestLoadIDIsStable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	id, err := LoadID(dir)
	require.NoError(t, err)
	assert.Len(t, id, 16)
	again, err := LoadID(dir)
	require.NoError(t, err)
	assert.Equal(t, id, again, "the same state, the same agent")
	require.NoError(t, os.WriteFile(filepath.Join(dir, IDFile), []byte("  \n"), 0o600))
	fresh, err := LoadID(dir)
	require.NoError(t, err)
	assert.NotEqual(t, id, fresh, "an empty file gets a new identity")
}

func TestNewValidates(t *testing.T) {
	_, err := New(Config{NodeName: "n1"})
	require.ErrorContains(t, err, "required")
}

func TestCheck(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		objs    []runtime.Object
		claimed bool
	}{
		{name: "no node yet"},
		{name: "unclaimed node", objs: []runtime.Object{node("")}},
		{name: "our own claim", objs: []runtime.Object{node("me"), lease(time.Second, 40)}},
		{name: "another agent, no lease", objs: []runtime.Object{node("other")}},
		{name: "another agent, live lease", objs: []runtime.Object{node("other"), lease(10*time.Second, 40)}, claimed: true},
		{name: "another agent, expired lease", objs: []runtime.Object{node("other"), lease(41*time.Second, 40)}},
		{name: "lease without duration: the default", objs: []runtime.Object{node("other"), lease(39*time.Second, 0)}, claimed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newClaim(t, "me", tc.objs...)
			err := c.Check(ctx)
			if tc.claimed {
				require.ErrorIs(t, err, ErrNodeClaimed)
				assert.Contains(t, err.Error(), "claimed by agent other (this agent is me)")
			} else {
				require.NoError(t, err)
			}
		})
	}
}

func TestCheckStartsWhenTheAPIServerCannotTell(t *testing.T) {
	c, client := newClaim(t, "me", node("other"))
	client.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	require.NoError(t, c.Check(context.Background()), "the setter still notices a foreign claim later")
}

func TestSetterClosesDoneOnATakeover(t *testing.T) {
	ctx := context.Background()
	c, _ := newClaim(t, "me")
	assert.Equal(t, map[string]string{AnnotationAgentID: "me"}, c.Annotations())
	require.NoError(t, c.Setter(ctx, now, node("me")))
	unregistered := node("other")
	unregistered.ResourceVersion = "" // the node the agent is about to register
	require.NoError(t, c.Setter(ctx, now, unregistered))
	assert.NoError(t, c.Err())
	select {
	case <-c.Done():
		t.Fatal("closed without a takeover")
	default:
	}
	err := c.Setter(ctx, now, node("other"))
	require.ErrorIs(t, err, ErrNodeClaimed)
	<-c.Done()
	require.ErrorIs(t, c.Err(), ErrNodeClaimed)
	require.ErrorIs(t, c.Setter(ctx, now, node("third")), ErrNodeClaimed, "a second takeover does not panic")
	assert.Contains(t, c.Err().Error(), "agent other", "Err keeps the first")
}

func TestReleaseOnlyOurOwnClaim(t *testing.T) {
	ctx := context.Background()
	c, client := newClaim(t, "me", node("me"))
	c.Release(ctx)
	n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, n.Annotations, AnnotationAgentID)

	// The fake client does not evaluate JSON patch tests; check the patch
	// carries the test of our identity.
	c2, client2 := newClaim(t, "me", node("other"))
	var patch string
	client2.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		patch = string(a.(k8stesting.PatchAction).GetPatch())
		return true, nil, apierrors.NewInvalid(v1.SchemeGroupVersion.WithKind("Node").GroupKind(), "n1", nil)
	})
	c2.Release(ctx) // an Invalid answer (the test failed) is not an error
	assert.Contains(t, patch, `{"op":"test","path":"/metadata/annotations/nodekit.io~1agent-id","value":"me"}`)
}
