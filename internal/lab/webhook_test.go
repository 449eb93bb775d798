package lab

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeslow/kubeslow/internal/lab/pki"
)

// syncBuffer is a log written by the server's goroutine and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startTestWebhook serves on a loopback port with a certificate of a CA made for the test; it returns the
// review URL, a client trusting the CA, the server's log, and a stop that returns the server's error.
func startTestWebhook(t *testing.T, delay time.Duration, hang bool) (string, *http.Client, *syncBuffer, func() error) {
	t.Helper()
	dir := t.TempDir()
	if err := pki.Ensure(dir, []pki.Cert{{Name: "hook", CN: "hook", Server: true, IPs: []string{"127.0.0.1"}}}); err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "hook.crt"), filepath.Join(dir, "hook.key"))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	log := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- serveWebhook(ctx, ln, cert, delay, hang, log) }()
	stop := func() error { cancel(); return <-done }
	t.Cleanup(func() { cancel() })
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	return "https://" + ln.Addr().String() + webhookPath, client, log, stop
}

func review(uid string) []byte {
	b, _ := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metaReview, Request: &admissionv1.AdmissionRequest{UID: types.UID(uid)}})
	return b
}

var metaReview = metav1.TypeMeta{Kind: "AdmissionReview", APIVersion: "admission.k8s.io/v1"}

// TestWebhookAnswersAfterDelay: each review is allowed, with its UID, no sooner than the delay; a body that is
// not a review is refused.
func TestWebhookAnswersAfterDelay(t *testing.T) {
	url, client, log, stop := startTestWebhook(t, 150*time.Millisecond, false)
	start := time.Now()
	resp, err := client.Post(url, "application/json", bytes.NewReader(review("uid-1")))
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	var got admissionv1.AdmissionReview
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || got.Response == nil || !got.Response.Allowed || got.Response.UID != "uid-1" || got.Kind != "AdmissionReview" {
		t.Fatalf("answer %+v (%v)", got, err)
	}
	if took < 150*time.Millisecond {
		t.Errorf("answered after %s, before the 150ms delay", took)
	}
	bad, err := client.Post(url, "application/json", strings.NewReader(`{"kind":"Pod"}`))
	if err != nil {
		t.Fatal(err)
	}
	bad.Body.Close()
	if bad.StatusCode != http.StatusBadRequest {
		t.Errorf("a body without a request: status %d, want 400", bad.StatusCode)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "1 reviews answered, 0 held") {
		t.Errorf("log: %s", log.String())
	}
}

// TestWebhookHangs: a held review is never answered: the caller's time-out ends the call, and the server counts
// it held; stopping the server returns no error.
func TestWebhookHangs(t *testing.T) {
	url, client, log, stop := startTestWebhook(t, 0, true)
	client.Timeout = 300 * time.Millisecond
	_, err := client.Post(url, "application/json", bytes.NewReader(review("uid-2")))
	var ne net.Error
	if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("a held review: %v, want the client's time-out", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "0 reviews answered, 1 held") {
		t.Errorf("log: %s", log.String())
	}
}
