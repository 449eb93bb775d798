package netlab

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// TestIntegrationNetlabPaths builds every path, sends a message through it to an echo server (real sockets
// in the real namespaces), and checks teardown.
func TestIntegrationNetlabPaths(t *testing.T) {
	if os.Getenv("KUBESLOW_INTEGRATION") == "" {
		t.Skip("integration test: set KUBESLOW_INTEGRATION=1 (needs root)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	const port = 18080
	builders := []struct {
		name  string
		build func(context.Context) (*Path, error)
	}{
		{"loopback", Loopback}, {"veth", Veth}, {"bridge", Bridge}, {"vxlan", VXLAN}, {"tc-ebpf", EBPFRedirect},
		{"nat-legacy", func(ctx context.Context) (*Path, error) { return NAT(ctx, IPTablesLegacy, 1000, port) }},
		{"nat-nft", func(ctx context.Context) (*Path, error) { return NAT(ctx, IPTablesNFT, 1000, port) }},
		{"nat-map", func(ctx context.Context) (*Path, error) { return NAT(ctx, NFTablesMap, 1000, port) }},
	}
	for _, b := range builders {
		t.Run(b.name, func(t *testing.T) {
			p, err := b.build(ctx)
			t.Cleanup(func() {
				if p != nil {
					if err := Destroy(context.Background(), p); err != nil {
						t.Error(err)
					}
				}
			})
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			dialPort := port
			if p.Rules > 0 {
				dialPort = ServicePort(p.Rules)
			}
			echo(ctx, t, p, port, dialPort)
		})
	}
	if left := Remaining(); len(left) != 0 {
		t.Fatalf("namespaces left: %v", left)
	}
}

func echo(ctx context.Context, t *testing.T, p *Path, port, dialPort int) {
	t.Helper()
	var ln net.Listener
	if err := inNamespace(p.ServerNS, func() (err error) {
		ln, err = net.Listen("tcp", fmt.Sprintf("%s:%d", p.ServerIP, port))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		fmt.Fprint(c, "echo "+line)
	}()
	var conn net.Conn
	if err := inNamespace(p.ClientNS, func() (err error) {
		d := net.Dialer{Timeout: 5 * time.Second}
		conn, err = d.DialContext(ctx, "tcp", fmt.Sprintf("%s:%d", p.DialIP, dialPort))
		return err
	}); err != nil {
		t.Fatalf("%s: dial %s:%d: %v", p.Name, p.DialIP, dialPort, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprint(conn, "hello\n")
	got, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || got != "echo hello\n" {
		t.Fatalf("%s: got %q, %v", p.Name, got, err)
	}
}
