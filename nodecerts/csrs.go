package nodecerts

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// csrState is what the API server says of the newest certificate signing
// request this node made for one signer since a point in time.
type csrState struct {
	name   string // "" if there is none
	denied string // why it was denied or failed; "" while pending or issued
	issued bool
}

// newestCSR finds the newest CSR of signer whose request is for
// commonName, created at or after since (a CSR of an earlier run,
// approved or denied, says nothing about this one).
func newestCSR(ctx context.Context, client kubernetes.Interface, signer, commonName string, since time.Time) (csrState, error) {
	list, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		return csrState{}, err
	}
	var newest *certificatesv1.CertificateSigningRequest
	for i := range list.Items {
		csr := &list.Items[i]
		if csr.Spec.SignerName != signer || csr.CreationTimestamp.Time.Before(since.Truncate(time.Second)) ||
			requestCommonName(csr.Spec.Request) != commonName {
			continue
		}
		if newest == nil || newest.CreationTimestamp.Before(&csr.CreationTimestamp) {
			newest = csr
		}
	}
	if newest == nil {
		return csrState{}, nil
	}
	st := csrState{name: newest.Name}
	cond, done := outcome(newest)
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

// requestCommonName is the subject's common name of a PEM certificate
// request, "" if it does not parse.
func requestCommonName(request []byte) string {
	block, _ := pem.Decode(request)
	if block == nil {
		return ""
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return ""
	}
	return req.Subject.CommonName
}
