package lab

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// The admission webhook scenarios' server: a lab process in the lab's namespace, on the control plane's
// address, which the apiserver calls by URL (clientConfig.url) with the lab's CA as the bundle.
const (
	WebhookProcess = "admission-webhook"
	WebhookPort    = 9443
	webhookCert    = "admission-webhook"
	webhookPath    = "/review"
)

// WebhookSpec is one admission webhook the lab registers for pod creates outside kube-system, served by
// ServeWebhook: Delay before each answer (it allows every pod), or Hang: it reads each review and never answers,
// so that each call waits out TimeoutSeconds and fails open (failurePolicy Ignore).
type WebhookSpec struct {
	// Config is the name of the webhook configuration object, Name the webhook's (fully qualified).
	Config, Name string
	// Mutating registers a MutatingWebhookConfiguration, else a ValidatingWebhookConfiguration.
	Mutating       bool
	Delay          time.Duration
	Hang           bool
	TimeoutSeconds int32
}

// WebhookURL is where the apiserver calls the lab's webhook server.
func WebhookURL() string {
	return fmt.Sprintf("https://%s:%d%s", ControlPlaneIP, WebhookPort, webhookPath)
}

// StartWebhook starts the webhook server as a lab process (its serving certificate issued from the lab's CA),
// waits until it answers TLS, registers the webhook and waits until the apiserver calls it: a dry-run pod create
// (sideEffects None lets dry runs call it) that takes at least half of the webhook's delay or timeout.
func StartWebhook(ctx context.Context, d Dirs, bin string, w WebhookSpec, progress Progress) error {
	if err := ensureCert(d, certSpec{Name: webhookCert, CN: "kubeslow-lab-admission-webhook", Server: true, IPs: []string{ControlPlaneIP}}); err != nil {
		return err
	}
	argv := []string{bin, "lab", "webhook", "--listen", net.JoinHostPort(ControlPlaneIP, strconv.Itoa(WebhookPort)),
		"--cert", filepath.Join(d.PKIDir(), webhookCert+".crt"), "--key", filepath.Join(d.PKIDir(), webhookCert+".key"),
		"--delay", w.Delay.String(), "--duration", "30m"}
	if w.Hang {
		argv = append(argv, "--hang")
	}
	if err := StartLabProcess(d, WebhookProcess, argv); err != nil {
		return err
	}
	ca, err := os.ReadFile(filepath.Join(d.PKIDir(), "ca.crt"))
	if err != nil {
		return err
	}
	if err := waitWebhookServing(ctx, ca); err != nil {
		return err
	}
	c, err := AdminClient(d)
	if err != nil {
		return err
	}
	if err := registerWebhook(ctx, c, w, ca); err != nil {
		return err
	}
	wait := w.Delay
	if w.Hang {
		wait = time.Duration(w.TimeoutSeconds) * time.Second
	}
	took, err := waitWebhookCalled(ctx, c, wait/2)
	if err != nil {
		return err
	}
	progress("admission webhook %s registered (%s): a dry-run pod create took %s", w.Name, WebhookURL(), took.Round(time.Millisecond))
	return nil
}

// StopWebhook removes the webhook's configuration (what the lab did not register is left alone) and stops the
// server.
func StopWebhook(ctx context.Context, d Dirs, w WebhookSpec) error {
	c, err := AdminClient(d)
	if err != nil {
		return err
	}
	ar := c.AdmissionregistrationV1()
	if w.Mutating {
		err = ar.MutatingWebhookConfigurations().Delete(ctx, w.Config, metav1.DeleteOptions{})
	} else {
		err = ar.ValidatingWebhookConfigurations().Delete(ctx, w.Config, metav1.DeleteOptions{})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing webhook configuration %s: %w", w.Config, err)
	}
	_, err = StopLabProcess(d, WebhookProcess)
	return err
}

