package labtest

import (
	"strings"
	"testing"
)

func TestReadCreditEvents(t *testing.T) {
	evs, err := ReadCreditEvents(strings.NewReader(`{"t":"2026-11-23T12:00:00Z","event":"start","ios":0,"credits":100,"limitIOPS":3000}
{"t":"2026-11-23T12:03:00Z","event":"exhausted","ios":120,"credits":-3,"limitIOPS":20}
`))
	if err != nil || len(evs) != 2 || evs[1].Event != "exhausted" || evs[1].IOs != 120 || evs[1].Limit != 20 {
		t.Fatalf("%+v %v", evs, err)
	}
	if _, err := ReadCreditEvents(strings.NewReader(`{"t":`)); err == nil {
		t.Error("a cut line parsed")
	}
}
