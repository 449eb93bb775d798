package labtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/host"
	"github.com/kubeslow/kubeslow/internal/source/kube"
)

// A shared lab is kept up across the tests of one test process (one package): tests that ask for the same
// configuration one after another run on one lab, each checked at its end to have left the lab healthy;
// a test that asks for a configuration differing only in settings of the lab's components (a scenario that
// is a flag of the scheduler, the controller-manager, kwok, CoreDNS or etcd) gets the same lab reconfigured
// (lab.Reconfigure); one that asks for another configuration takes the previous lab down (checking that
// nothing it made is left, as Up's down does) and starts its own. The last one goes down in Main, the
// package's TestMain. Starting a lab takes 9-25 s on 2 cores, and its teardown a few more; most integration
// tests need a few seconds to a minute on it.
//
// Tests run one at a time in a package (none of them calls t.Parallel), so the state needs no lock.
var shared struct {
	lock  *os.File // the machine's lab lock, held while a shared lab is up
	up    bool
	d     lab.Dirs
	cfg   lab.Config
	rc    *rest.Config
	procs []Process
	// spent: the last test left the lab in a state no other test may inherit (a scenario with no Stop, a
	// failed health check): the next test starts a fresh one.
	spent string
	// by is the test that started it, users the tests that ran on it (for the log).
	by    string
	users int
}

// Shared returns a running lab of configuration cfg (lab.Up's): the previous test's when it has the same
// configuration and was left healthy, or differs only in settings of its components (lab.Reconfigure
// restarts them), else a fresh one (the previous taken down first). When the test ends
// it checks that the lab is healthy again (its components running, every node Ready, the apiserver ready,
// no namespace of a kubeslow run left undeleted, no lab process but the lab's own): a test that leaves it otherwise
// fails, and the next test gets a fresh lab. A test that changes the lab for good (a scenario without a
// Stop, a fault left in place) calls Spend.
func Shared(t *testing.T, cfg lab.Config) (lab.Dirs, *rest.Config) {
	t.Helper()
	gate(t)
	if shared.up && shared.spent == "" && !reflect.DeepEqual(shared.cfg, cfg) {
		reconfigure(t, cfg)
	}
	if shared.up && (shared.spent != "" || !reflect.DeepEqual(shared.cfg, cfg)) {
		why := shared.spent
		if why == "" {
			why = "another configuration is asked for"
		}
		t.Logf("shared lab of %s (%d tests on it): taking it down: %s", shared.by, shared.users, why)
		if err := closeShared(); err != nil {
			t.Fatal(err)
		}
	}
	if !shared.up {
		startShared(t, cfg)
	} else {
		t.Logf("shared lab of %s reused (test %d on it)", shared.by, shared.users+1)
	}
	shared.users++
	t.Cleanup(func() { checkShared(t) })
	return shared.d, rest.CopyConfig(shared.rc)
}

// reconfigure turns the shared lab into the lab of cfg where only settings of its components differ
// (lab.Reconfigure: the components concerned restarted, in seconds where a new lab takes 10-25 s and its
// teardown), and checks it healthy; where it cannot (lab.NeedsNewLabError), the lab is left to Shared to
// replace. A failed reconfiguration, or a lab unhealthy after it, fails the test (and the next gets a new lab).
func reconfigure(t *testing.T, cfg lab.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	restarted, err := lab.Reconfigure(ctx, shared.d, cfg, t.Logf)
	if err != nil {
		if !lab.IsNeedsNewLab(err) {
			t.Errorf("shared lab of %s: reconfiguring it failed: %v", shared.by, err)
			shared.spent = "reconfiguring it failed"
		} else {
			t.Logf("shared lab of %s: %v", shared.by, err)
		}
		return
	}
	// The restarted components' new processes replace theirs among the lab's own.
	for _, p := range Processes(t, shared.d) {
		if slices.Contains(restarted, p.Name) {
			for i := range shared.procs {
				if shared.procs[i].Name == p.Name {
					shared.procs[i] = p
				}
			}
		}
	}
	if err := sharedHealthy(ctx); err != nil {
		t.Errorf("shared lab of %s: not healthy after reconfiguring it: %v", shared.by, err)
		shared.spent = "not healthy after reconfiguring it"
		return
	}
	shared.cfg = cfg
	what := "no component restarted"
	if len(restarted) > 0 {
		what = strings.Join(restarted, ", ") + " restarted"
	}
	t.Logf("shared lab of %s reconfigured for %s in %s (%s)", shared.by, t.Name(), time.Since(began).Round(100*time.Millisecond), what)
}

// Spend marks the shared lab as changed for good by this test (why): the next test starts a fresh one.
func Spend(t *testing.T, why string) {
	t.Helper()
	shared.spent = t.Name() + ": " + why
}

