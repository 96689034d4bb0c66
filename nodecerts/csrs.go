package nodecerts

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	certificatesv1client "k8s.io/client-go/kubernetes/typed/certificates/v1"
)

// A certificate signing request is this node's only if this process
// created it: any node, and any holder of a bootstrap token, may create a
// request whose subject is system:node:NAME, so the subject says nothing
// about who made it. The certificate manager creates its requests through
// a clientset that ownRequests wraps, which remembers what the API server
// answered; a request found later is ours only if it is that object.

// ownRequest is a certificate signing request this process created.
type ownRequest struct {
	name string
	uid  types.UID
	// signer is the request's spec.signerName.
	signer string
	// request is the PEM request as sent: it carries the public key of
	// the private key the certificate manager generated for it.
	request []byte
	// username is who the request must be recorded as made by
	// (spec.username): the node itself when it was made with the node's
	// own credentials, otherwise whoever the API server recorded when it
	// answered the create (the bootstrap token's user, typically).
	username string
}

// ownRequests remembers the newest certificate signing request made
// through the clientsets it wraps. It is safe for concurrent use.
type ownRequests struct {
	mu     sync.Mutex
	newest *ownRequest
}

// last returns the newest request created so far, false if none.
func (o *ownRequests) last() (ownRequest, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.newest == nil {
		return ownRequest{}, false
	}
	return *o.newest, true
}

func (o *ownRequests) record(r ownRequest) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.newest = &r
}

// recording wraps client so that the certificate signing requests created
// through it (certificates.k8s.io/v1) are remembered. user is who such a
// request must be recorded as made by; "" takes the API server's answer.
func (o *ownRequests) recording(client kubernetes.Interface, user string) kubernetes.Interface {
	return recordingClientset{Interface: client, own: o, user: user}
}

// recordingClientset is a clientset whose certificate signing request
// creations are remembered by own.
type recordingClientset struct {
	kubernetes.Interface
	own  *ownRequests
	user string
}

// CertificatesV1 returns the wrapped group client, recording creations.
func (c recordingClientset) CertificatesV1() certificatesv1client.CertificatesV1Interface {
	return recordingCertificatesV1{CertificatesV1Interface: c.Interface.CertificatesV1(), own: c.own, user: c.user}
}

// IsWatchListSemanticsUnSupported passes on what the wrapped clientset
// says (client-go's reflector asks; fake clientsets answer true).
func (c recordingClientset) IsWatchListSemanticsUnSupported() bool {
	u, ok := c.Interface.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && u.IsWatchListSemanticsUnSupported()
}

type recordingCertificatesV1 struct {
	certificatesv1client.CertificatesV1Interface
	own  *ownRequests
	user string
}

func (c recordingCertificatesV1) CertificateSigningRequests() certificatesv1client.CertificateSigningRequestInterface {
	return recordingCSRs{CertificateSigningRequestInterface: c.CertificatesV1Interface.CertificateSigningRequests(), own: c.own, user: c.user}
}

type recordingCSRs struct {
	certificatesv1client.CertificateSigningRequestInterface
	own  *ownRequests
	user string
}

// Create creates the request and remembers the API server's answer.
func (c recordingCSRs) Create(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, opts metav1.CreateOptions) (*certificatesv1.CertificateSigningRequest, error) {
	out, err := c.CertificateSigningRequestInterface.Create(ctx, csr, opts)
	if err != nil || out == nil || opts.DryRun != nil {
		return out, err
	}
	user := c.user
	if user == "" {
		user = out.Spec.Username
	}
	c.own.record(ownRequest{name: out.Name, uid: out.UID, signer: csr.Spec.SignerName,
		request: bytes.Clone(csr.Spec.Request), username: user})
	return out, err
}

// csrState is what the API server says of the newest certificate signing
// request this process made.
type csrState struct {
	name string // "" if none was made yet
	// notOurs says why the API server's request of that name cannot be
	// taken for ours (gone, replaced, recorded as made by someone else);
	// "" if it is ours. Nothing else is set then.
	notOurs string
	denied  string // why it was denied or failed; "" while pending or issued
	issued  bool
}

// ownCSR reads the newest request own remembers from the API server and
// checks that it is still the one created.
func ownCSR(ctx context.Context, client kubernetes.Interface, own *ownRequests) (csrState, error) {
	mine, ok := own.last()
	if !ok {
		return csrState{}, nil
	}
	st := csrState{name: mine.name}
	csr, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, mine.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		st.notOurs = "it is gone"
		return st, nil
	}
	if err != nil {
		return csrState{}, err
	}
	if st.notOurs = notOurs(csr, mine); st.notOurs != "" {
		return st, nil
	}
	cond, done := outcome(csr)
	switch {
	case !done:
	case cond.Type == certificatesv1.CertificateApproved:
		st.issued = true
	default:
		st.denied = strings.ToLower(string(cond.Type))
		if cond.Reason != "" || cond.Message != "" {
			st.denied += fmt.Sprintf(" (%s: %s)", cond.Reason, cond.Message)
		}
	}
	return st, nil
}

// notOurs says why csr, read from the API server, is not the request mine
// this process created; "" if it is: the same object (name and UID), the
// same signer, the same request (so the same public key, whose private key
// only this process holds), recorded as made by the expected user.
func notOurs(csr *certificatesv1.CertificateSigningRequest, mine ownRequest) string {
	switch {
	case csr.Name != mine.name || csr.UID != mine.uid:
		return fmt.Sprintf("it was replaced (uid %s, not %s)", csr.UID, mine.uid)
	case csr.Spec.SignerName != mine.signer:
		return fmt.Sprintf("its signer is %q, not %q", csr.Spec.SignerName, mine.signer)
	case !bytes.Equal(csr.Spec.Request, mine.request):
		return "it holds another certificate request (another key) than this node's"
	case csr.Spec.Username != mine.username:
		return fmt.Sprintf("the API server records it as made by %q, not %q", csr.Spec.Username, mine.username)
	}
	return ""
}

// outcome returns the condition that decided csr, if any: denied or
// failed, or approved with its certificate issued.
func outcome(csr *certificatesv1.CertificateSigningRequest) (certificatesv1.CertificateSigningRequestCondition, bool) {
	approved := false
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return c, true
		case certificatesv1.CertificateApproved:
			approved = true
		}
	}
	if approved && len(csr.Status.Certificate) > 0 {
		return certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved}, true
	}
	return certificatesv1.CertificateSigningRequestCondition{}, false
}
