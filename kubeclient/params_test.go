package kubeclient

import (
	"testing"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func schemeParams(t testing.TB) runtime.ParameterCodec {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	require.NoError(t, coordinationv1.AddToScheme(scheme))
	return runtime.NewParameterCodec(scheme)
}

// TestParamCodecAgreesWithTheScheme checks the fast path against the
// scheme's codec: the same parameters for every options type it serves,
// empty or not.
func TestParamCodecAgreesWithTheScheme(t *testing.T) {
	slow := schemeParams(t)
	fast := paramCodec{slow}
	gv := coordinationv1.SchemeGroupVersion
	for _, opts := range []runtime.Object{
		&metav1.GetOptions{}, &metav1.GetOptions{ResourceVersion: "0"},
		&metav1.CreateOptions{}, &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "m"},
		&metav1.UpdateOptions{}, &metav1.UpdateOptions{FieldValidation: "Strict"},
		&metav1.PatchOptions{}, &metav1.PatchOptions{Force: ptr.To(true), FieldManager: "m"},
		&metav1.ListOptions{}, &metav1.ListOptions{FieldSelector: "spec.nodeName=n"},
	} {
		want, err := slow.EncodeParameters(opts, gv)
		require.NoError(t, err)
		got, err := fast.EncodeParameters(opts, gv)
		require.NoError(t, err)
		require.Equal(t, want, got, "%T %+v", opts, opts)
	}
}

// BenchmarkEncodeParameters is what each renewal's empty UpdateOptions
// costs: through the scheme, and through the fast path.
func BenchmarkEncodeParameters(b *testing.B) {
	slow := schemeParams(b)
	gv := coordinationv1.SchemeGroupVersion
	for _, c := range []struct {
		name  string
		codec runtime.ParameterCodec
	}{{"scheme", slow}, {"fast", paramCodec{slow}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.codec.EncodeParameters(&metav1.UpdateOptions{}, gv); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
