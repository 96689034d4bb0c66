package images

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func dockerJSONSecret(name, json string) *v1.Secret {
	return &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Type: v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(json)}}
}

func TestKeyringLookup(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("joe:s3cret"))
	k, err := KeyringFromSecrets([]*v1.Secret{
		dockerJSONSecret("a", `{"auths": {"registry.example.com:5000": {"auth": "`+auth+`"},
			"https://registry.example.com:5000/v2/team": {"username": "team", "password": "tp"},
			"*.corp.example": {"username": "glob", "password": "g"},
			"index.docker.io": {"username": "hub", "password": "h"}}}`),
		{ObjectMeta: metav1.ObjectMeta{Name: "legacy"}, Type: v1.SecretTypeDockercfg,
			Data: map[string][]byte{v1.DockerConfigKey: []byte(`{"quay.io": {"username": "q", "password": "qp"}}`)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "opaque"}, Data: map[string][]byte{"x": []byte("not a config")}},
	})
	require.NoError(t, err)
	users := func(image string) []string {
		var out []string
		for _, a := range k.Lookup(image) {
			out = append(out, a.Username+":"+a.Password)
		}
		return out
	}
	assert.Equal(t, []string{"team:tp", "joe:s3cret"}, users("registry.example.com:5000/team/app:1"), "most specific first")
	assert.Equal(t, []string{"joe:s3cret"}, users("registry.example.com:5000/other/app"))
	assert.Empty(t, users("registry.example.com/other/app"), "the port must match")
	assert.Equal(t, []string{"glob:g"}, users("eu.corp.example/app"))
	assert.Empty(t, users("a.eu.corp.example/app"), "a glob matches one label")
	assert.Equal(t, []string{"q:qp"}, users("quay.io/x/y"))
	assert.Equal(t, []string{"hub:h"}, users("busybox"), "Docker Hub images")
	assert.Equal(t, []string{"hub:h"}, users("library/busybox:1.36"))
	assert.Empty(t, users("localhost:5000/x"))
	assert.Empty(t, k.Lookup("registry.example.com:5000/x")[0].ServerAddress,
		"no server address, as the kubelet: containerd drops credentials whose address it cannot parse as a URL")

	_, err = KeyringFromSecrets([]*v1.Secret{dockerJSONSecret("bad", `{"auths": `)})
	assert.ErrorContains(t, err, "image pull secret ns/bad")
	_, err = KeyringFromSecrets([]*v1.Secret{dockerJSONSecret("bad", `{"auths": {"r.io": {"auth": "%%%"}}}`)})
	assert.ErrorContains(t, err, "not base64")
	var nilRing *Keyring
	assert.Empty(t, nilRing.Lookup("x"))
}

// fakeImages is an image service whose pulls succeed only with the
// wanted credential (or any, when want is empty).
type fakeImages struct {
	present map[string]bool
	want    string // "user:password"
	down    bool
	pulls   []string // credential tried, "" for none
}

func (f *fakeImages) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	return nil, nil
}
func (f *fakeImages) ImageStatus(_ context.Context, s *runtimeapi.ImageSpec, _ bool) (*runtimeapi.ImageStatusResponse, error) {
	if name := strings.TrimPrefix(s.Image, "sha256:"); f.present[name] {
		return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: "sha256:" + name, Size: 42}}, nil
	}
	return &runtimeapi.ImageStatusResponse{}, nil
}
func (f *fakeImages) PullImage(_ context.Context, s *runtimeapi.ImageSpec, a *runtimeapi.AuthConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	cred := ""
	if a != nil {
		cred = a.Username + ":" + a.Password
	}
	f.pulls = append(f.pulls, cred)
	if f.down || (f.want != "" && cred != f.want) {
		return "", errors.New("pull access denied")
	}
	f.present[s.Image] = true
	return "sha256:" + s.Image, nil
}
func (f *fakeImages) RemoveImage(context.Context, *runtimeapi.ImageSpec) error { return nil }
func (f *fakeImages) Close(context.Context) error                              { return nil }
func (f *fakeImages) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{}, nil
}

