package ebpf

import (
	"encoding/binary"
	"io"
	"os"
	"strings"
	"testing"
)

func TestParseFormat(t *testing.T) {
	text, err := os.ReadFile("testdata/inet_sock_set_state.format") // kernel 6.18's
	if err != nil {
		t.Fatal(err)
	}
	fields, err := parseFormat(string(text))
	if err != nil {
		t.Fatal(err)
	}
	if f := fields["common_pid"]; f != (field{Offset: 4, Size: 4}) {
		t.Errorf("common_pid: %+v", f)
	}
	l, err := layoutFor(fields)
	if err != nil {
		t.Fatal(err)
	}
	want := setStateLayout{Skaddr: 8, OldState: 16, NewState: 20, Sport: 24, Dport: 26, Family: 28, Protocol: 30,
		Saddr: 32, Daddr: 36, SaddrV6: 40, DaddrV6: 56}
	if l != want {
		t.Errorf("layout %+v, want %+v", l, want)
	}

	for name, edit := range map[string]func(string) string{
		"missing protocol": func(s string) string { return strings.Replace(s, "protocol;", "proto;", 1) },
		"skaddr 4 bytes":   func(s string) string { return strings.Replace(s, "size:8;", "size:4;", 1) },
		"misaligned saddr": func(s string) string { return strings.Replace(s, "offset:32;", "offset:33;", 1) },
	} {
		fields, err := parseFormat(edit(string(text)))
		if err == nil {
			_, err = layoutFor(fields)
		}
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := parseFormat("name: x\nformat:\n"); err == nil {
		t.Error("no field: no error")
	}
	if _, err := parseFormat("\tfield:int x;\toffset:z;\tsize:4;\n"); err == nil {
		t.Error("bad offset: no error")
	}
}

// TestConnectProgramAssembles checks that the program marshals (Marshal rejects an invalid opcode), with every reference
// to a map or a label found, for the testdata's layout; loading it needs the kernel (TestIntegrationConnectLatency).
func TestConnectProgramAssembles(t *testing.T) {
	l := setStateLayout{Skaddr: 8, OldState: 16, NewState: 20, Sport: 24, Dport: 26, Family: 28, Protocol: 30,
		Saddr: 32, Daddr: 36, SaddrV6: 40, DaddrV6: 56}
	spec := collectionSpec(l)
	insns := spec.Programs["connects"].Instructions
	if err := insns.Marshal(io.Discard, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
	syms, err := insns.SymbolOffsets()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"starts", "events"} {
		if spec.Maps[name] == nil {
			t.Errorf("no map %s", name)
		}
	}
	for _, ins := range insns {
		if ref := ins.Reference(); ref != "" && spec.Maps[ref] == nil {
			if _, ok := syms[ref]; ok {
				continue
			}
			t.Errorf("reference %q to nothing", ref)
		}
	}
}
