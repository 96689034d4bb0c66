package kubeletapi_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/nodekit/nodekit/kubeletapi"
	"github.com/nodekit/nodekit/kubeletapi/kubeletapitest"
)

// The node log query (kubectl get --raw
// "/api/v1/nodes/<node>/proxy/logs/?query=kubelet&tailLines=3") reads a
// service's journal with journalctl, or its log file under NodeLogDir.
// Here a canned CommandRunner stands in for journalctl; a host leaves
// Journal nil (journalctl from PATH) or sets its own.
func ExampleJournalctl() {
	logDir, err := os.MkdirTemp("", "var-log")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(logDir)
	if err := os.WriteFile(filepath.Join(logDir, "myapp.log"), []byte("myapp: ready\n"), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	journalctl := &kubeletapitest.CommandRunner{}
	journalctl.Set([]string{"journalctl", "--field", "_SYSTEMD_UNIT"}, "kubelet.service\n", "", nil)
	journalctl.Set([]string{"journalctl", "--utc"}, "Jan 02 15:04:05.000000 node-1 kubelet[42]: Started kubelet\n", "", nil)

	srv, err := kubeletapi.New(kubeletapi.Config{
		NodeName:     "node-1",
		Addr:         kubeletapi.Disabled,
		Auth:         kubeletapi.AuthConfig{Anonymous: true, AlwaysAllow: true}, // tests and demos only
		Pods:         kubeletapitest.NewPodLister(),
		NodeLogDir:   logDir, // "/var/log" on a node
		NodeLogQuery: true,
		Journal:      &kubeletapi.Journalctl{Runner: journalctl},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	for _, query := range []string{"query=kubelet&tailLines=3", "query=myapp", "query=kubelet&boot=1"} {
		resp, err := ts.Client().Get(ts.URL + "/logs/?" + query)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s: %s", resp.Status, body)
	}
	fmt.Println(journalctl.Calls()[1].Args)
	// Output:
	// 200 OK: Jan 02 15:04:05.000000 node-1 kubelet[42]: Started kubelet
	// 200 OK: myapp: ready
	// 406 Not Acceptable: boot: Invalid value: 1: must be less than 1
	// [--utc --no-pager --output=short-precise --pager-end --lines=3 --unit=kubelet]
}
