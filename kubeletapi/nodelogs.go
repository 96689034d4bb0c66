package kubeletapi

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"time"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Limits of the node log query (pkg/kubelet/kubelet_server_journal.go).
const (
	// DefaultNodeLogQueryTimeout bounds a node log query, journal and
	// files together (the kubelet's 30s).
	DefaultNodeLogQueryTimeout = 30 * time.Second

	maxTailLines     = 100000
	maxServiceLength = 256
	maxServices      = 4
	// journalDateLayout is how the kubelet passes times to journalctl.
	journalDateLayout = "2006-1-2 15:4:5"
)

// reServiceNameUnsafeCharacters matches what a service name may not
// contain: it reaches journalctl's arguments.
var reServiceNameUnsafeCharacters = regexp.MustCompile(`[^a-zA-Z\-_.:0-9@]+`)

// JournalOptions are the node log query's options for service logs: the
// sinceTime, untilTime, tailLines, boot and pattern query parameters.
type JournalOptions struct {
	// SinceTime and UntilTime bound the entries' times.
	SinceTime, UntilTime *time.Time
	// TailLines keeps the last lines only (0 to 100000).
	TailLines *int
	// Boot selects a boot: 0 the current one, -1 the one before, …
	Boot *int
	// Pattern keeps the entries that match this PCRE2 regular expression.
	Pattern string
}

func (o *JournalOptions) isZero() bool {
	return o.SinceTime == nil && o.UntilTime == nil && o.TailLines == nil && o.Boot == nil && o.Pattern == ""
}

// Journal reads the node's service logs for the node log query (journald
// on Linux). Its methods may be called concurrently.
type Journal interface {
	// Units returns the systemd units that have entries in the journal, as
	// `journalctl --field _SYSTEMD_UNIT` lists them. A queried service logs
	// to the journal when one of them contains "<service>.service". An
	// error (no journal on this host) makes every service be looked for as
	// a file under Config.NodeLogDir, as the kubelet does when journalctl
	// cannot run.
	Units(ctx context.Context) ([]string, error)
	// Copy writes the journal entries of services that opts select to w as
	// they come, until they end or ctx is done. An error with an
	// `ExitCode() int` method (an *exec.ExitError) means the reader ran and
	// failed, its own message already in w; any other error that it could
	// not run, to which the node log query adds the kubelet's "error:
	// journal output not available" line.
	Copy(ctx context.Context, w io.Writer, services []string, opts JournalOptions) error
}

// nodeLogQuery is a parsed /logs/?query= request: services or files
// (names with a slash or backslash), and the options.
type nodeLogQuery struct {
	Services []string
	Files    []string
	JournalOptions
}

