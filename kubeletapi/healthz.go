package kubeletapi

import (
	"fmt"
	"net/http"
	"strings"
)

// healthzHandler answers /healthz like the apiserver's healthz package
// (which the kubelet uses): "ok", or with ?verbose one "[+]name ok" line
// per check; a failing check makes it 500 with "[-]name failed: reason
// withheld" (the reason is at /healthz/<name>). ?exclude=name skips one.
// Each check it runs (not an excluded one) is passed to observe with
// whether it passed. Written here because the staging handler records
// into process-global metrics and logs through the global klog.
func healthzHandler(checks []HealthCheck, observe func(name string, passed bool)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		excluded := map[string]bool{}
		for _, name := range r.URL.Query()["exclude"] {
			excluded[name] = true
		}
		var out strings.Builder
		failed := false
		for _, c := range checks {
			if excluded[c.Name] {
				fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.Name)
				continue
			}
			err := c.Check()
			observe(c.Name, err == nil)
			if err != nil {
				fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", c.Name)
				failed = true
				continue
			}
			fmt.Fprintf(&out, "[+]%s ok\n", c.Name)
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if failed {
			http.Error(w, out.String()+"healthz check failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if _, verbose := r.URL.Query()["verbose"]; !verbose {
			_, _ = w.Write([]byte("ok"))
			return
		}
		_, _ = fmt.Fprintf(w, "%shealthz check passed\n", out.String())
	})
}

// healthzCheckHandler answers /healthz/<name> with "ok" or the reason.
func healthzCheckHandler(c HealthCheck) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if err := c.Check(); err != nil {
			http.Error(w, fmt.Sprintf("internal server error: %v", err), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
}

// installHealthz registers /healthz and /healthz/<name> for ping plus the
// host's checks; /healthz passes each check's result to observe.
func installHealthz(mux *http.ServeMux, checks []HealthCheck, observe func(name string, passed bool)) {
	all := append([]HealthCheck{{Name: "ping", Check: func() error { return nil }}}, checks...)
	mux.Handle("GET /healthz", healthzHandler(all, observe))
	for _, c := range all {
		mux.Handle("GET /healthz/"+c.Name, healthzCheckHandler(c))
	}
}