func request(image string, policy v1.PullPolicy, k *Keyring) Request {
	return Request{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}},
		Container: &v1.Container{Name: "c", Image: image, ImagePullPolicy: policy}, Keyring: k}
}

type pullLog []string

func (l *pullLog) ImagePullStarted(uid types.UID)  { *l = append(*l, "start "+string(uid)) }
func (l *pullLog) ImagePullFinished(uid types.UID) { *l = append(*l, "finish "+string(uid)) }

func TestEnsurePolicies(t *testing.T) {
	f := &fakeImages{present: map[string]bool{"have:1": true}}
	var pulls pullLog
	p, err := New(Config{Images: f, Clock: clocktesting.NewFakeClock(time.Unix(0, 0)), Pulls: &pulls})
	require.NoError(t, err)
	var events []string
	ev := func(e Event) { events = append(events, e.Reason+": "+e.Message) }
	ctx := context.Background()

	ref, err := p.Ensure(ctx, request("have:1", v1.PullIfNotPresent, nil), ev)
	require.NoError(t, err)
	assert.Equal(t, "sha256:have:1", ref)
	assert.Empty(t, f.pulls)
	assert.Equal(t, []string{`Pulled: Container image "have:1" already present on machine`}, events)

	events = nil
	_, err = p.Ensure(ctx, request("have:1", v1.PullAlways, nil), ev)
	require.NoError(t, err)
	assert.Equal(t, []string{""}, f.pulls, "Always pulls even when present")
	assert.Equal(t, []string{`Pulling: Pulling image "have:1"`,
		`Pulled: Successfully pulled image "have:1" in 0s (0s including waiting). Image size: 42 bytes.`}, events)

	uid := request("x", v1.PullNever, nil).Pod.UID
	assert.Equal(t, pullLog{"finish " + string(uid), "start " + string(uid), "finish " + string(uid)}, pulls,
		"present (ends a pull another pod made), then pulled")

	_, err = p.Ensure(ctx, request("missing:1", v1.PullNever, nil), func(Event) {})
	var ie *Error
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, &Error{ReasonErrImageNeverPull, `Container image "missing:1" is not present with pull policy of Never`}, ie)

	_, err = New(Config{})
	assert.Error(t, err)
}

func TestEnsureCredentialsInTurnThenBackoff(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	f := &fakeImages{present: map[string]bool{}, want: "good:pw"}
	p, err := New(Config{Images: f, Clock: clk})
	require.NoError(t, err)
	ctx := context.Background()
	k, err := KeyringFromSecrets([]*v1.Secret{
		dockerJSONSecret("a", `{"auths": {"reg.io/team": {"username": "bad", "password": "x"}, "reg.io": {"username": "good", "password": "pw"}}}`)})
	require.NoError(t, err)
	_, err = p.Ensure(ctx, request("reg.io/team/app", "", k), func(Event) {})
	require.NoError(t, err)
	assert.Equal(t, []string{"bad:x", "good:pw"}, f.pulls, "each credential in turn, most specific first")

	// Without credentials the pull fails, then backs off 10s, 20s, ...
	f.pulls = nil
	var reasons []string
	ev := func(e Event) { reasons = append(reasons, e.Reason) }
	_, err = p.Ensure(ctx, request("reg.io/private", v1.PullAlways, nil), ev)
	var ie *Error
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, ReasonErrImagePull, ie.Reason)
	assert.Equal(t, `pull access denied`, ie.Message, "the runtime's error, as the kubelet's status")
	assert.Equal(t, []string{"Pulling", "Failed", "Failed"}, reasons)

	reasons = nil
	clk.Step(9 * time.Second)
	_, err = p.Ensure(ctx, request("reg.io/private", v1.PullAlways, nil), ev)
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, &Error{ReasonImagePullBackOff, `Back-off pulling image "reg.io/private": ErrImagePull: pull access denied`}, ie)
	assert.Equal(t, []string{"BackOff"}, reasons)
	assert.Len(t, f.pulls, 1, "no pull while backing off")

	clk.Step(time.Second)
	_, err = p.Ensure(ctx, request("reg.io/private", v1.PullAlways, nil), ev)
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, ReasonErrImagePull, ie.Reason)
	assert.Len(t, f.pulls, 2)
	clk.Step(19 * time.Second)
	_, err = p.Ensure(ctx, request("reg.io/private", v1.PullAlways, nil), ev)
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, ReasonImagePullBackOff, ie.Reason, "the second back-off is 20s")

	// Another pod pulling the same image is not held back.
	other := request("reg.io/private", v1.PullAlways, nil)
	other.Pod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u2"}}
	_, err = p.Ensure(ctx, other, ev)
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, ReasonErrImagePull, ie.Reason)

	// Success clears the back-off.
	f.want = ""
	clk.Step(time.Second)
	_, err = p.Ensure(ctx, request("reg.io/private", v1.PullAlways, nil), ev)
	require.NoError(t, err)
	_, err = p.Ensure(ctx, request("reg.io/private", v1.PullAlways, nil), ev)
	require.NoError(t, err)
}