// parseNodeLogQuery decodes the query parameters as the kubelet's
// newNodeLogQuery: nil without any node log query parameter (the request
// is for a file under /logs/), field errors for malformed values.
func parseNodeLogQuery(query url.Values) (*nodeLogQuery, field.ErrorList) {
	var (
		errs field.ErrorList
		q    nodeLogQuery
	)
	queries, ok := query["query"]
	for _, v := range queries {
		// A slash or backslash is the hint that the query is for a file;
		// foo.log without one is a service, looked for as a file too.
		if strings.ContainsAny(v, `/\`) {
			q.Files = append(q.Files, v)
		} else if strings.TrimSpace(v) != "" {
			q.Services = append(q.Services, v)
		}
	}
	if ok && len(q.Files) == 0 && len(q.Services) == 0 {
		errs = append(errs, field.Invalid(field.NewPath("query"), queries, "may not be empty"))
	}
	parseTime := func(name string, dst **time.Time) {
		if v := query.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				errs = append(errs, field.Invalid(field.NewPath(name), v, "invalid time format"))
				return
			}
			*dst = &t
		}
	}
	parseInt := func(name string, dst **int) {
		if v := query.Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, field.Invalid(field.NewPath(name), v, err.Error()))
				return
			}
			*dst = &n
		}
	}
	parseTime("sinceTime", &q.SinceTime)
	parseTime("untilTime", &q.UntilTime)
	parseInt("boot", &q.Boot)
	parseInt("tailLines", &q.TailLines)
	q.Pattern = query.Get("pattern")
	if len(errs) > 0 {
		return nil, errs
	}
	if len(q.Files) == 0 && len(q.Services) == 0 && q.isZero() {
		return nil, nil
	}
	return &q, nil
}

// validate checks the query as the kubelet's nodeLogQuery.validate, files
// against the log directory dir.
func (q *nodeLogQuery) validate(dir string) field.ErrorList {
	errs := validateServices(q.Services)
	queryPath := field.NewPath("query")
	switch {
	case len(q.Files) == 0 && len(q.Services) == 0:
		errs = append(errs, field.Required(queryPath, "cannot be empty with options"))
	case len(q.Files) > 0 && len(q.Services) > 0:
		errs = append(errs, field.Invalid(queryPath, fmt.Sprintf("%v, %v", q.Files, q.Services),
			"cannot specify a file and service"))
	case len(q.Files) > 1:
		errs = append(errs, field.Invalid(queryPath, q.Files, "cannot specify more than one file"))
	case len(q.Files) == 1 && !q.isZero():
		errs = append(errs, field.Invalid(queryPath, q.Files, "cannot specify file with options"))
	case len(q.Files) == 1:
		if err := statInRoot(dir, q.Files[0]); err != nil {
			errs = append(errs, field.Invalid(queryPath, q.Files, err.Error()))
		}
	}
	if q.SinceTime != nil && q.UntilTime != nil && q.SinceTime.After(*q.UntilTime) {
		errs = append(errs, field.Invalid(field.NewPath("untilTime"), q.UntilTime, "must be after `sinceTime`"))
	}
	if q.Boot != nil && *q.Boot > 0 {
		errs = append(errs, field.Invalid(field.NewPath("boot"), *q.Boot, "must be less than 1"))
	}
	if q.TailLines != nil {
		if msgs := utilvalidation.IsInRange(*q.TailLines, 0, maxTailLines); len(msgs) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("tailLines"), *q.TailLines, msgs[0]))
		}
	}
	if _, err := syntax.Parse(q.Pattern, syntax.Perl); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("pattern"), q.Pattern, err.Error()))
	}
	return errs
}

// relativeLogPath is a queried file's path relative to the log directory:
// "/kubelet.log" (the documented form) is "kubelet.log" there.
func relativeLogPath(name string) string {
	if rel := strings.TrimLeft(filepath.ToSlash(name), "/"); rel != "" {
		return rel
	}
	return "."
}

// statInRoot checks that name exists in dir without leaving it (no "..",
// no symbolic link out of it).
func statInRoot(dir, name string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	_, err = root.Stat(relativeLogPath(name))
	return err
}

func validateServices(services []string) field.ErrorList {
	var errs field.ErrorList
	for _, s := range services {
		if err := safeServiceName(s); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("query"), s, err.Error()))
		}
	}
	if len(services) > maxServices {
		errs = append(errs, field.TooMany(field.NewPath("query"), len(services), maxServices))
	}
	return errs
}

func safeServiceName(s string) error {
	if len(s) > maxServiceLength {
		return fmt.Errorf("length must be less than %d", maxServiceLength)
	}
	if reServiceNameUnsafeCharacters.MatchString(s) {
		return errors.New("input contains unsupported characters")
	}
	return nil
}

// nodeLogs is the /logs/ handler: the files of NodeLogDir, and with
// NodeLogQuery the kubelet's node log query.
func (s *Server) nodeLogs() http.Handler {
	files := http.FileServer(http.Dir(s.cfg.NodeLogDir))
	if !s.cfg.NodeLogQuery {
		return http.StripPrefix("/logs/", files)
	}
	return http.StripPrefix("/logs/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, errs := parseNodeLogQuery(r.URL.Query())
		if len(errs) > 0 {
			http.Error(w, errs.ToAggregate().Error(), http.StatusBadRequest)
			return
		}
		if q != nil {
			if r.URL.Path != "/" && r.URL.Path != "" {
				http.Error(w, "path not allowed in query mode", http.StatusNotAcceptable)
				return
			}
			if errs := q.validate(s.cfg.NodeLogDir); len(errs) > 0 {
				http.Error(w, errs.ToAggregate().Error(), http.StatusNotAcceptable)
				return
			}
			if len(q.Services) > 0 {
				s.serveServiceLogs(w, r, q)
				return
			}
			// validate lets one file through, without options.
			r.URL.Path = "/" + strings.TrimLeft(filepath.ToSlash(q.Files[0]), "/")
			r.URL.RawPath = ""
		}
		files.ServeHTTP(w, r)
	}))
}

// serveServiceLogs answers a query for services as the kubelet's journal
// server: plain text (gzip when the client asks for exactly that), the
// journal's entries or the services' log files, and errors as lines in the
// text.
func (s *Server) serveServiceLogs(w http.ResponseWriter, r *http.Request, q *nodeLogQuery) {
	var out io.Writer = w
	w.Header().Set("Content-Type", "text/plain;charset=UTF-8")
	if r.Header.Get("Accept-Encoding") == "gzip" {
		w.Header().Set("Content-Encoding", "gzip")
		gz, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
		if err != nil {
			fmt.Fprintf(w, "\nfailed to get gzip writer: %v\n", err)
			return
		}
		defer func() { _ = gz.Close() }()
		out = gz
	}
	ctx, stop := withClockTimeout(r.Context(), s.cfg.Clock, s.cfg.NodeLogQueryTimeout)
	defer stop()
	s.copyServiceLogs(ctx, out, q)
}

// withClockTimeout returns a context that ends with ctx or after d on clk;
// stop ends it and waits for the goroutine that watches clk.
func withClockTimeout(ctx context.Context, clk clock.Clock, d time.Duration) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	timer := clk.NewTimer(d)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-timer.C():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel()
		timer.Stop()
		<-done
	}
}

// copyServiceLogs writes the logs of the query's services: from the
// journal for those it has, else from a file named after the service under
// NodeLogDir (the kubelet's copyForBoot).
func (s *Server) copyServiceLogs(ctx context.Context, w io.Writer, q *nodeLogQuery) {
	if ctx.Err() != nil {
		return
	}
	logger := klog.FromContext(ctx)
	units, err := s.cfg.Journal.Units(ctx)
	if err != nil {
		logger.V(2).Info("No journal to read service logs from; looking for log files", "err", err)
	}
	var native, fileLoggers []string
	for _, service := range q.Services {
		if slices.ContainsFunc(units, func(u string) bool { return strings.Contains(u, service+".service") }) {
			native = append(native, service)
		} else {
			fileLoggers = append(fileLoggers, service)
		}
	}
	if len(native) > 0 {
		if err := s.cfg.Journal.Copy(ctx, w, native, q.JournalOptions); err != nil {
			var exit interface{ ExitCode() int }
			if !errors.As(err, &exit) && (q.Boot == nil || *q.Boot == 0) {
				logger.V(2).Info("Journal output not available", "services", native, "err", err)
				fmt.Fprintf(w, "\nerror: journal output not available\n")
			}
		}
	}
	if len(fileLoggers) > 0 && !q.isZero() {
		fmt.Fprintf(w, "\noptions present and query resolved to log files for %v\ntry without specifying options\n", fileLoggers)
		return
	}
	if len(fileLoggers) > 0 && ctx.Err() != nil {
		fmt.Fprintf(w, "\ncontext error: %v\n", ctx.Err())
		return
	}
	for _, service := range fileLoggers {
		copyServiceLogFile(ctx, w, s.cfg.NodeLogDir, service)
	}
}

// copyServiceLogFile writes the first of <dir>/<service>,
// <dir>/<service>.log and <dir>/<service>/<service>.log that is a file,
// or a line saying why none could be read (the kubelet's
// heuristicsCopyFileLogs).
func copyServiceLogFile(ctx context.Context, w io.Writer, dir, service string) {
	var err error
	for _, name := range []string{service, service + ".log", service + "/" + service + ".log"} {
		if err = copyLogFileInRoot(ctx, w, dir, name); !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(w, "\nlog not found for %s\n", service)
	case err != nil:
		fmt.Fprintf(w, "\nerror getting log for %s: %v\n", service, err)
	}
}

// copyLogFileInRoot copies dir/name, which must stay within dir; a
// directory is os.ErrNotExist.
func copyLogFileInRoot(ctx context.Context, w io.Writer, dir, name string) error {
	f, err := os.OpenInRoot(dir, name)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return os.ErrNotExist
	}
	_, err = io.Copy(w, ctxReader{ctx, f})
	return err
}

// ctxReader stops reading once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}
