// Package integration runs nodekit against a real, in-process kube-apiserver.
// All tests that need the apiserver live in this one package so the ~150 MB
// test binary is linked once and the server is started once (TestMain).
package integration

import (
	"os"
	"testing"

	"github.com/nodekit/nodekit/test/apiserver"
)

var srv *apiserver.Server

func TestMain(m *testing.M) {
	if os.Getenv(replicaEnv) != "" {
		os.Exit(runReplicaProcess()) // a replica process of TestShardedReplicaSIGKILL
	}
	apiserver.Main(m, &srv)
}