func startShared(t *testing.T, cfg lab.Config) {
	t.Helper()
	if shared.lock == nil {
		f, err := takeLock(t.Logf)
		if err != nil {
			t.Fatal(err)
		}
		shared.lock = f
	}
	d, err := freshDirs()
	if err != nil {
		releaseLock()
		t.Fatal(err)
	}
	// fail takes down what was started, removes the state directory and releases the lock.
	fail := func(format string, args ...any) {
		t.Helper()
		_ = lab.Down(context.Background(), d, t.Logf)
		_ = os.Remove(filepath.Dir(d.State))
		releaseLock()
		t.Fatalf(format, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	began := time.Now()
	if _, err := lab.Up(ctx, d, cfg, t.Logf); err != nil {
		fail("lab up: %v", err)
	}
	rc, err := lab.AdminRESTConfig(d)
	if err != nil {
		fail("%v", err)
	}
	shared.up, shared.d, shared.cfg, shared.rc, shared.spent, shared.by, shared.users = true, d, cfg, rc, "", t.Name(), 0
	shared.procs = Processes(t, d)
	t.Logf("shared lab started for %s in %s", t.Name(), time.Since(began).Round(100*time.Millisecond))
}

// checkShared fails the test if it left the shared lab unhealthy (and spends the lab).
func checkShared(t *testing.T) {
	if !shared.up || shared.spent != "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	if err := sharedHealthy(ctx); err != nil {
		t.Errorf("the test left the shared lab unhealthy: %v", err)
		shared.spent = t.Name() + " left it unhealthy"
		return
	}
	t.Logf("shared lab healthy at the test's end (checked in %s)", time.Since(began).Round(100*time.Millisecond))
}

// sharedHealthy waits (a fault may take a moment to recover from) until the lab's components run, the
// apiserver is ready, every node is Ready, no namespace of a kubeslow run is left undeleted and no lab process runs
// that was not there when it started; it returns what is still wrong when ctx ends.
func sharedHealthy(ctx context.Context) error {
	c, err := lab.AdminClient(shared.d)
	if err != nil {
		return err
	}
	own := map[string]bool{}
	for _, p := range shared.procs {
		own[p.Name] = true
	}
	var last error
	check := func(ctx context.Context) error {
		st, err := lab.GetStatus(ctx, shared.d)
		if err != nil {
			return err
		}
		var bad []string
		for _, comp := range st.Components {
			switch {
			case !own[comp.Name] && comp.Running:
				bad = append(bad, "lab process "+comp.Name+" left running")
			case own[comp.Name] && !comp.Running:
				bad = append(bad, "component "+comp.Name+" not running")
			}
		}
		// The nodes from the apiserver (lab.GetStatus lists them only while every recorded process runs, and a
		// stopped scenario's load stays recorded, stopped).
		nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			bad = append(bad, "listing nodes: "+err.Error())
		} else {
			for i := range nodes.Items {
				if !kube.NodeReady(&nodes.Items[i]) {
					bad = append(bad, "node "+nodes.Items[i].Name+" not Ready")
				}
			}
			if want := shared.cfg.Nodes + shared.cfg.RealNodes; len(nodes.Items) < want {
				bad = append(bad, fmt.Sprintf("%d nodes, want %d", len(nodes.Items), want))
			}
		}
		if body, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
			bad = append(bad, fmt.Sprintf("apiserver not ready: %v %s", err, strings.TrimSpace(string(body))))
		}
		// A run's namespace deleted by kubeslow is enough: the namespace controller empties and removes it
		// on its own clock (5 s after the delete, then its passes: 6-11 s a test, measured on 2026-11-29),
		// which the next test need not wait for (kubeslow's measurements see their own run's objects only).
		// One still going after goingMax is stuck, and the lab is not healthy.
		nss, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: kube.RunLabel})
		if err != nil {
			bad = append(bad, "listing namespaces: "+err.Error())
		} else {
			for _, ns := range nss.Items {
				switch dt := ns.DeletionTimestamp; {
				case dt == nil:
					bad = append(bad, "namespace "+ns.Name+" of run "+ns.Labels[kube.RunLabel]+" left")
				case time.Since(dt.Time) > goingMax:
					bad = append(bad, fmt.Sprintf("namespace %s of run %s deleted %s ago and still there", ns.Name, ns.Labels[kube.RunLabel], time.Since(dt.Time).Round(time.Second)))
				}
			}
		}
		slices.Sort(bad)
		if len(bad) > 0 {
			return errors.New(strings.Join(bad, "; "))
		}
		return nil
	}
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		last = check(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%v (after %v)", last, err)
	}
	return nil
}

// goingMax is how long a run's deleted namespace may take to go before sharedHealthy calls it stuck: the
// namespace controller's 5 s delay, its passes and a real node's pods' 30 s grace, with room.
const goingMax = 2 * time.Minute

// closeShared takes the shared lab down, checks that nothing it made is left and releases the lab lock.
func closeShared() error {
	if !shared.up {
		releaseLock()
		return nil
	}
	var errs []error
	if err := lab.Down(context.Background(), shared.d, func(string, ...any) {}); err != nil {
		errs = append(errs, fmt.Errorf("lab down: %w", err))
	}
	for _, l := range leftovers(shared.d, shared.procs) {
		errs = append(errs, errors.New(l))
	}
	_ = os.Remove(filepath.Dir(shared.d.State))
	shared.up = false
	releaseLock()
	if len(errs) > 0 {
		return fmt.Errorf("the shared lab of %s: %w", shared.by, errors.Join(errs...))
	}
	return nil
}

func releaseLock() {
	if shared.lock != nil {
		_ = shared.lock.Close()
		shared.lock = nil
	}
}

// Main is the TestMain of a package whose tests share labs: it runs the tests, then takes the last shared
// lab down (a leftover fails the run).
func Main(m *testing.M) {
	code := m.Run()
	if err := closeShared(); err != nil {
		fmt.Fprintln(os.Stderr, "labtest:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// takeLock takes the machine's lab lock (waiting for another holder), logging the wait through logf.
func takeLock(logf func(string, ...any)) (*os.File, error) {
	return host.Lock(LockPath, "lab lock", logf)
}
