// Package agentimagetest writes binaries for the agent image's tests.
package agentimagetest

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// WriteELF writes a minimal 64-bit little-endian ELF executable for machine, with a PT_INTERP program header
// (a dynamically linked binary) when interp, in a test directory, and returns its path; debug/elf reads it as
// it reads real binaries. It does not run.
func WriteELF(t testing.TB, machine elf.Machine, interp bool) string {
	t.Helper()
	progs := []elf.Prog64{{Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X), Align: 0x1000}}
	if interp {
		progs = append([]elf.Prog64{{Type: uint32(elf.PT_INTERP), Flags: uint32(elf.PF_R), Align: 1}}, progs...)
	}
	h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(machine), Version: uint32(elf.EV_CURRENT), Phoff: 64,
		Ehsize: 64, Phentsize: 56, Phnum: uint16(len(progs)), Shentsize: 64}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	var b bytes.Buffer
	if err := binary.Write(&b, binary.LittleEndian, h); err != nil {
		t.Fatal(err)
	}
	if err := binary.Write(&b, binary.LittleEndian, progs); err != nil {
		t.Fatal(err)
	}
	b.WriteString("the rest of the binary")
	path := filepath.Join(t.TempDir(), "kubeslow")
	if err := os.WriteFile(path, b.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
