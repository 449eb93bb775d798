package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StartLabProcess starts a long-running helper process (a scenario's load) inside the lab namespace, recorded
// like the components so that `lab down` stops it.
func StartLabProcess(d Dirs, name string, argv []string) error {
	_, err := d.procs().Start(name, NetNS, argv, componentEnv([]string{sbinPath}))
	return err
}

// StopLabProcess stops the lab process name that StartLabProcess started, by its recorded PID, and returns that
// PID; 0 and no error where no such process is recorded.
func StopLabProcess(d Dirs, name string) (int, error) {
	rec, err := d.procs().Read(name)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return rec.PID, rec.Stop(10 * time.Second)
}

// FillEtcd writes ConfigMaps of ~900 KiB until etcd refuses writes with its NOSPACE alarm ("database space
// exceeded"), writing at most maxBytes. It fails if the bound is reached first.
func FillEtcd(ctx context.Context, d Dirs, maxBytes int64, progress Progress) error {
	c, err := AdminClient(d)
	if err != nil {
		return err
	}
	payload := strings.Repeat("x", 900<<10)
	var written int64
	for i := 0; written < maxBytes; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("kubeslow-lab-fill-%04d", i), Namespace: "default"},
			Data: map[string]string{"fill": payload}}
		_, err := c.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			if strings.Contains(err.Error(), "database space exceeded") {
				progress("etcd refused writes after %d MiB: %v", written>>20, err)
				return nil
			}
			return fmt.Errorf("filling etcd: %w", err)
		}
		written += int64(len(payload))
	}
	return fmt.Errorf("wrote %d MiB without reaching etcd's quota", written>>20)
}
