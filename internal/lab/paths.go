package lab

import (
	"errors"
	"github.com/kubeslow/kubeslow/internal/lab/build"
	"github.com/kubeslow/kubeslow/internal/lab/host"
	"os"
	"path/filepath"
)

// Dirs are the two roots of the lab: the build cache (binaries, Go caches; survives `lab down`) and the
// state directory (PKI, logs, process records, etcd mount point; removed by `lab down`).
type Dirs struct {
	Cache string
	State string
}

// DefaultDirs honours $KUBESLOW_CACHE_DIR / $KUBESLOW_STATE_DIR, then the XDG base directories.
func DefaultDirs() (Dirs, error) {
	cache, err := build.DefaultCache()
	if err != nil {
		return Dirs{}, err
	}
	state := os.Getenv("KUBESLOW_STATE_DIR")
	if state == "" {
		s := os.Getenv("XDG_STATE_HOME")
		if s == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return Dirs{}, errors.New("cannot find a state directory: set $KUBESLOW_STATE_DIR or $HOME")
			}
			s = filepath.Join(home, ".local", "state")
		}
		state = filepath.Join(s, "kubeslow", "lab")
	}
	return Dirs{Cache: cache.Dir, State: state}, nil
}

// Paths inside the state directory.
func (d Dirs) ConfigFile() string      { return filepath.Join(d.State, "lab.json") }
func (d Dirs) PKIDir() string          { return filepath.Join(d.State, "pki") }
func (d Dirs) LogDir() string          { return filepath.Join(d.State, "logs") }
func (d Dirs) ProcDir() string         { return filepath.Join(d.State, "procs") }
func (d Dirs) EtcdDir() string         { return filepath.Join(d.State, "etcd") }
func (d Dirs) ConfDir() string         { return filepath.Join(d.State, "config") }
func (d Dirs) AuditLog() string        { return filepath.Join(d.LogDir(), "audit.log") }
func (d Dirs) AdminKubeconfig() string { return filepath.Join(d.State, "kubeconfig") }

// procs are the lab's process records and logs.
func (d Dirs) procs() host.Records { return host.Records{Dir: d.ProcDir(), Logs: d.LogDir()} }

// BuildCache is the build cache inside the cache directory.
func (d Dirs) BuildCache() build.Cache { return build.Cache{Dir: d.Cache} }
