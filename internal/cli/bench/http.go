package bench

import (
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/load/loadgen"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// HTTPName is the result of `kubeslow bench http`.
const HTTPName = "net.http"

func newHTTP(streams common.IOStreams) *cobra.Command {
	var out common.OutputFlag
	var mode string
	var prof profileFlags
	cfg := loadgen.Config{}
	cmd := &cobra.Command{
		Use:   "http URL",
		Short: "HTTP load: closed loop or open loop at a fixed rate (latency from the intended send time), keep-alive or new connections",
		Long: `http sends requests to URL (http:// only) and reports requests/s, the latency percentiles (HdrHistogram),
status codes and errors. --mode open sends at --rate whatever the server does and measures each request from
the moment it was due, so a stalling server shows in the tail (no coordinated omission); --mode closed keeps
--concurrency requests in flight. Every run is bounded by --duration (at most 10 min) and --max-requests.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.Validate(); err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			u, err := url.Parse(args[0])
			if err != nil || u.Scheme != "http" || u.Host == "" {
				return &common.ExitError{Code: 2, Err: fmt.Errorf("URL %q: want http://host:port/path", args[0])}
			}
			cfg.Addr, cfg.Host, cfg.Path, cfg.Mode = u.Host, u.Host, u.RequestURI(), loadgen.Mode(mode)
			if u.Port() == "" {
				cfg.Addr = net.JoinHostPort(u.Hostname(), "80")
			}
			if err := cfg.Validate(); err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			streams.Progressf("%s: %s", args[0], cfg.Describe())
			stopProf, err := prof.start()
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			start := time.Now()
			res, err := loadgen.Run(common.Context(cmd), cfg)
			stopProf()
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			r := result.Result{Name: HTTPName, Status: result.StatusPass, Reason: cfg.Describe(), Start: start, End: time.Now(),
				Metrics: res.Metrics(nil)}
			if res.Requests == 0 {
				r.Status, r.Reason = result.StatusError, fmt.Sprintf("no request completed (%d errors: %v)", res.Errors, res.ErrorKinds)
			}
			return common.Finish(streams, &out, runner.StandaloneReport("none", args[0], start, r), nil, result.SeverityWarning)
		},
	}
	out.Add(cmd)
	fl := cmd.Flags()
	prof.add(fl)
	fl.StringVar(&mode, "mode", "closed", "closed (max throughput at --concurrency) or open (fixed --rate)")
	fl.IntVarP(&cfg.Concurrency, "concurrency", "c", 8, "connections (requests in flight)")
	fl.Float64Var(&cfg.Rate, "rate", 1000, "open loop: requests per second")
	fl.DurationVarP(&cfg.Duration, "duration", "d", 10*time.Second, "how long to send")
	fl.Int64Var(&cfg.MaxRequests, "max-requests", 0, "stop after this many requests (0: no limit but --duration)")
	fl.BoolVar(&cfg.NewConn, "new-conn", false, "a new TCP connection per request (default: keep-alive)")
	fl.StringVar(&cfg.Method, "method", "POST", "HTTP method")
	fl.IntVar(&cfg.BodyBytes, "body", 3072, "request body bytes (case D: a 3 KB POST answered by an immediate 404)")
	fl.DurationVar(&cfg.Timeout, "timeout", 5*time.Second, "per-request time-out")
	fl.IntVarP(&cfg.Threads, "threads", "t", 0, "epoll engine: event-loop threads (0: the usable cores, half of them against a server on this host with keep-alive; at most --concurrency; wrk's -t)")
	fl.StringVar(&cfg.Engine, "engine", loadgen.EngineAuto, "epoll (an epoll loop per thread, as wrk: the default on Linux) or go (a goroutine per connection)")
	return cmd
}