// registerWebhook creates the webhook's configuration: pod creates outside kube-system, by URL, failing open.
func registerWebhook(ctx context.Context, c kubernetes.Interface, w WebhookSpec, ca []byte) error {
	url, none, ignore := WebhookURL(), admregv1.SideEffectClassNone, admregv1.Ignore
	timeout := w.TimeoutSeconds
	rules := []admregv1.RuleWithOperations{{Operations: []admregv1.OperationType{admregv1.Create},
		Rule: admregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}
	cc := admregv1.WebhookClientConfig{URL: &url, CABundle: ca}
	nsSel := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: corev1.LabelMetadataName,
		Operator: metav1.LabelSelectorOpNotIn, Values: []string{metav1.NamespaceSystem}}}}
	meta := labMeta(w.Config, "")
	ar := c.AdmissionregistrationV1()
	var err error
	if w.Mutating {
		_, err = ar.MutatingWebhookConfigurations().Create(ctx, &admregv1.MutatingWebhookConfiguration{ObjectMeta: meta,
			Webhooks: []admregv1.MutatingWebhook{{Name: w.Name, ClientConfig: cc, Rules: rules, FailurePolicy: &ignore, SideEffects: &none,
				TimeoutSeconds: &timeout, NamespaceSelector: nsSel, AdmissionReviewVersions: []string{"v1"}}}}, metav1.CreateOptions{})
	} else {
		_, err = ar.ValidatingWebhookConfigurations().Create(ctx, &admregv1.ValidatingWebhookConfiguration{ObjectMeta: meta,
			Webhooks: []admregv1.ValidatingWebhook{{Name: w.Name, ClientConfig: cc, Rules: rules, FailurePolicy: &ignore, SideEffects: &none,
				TimeoutSeconds: &timeout, NamespaceSelector: nsSel, AdmissionReviewVersions: []string{"v1"}}}}, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("registering webhook %s: %w", w.Name, err)
	}
	return nil
}

// waitWebhookServing waits (at most 15 s) until the server completes a TLS handshake with the lab's CA.
func waitWebhookServing(ctx context.Context, ca []byte) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	addr := net.JoinHostPort(ControlPlaneIP, strconv.Itoa(WebhookPort))
	dl := &tls.Dialer{Config: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, NetDialer: &net.Dialer{Timeout: time.Second}}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		conn, err := dl.DialContext(ctx, "tcp", addr)
		if last = err; err != nil {
			return false, nil
		}
		return true, conn.Close()
	})
	if err != nil {
		return fmt.Errorf("admission webhook server on %s did not serve TLS within 15s: %w (last: %v)", addr, err, last)
	}
	return nil
}

// waitWebhookCalled dry-runs a pod create in the default namespace until one takes at least atLeast (the apiserver
// calls the webhook once its informer has the new configuration), at most 30 s; it returns that create's time.
func waitWebhookCalled(ctx context.Context, c kubernetes.Interface, atLeast time.Duration) (time.Duration, error) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "kubeslow-lab-webhook-probe-", Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: PauseImage}}}}
	var took time.Duration
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		start := time.Now()
		_, last = c.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		took = time.Since(start)
		return last == nil && took >= atLeast, nil
	})
	if err != nil {
		return took, fmt.Errorf("the apiserver did not call the admission webhook within 30s (a dry-run pod create took %s; last error: %v)", took, last)
	}
	return took, nil
}

// ServeWebhook serves admission reviews on addr over TLS until ctx ends: each allowed after delay, or, with
// hang, read and never answered (the handler returns when the apiserver gives up on the call). It logs to w
// what it serves and, at the end, how many reviews it answered and held.
func ServeWebhook(ctx context.Context, addr, certFile, keyFile string, delay time.Duration, hang bool, w io.Writer) error {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return serveWebhook(ctx, ln, cert, delay, hang, w)
}

// serveWebhook is ServeWebhook on a listener (closed when it returns).
func serveWebhook(ctx context.Context, ln net.Listener, cert tls.Certificate, delay time.Duration, hang bool, w io.Writer) error {
	var answered, held atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc(webhookPath, func(rw http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&review); err != nil || review.Request == nil {
			http.Error(rw, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		if hang {
			held.Add(1)
			<-r.Context().Done()
			return
		}
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(admissionv1.AdmissionReview{TypeMeta: review.TypeMeta,
			Response: &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}})
		answered.Add(1)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	mode := fmt.Sprintf("allowing every review after %s", delay)
	if hang {
		mode = "holding every review unanswered"
	}
	fmt.Fprintf(w, "admission webhook on https://%s%s: %s\n", ln.Addr(), webhookPath, mode)
	err := srv.ServeTLS(ln, "", "")
	fmt.Fprintf(w, "admission webhook stopped: %d reviews answered, %d held\n", answered.Load(), held.Load())
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
