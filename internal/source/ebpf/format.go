package ebpf

import (
	"fmt"
	"strconv"
	"strings"
)

// field is one field of a tracepoint's record, as its tracefs format file lists it.
type field struct {
	Offset, Size int
}

// parseFormat reads a tracefs events/<group>/<name>/format file: each "field:TYPE NAME;	offset:N;	size:N;"
// line, by NAME (an array's "[N]" suffix dropped).
func parseFormat(text string) (map[string]field, error) {
	fields := map[string]field{}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "field:") {
			continue
		}
		var decl string
		f := field{Offset: -1, Size: -1}
		for part := range strings.SplitSeq(line, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(part), ":")
			if !ok {
				continue
			}
			switch k {
			case "field":
				decl = v
			case "offset", "size":
				n, err := strconv.Atoi(v)
				if err != nil {
					return nil, fmt.Errorf("format line %q: %s: %w", line, k, err)
				}
				if k == "offset" {
					f.Offset = n
				} else {
					f.Size = n
				}
			}
		}
		words := strings.Fields(decl)
		if len(words) == 0 || f.Offset < 0 || f.Size <= 0 {
			return nil, fmt.Errorf("format line %q: want field, offset and size", line)
		}
		name := words[len(words)-1]
		if i := strings.IndexByte(name, '['); i >= 0 {
			name = name[:i]
		}
		fields[strings.TrimLeft(name, "*")] = f
	}
	if len(fields) == 0 {
		return nil, fmt.Errorf("no field in the format")
	}
	return fields, nil
}

// setStateLayout is where inet_sock_set_state's record keeps what the connect program reads.
type setStateLayout struct {
	Skaddr, OldState, NewState, Sport, Dport, Family, Protocol, Saddr, Daddr, SaddrV6, DaddrV6 int
}

// layoutFor checks that fields has every field the program reads, of the size it loads, at an offset the
// verifier allows for a tracepoint context load (a multiple of the load's size), and returns their offsets.
func layoutFor(fields map[string]field) (setStateLayout, error) {
	var l setStateLayout
	want := []struct {
		name  string
		size  int // the field's size in the record
		align int // the loads' size: the program reads addresses 4 bytes at a time
		dst   *int
	}{
		{"skaddr", 8, 8, &l.Skaddr},
		{"oldstate", 4, 4, &l.OldState},
		{"newstate", 4, 4, &l.NewState},
		{"sport", 2, 2, &l.Sport},
		{"dport", 2, 2, &l.Dport},
		{"family", 2, 2, &l.Family},
		{"protocol", 2, 2, &l.Protocol},
		{"saddr", 4, 4, &l.Saddr},
		{"daddr", 4, 4, &l.Daddr},
		{"saddr_v6", 16, 4, &l.SaddrV6},
		{"daddr_v6", 16, 4, &l.DaddrV6},
	}
	for _, w := range want {
		f, ok := fields[w.name]
		if !ok {
			return l, fmt.Errorf("the tracepoint has no field %s", w.name)
		}
		if f.Size != w.size {
			return l, fmt.Errorf("the tracepoint's field %s is %d bytes, want %d", w.name, f.Size, w.size)
		}
		if f.Offset%w.align != 0 {
			return l, fmt.Errorf("the tracepoint's field %s is at offset %d, not a multiple of %d", w.name, f.Offset, w.align)
		}
		*w.dst = f.Offset
	}
	return l, nil
}
