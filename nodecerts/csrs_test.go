package nodecerts

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestNotOurs(t *testing.T) {
	mine := ownRequest{name: "csr-1", uid: "u1", signer: certificatesv1.KubeletServingSignerName,
		request: []byte("our request"), username: "system:node:n1"}
	csr := func(change func(*certificatesv1.CertificateSigningRequest)) *certificatesv1.CertificateSigningRequest {
		c := &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: "csr-1", UID: "u1"},
			Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: certificatesv1.KubeletServingSignerName,
				Request: []byte("our request"), Username: "system:node:n1"},
		}
		if change != nil {
			change(c)
		}
		return c
	}
	for _, tc := range []struct {
		name string
		csr  *certificatesv1.CertificateSigningRequest
		want string // a part of the reason; "" for ours
	}{
		{name: "ours", csr: csr(nil)},
		{name: "recreated under the same name", csr: csr(func(c *certificatesv1.CertificateSigningRequest) { c.UID = "u2" }), want: "replaced"},
		{name: "another name", csr: csr(func(c *certificatesv1.CertificateSigningRequest) { c.Name = "evil-2" }), want: "replaced"},
		{name: "another signer", csr: csr(func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.SignerName = certificatesv1.KubeAPIServerClientKubeletSignerName
		}), want: "signer"},
		{name: "another key", csr: csr(func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = []byte("their request") }),
			want: "another key"},
		{name: "made by another node", csr: csr(func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Username = "system:node:n2" }),
			want: `made by "system:node:n2"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := notOurs(tc.csr, mine)
			if tc.want == "" {
				require.Empty(t, got)
				return
			}
			require.Contains(t, got, tc.want)
		})
	}
}

// The recording clientset remembers what the API server answered to the
// create: with no expected user, the requester it recorded (a bootstrap
// token's user); with one, a request recorded as made by anyone else is
// not followed.
func TestOwnCSRFollowsTheCreatedRequest(t *testing.T) {
	for _, tc := range []struct {
		name, expect, recordedAs string
		wantNotOurs              string
	}{
		{name: "bootstrap", expect: "", recordedAs: "system:bootstrap:abcdef"},
		{name: "node identity", expect: "system:node:n1", recordedAs: "system:node:n1"},
		{name: "node identity recorded as another user", expect: "system:node:n1", recordedAs: "system:node:n2",
			wantNotOurs: `made by "system:node:n2", not "system:node:n1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			client := fake.NewClientset()
			client.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
				c := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
				c.Name, c.UID, c.Spec.Username = "csr-1", types.UID("u1"), tc.recordedAs
				return false, nil, nil
			})
			own := &ownRequests{}
			st, err := ownCSR(ctx, client, own)
			require.NoError(t, err)
			require.Equal(t, csrState{}, st, "nothing made yet")

			_, err = own.recording(client, tc.expect).CertificatesV1().CertificateSigningRequests().Create(ctx,
				&certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
					Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
						Request: []byte("our request")}}, metav1.CreateOptions{})
			require.NoError(t, err)
			st, err = ownCSR(ctx, client, own)
			require.NoError(t, err)
			require.Equal(t, "csr-1", st.name)
			if tc.wantNotOurs != "" {
				require.Contains(t, st.notOurs, tc.wantNotOurs)
				return
			}
			require.Equal(t, csrState{name: "csr-1"}, st, "pending")

			require.NoError(t, client.CertificatesV1().CertificateSigningRequests().Delete(ctx, "csr-1", metav1.DeleteOptions{}))
			st, err = ownCSR(ctx, client, own)
			require.NoError(t, err)
			require.Equal(t, "it is gone", st.notOurs)
		})
	}
}
