package build

import (
	"strings"
	"testing"
)

func TestFlannelMain(t *testing.T) {
	src := "package main\n\nimport (\n\t_ \"github.com/flannel-io/flannel/pkg/backend/hostgw\"\n\t_ \"github.com/flannel-io/flannel/pkg/backend/tencentvpc\"\n" +
		"\t_ \"github.com/flannel-io/flannel/pkg/backend/udp\"\n\t_ \"github.com/flannel-io/flannel/pkg/backend/vxlan\"\n)\n"
	out, err := FlannelMain([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Contains(s, "tencentvpc") || strings.Contains(s, "backend/udp") || !strings.Contains(s, "backend/vxlan") || !strings.Contains(s, "backend/hostgw") {
		t.Errorf("main.go:\n%s", s)
	}
	if _, err := FlannelMain([]byte("package main\n")); err == nil {
		t.Error("a main.go without the dropped imports was accepted")
	}
}