// gatedImages blocks each pull until released and counts the pulls in
// flight.
type gatedImages struct {
	fakeImages
	started  chan struct{}
	release  chan struct{}
	inFlight atomic.Int32
	maxSeen  atomic.Int32
}

func (g *gatedImages) PullImage(_ context.Context, s *runtimeapi.ImageSpec, _ *runtimeapi.AuthConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	n := g.inFlight.Add(1)
	for {
		m := g.maxSeen.Load()
		if n <= m || g.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	g.started <- struct{}{}
	<-g.release
	g.inFlight.Add(-1)
	return "sha256:" + s.Image, nil
}

func (g *gatedImages) ImageStatus(context.Context, *runtimeapi.ImageSpec, bool) (*runtimeapi.ImageStatusResponse, error) {
	return &runtimeapi.ImageStatusResponse{}, nil
}

func TestPullSlots(t *testing.T) {
	for _, tc := range []struct {
		name     string
		max      int
		parallel int32
	}{{"serialized by default", 0, 1}, {"two at a time", 2, 2}, {"unbounded", -1, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			g := &gatedImages{started: make(chan struct{}), release: make(chan struct{})}
			p, err := New(Config{Images: g, MaxParallelPulls: tc.max, Clock: clocktesting.NewFakeClock(time.Unix(0, 0))})
			require.NoError(t, err)
			done := make(chan error, 3)
			for i := range 3 {
				r := request(fmt.Sprintf("img:%d", i), v1.PullAlways, nil)
				r.Pod.UID = types.UID(fmt.Sprint(i))
				go func() { _, err := p.Ensure(context.Background(), r, func(Event) {}); done <- err }()
			}
			// Let tc.parallel pulls start before releasing any, then one
			// release per further start.
			for range tc.parallel {
				<-g.started
			}
			for range 3 - tc.parallel {
				g.release <- struct{}{}
				<-g.started
			}
			for range tc.parallel {
				g.release <- struct{}{}
			}
			for range 3 {
				require.NoError(t, <-done)
			}
			assert.Equal(t, tc.parallel, g.maxSeen.Load())
		})
	}
}

// TestPullFailure: the waiting reason and message of a failed pull are the
// kubelet's (evalCRIPullErr's rows).
func TestPullFailure(t *testing.T) {
	for _, tc := range []struct{ err, reason, msg string }{
		{"rpc error: code = NotFound desc = not found", ReasonErrImagePull, "rpc error: code = NotFound desc = not found"},
		{"RegistryUnavailable", "RegistryUnavailable", "image pull failed for img because the registry is unavailable"},
		{"RegistryUnavailable: host down", "RegistryUnavailable", "image pull failed for img because the registry is unavailable: host down"},
		{"SignatureValidationFailed: bad key", "SignatureValidationFailed", "image pull failed for img because the signature validation failed: bad key"},
	} {
		reason, msg := pullFailure("img", errors.New(tc.err))
		assert.Equal(t, tc.reason, reason, tc.err)
		assert.Equal(t, tc.msg, msg, tc.err)
	}
}
