// Package auditlog reads Kubernetes apiserver audit logs (audit.k8s.io/v1 Events as JSON lines, plain or
// gzip, rotated sets) in one streaming pass and says who loads the apiserver: top clients by requests and
// LISTs, LISTs of large collections, 409 conflicts by client, resource and object, per-minute series.
package auditlog

import (
	"bytes"
	"errors"
	"strconv"
	"time"
)

// Event holds the fields of an audit event that the analysis uses.
type Event struct {
	Stage       string
	Verb        string
	User        string
	UserAgent   string
	Resource    string
	Subresource string
	APIGroup    string
	Namespace   string
	Name        string
	Code        int
	Received    time.Time
	StageTime   time.Time
}

var errSyntax = errors.New("malformed JSON")

// ParseLine decodes one audit event line. It is a purpose-built scanner: it reads only the fields above and
// skips every other value without allocating, which makes it several times faster than a general JSON
// decoder on audit logs. Any malformed or truncated line is an error.
func ParseLine(line []byte) (Event, error) {
	var ev Event
	s := scanner{b: line}
	s.ws()
	if !s.eat('{') {
		return ev, errSyntax
	}
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "stage":
			return s.str(&ev.Stage)
		case "verb":
			return s.str(&ev.Verb)
		case "userAgent":
			return s.str(&ev.UserAgent)
		case "user":
			return s.subobject(func(k []byte) error {
				if string(k) == "username" {
					return s.str(&ev.User)
				}
				return s.skip()
			})
		case "objectRef":
			return s.subobject(func(k []byte) error {
				switch string(k) {
				case "resource":
					return s.str(&ev.Resource)
				case "subresource":
					return s.str(&ev.Subresource)
				case "apiGroup":
					return s.str(&ev.APIGroup)
				case "namespace":
					return s.str(&ev.Namespace)
				case "name":
					return s.str(&ev.Name)
				}
				return s.skip()
			})
		case "responseStatus":
			return s.subobject(func(k []byte) error {
				if string(k) == "code" {
					return s.int(&ev.Code)
				}
				return s.skip()
			})
		case "requestReceivedTimestamp":
			return s.time(&ev.Received)
		case "stageTimestamp":
			return s.time(&ev.StageTime)
		}
		return s.skip()
	})
	if err != nil {
		return ev, err
	}
	s.ws()
	if s.i != len(s.b) {
		return ev, errSyntax
	}
	if ev.Verb == "" || ev.Stage == "" {
		return ev, errors.New("not an audit event (no verb or stage)")
	}
	return ev, nil
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) eat(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// object reads key/value pairs after an opening brace, calling field for each key with the scanner at the
// value.
func (s *scanner) object(field func(key []byte) error) error {
	if s.eat('}') {
		return nil
	}
	for {
		s.ws()
		key, err := s.rawString()
		if err != nil {
			return err
		}
		if !s.eat(':') {
			return errSyntax
		}
		s.ws()
		if err := field(key); err != nil {
			return err
		}
		if s.eat(',') {
			continue
		}
		if s.eat('}') {
			return nil
		}
		return errSyntax
	}
}

func (s *scanner) subobject(field func(key []byte) error) error {
	if !s.eat('{') {
		return s.skip()
	}
	return s.object(field)
}

// rawString returns a string's bytes without unescaping (keys never need it).
func (s *scanner) rawString() ([]byte, error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, errSyntax
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			j++
		case '"':
			s.i = j + 1
			return s.b[start:j], nil
		}
	}
	return nil, errSyntax
}

// str reads a string value, unescaping it when needed.
func (s *scanner) str(dst *string) error {
	if s.i < len(s.b) && s.b[s.i] == 'n' {
		return s.literal("null")
	}
	raw, err := s.rawString()
	if err != nil {
		return err
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		*dst = string(raw)
		return nil
	}
	v, err := strconv.Unquote(`"` + string(raw) + `"`)
	if err != nil {
		// JSON escapes strconv does not know (\/): keep the raw text rather than lose the event.
		*dst = string(raw)
		return nil
	}
	*dst = v
	return nil
}

func (s *scanner) int(dst *int) error {
	start := s.i
	for s.i < len(s.b) && (s.b[s.i] == '-' || (s.b[s.i] >= '0' && s.b[s.i] <= '9')) {
		s.i++
	}
	v, err := strconv.Atoi(string(s.b[start:s.i]))
	if err != nil {
		return errSyntax
	}
	*dst = v
	return nil
}

func (s *scanner) time(dst *time.Time) error {
	var v string
	if err := s.str(&v); err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return err
	}
	*dst = t
	return nil
}

func (s *scanner) literal(lit string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return errSyntax
	}
	s.i += len(lit)
	return nil
}

// skip passes over one value of any type.
func (s *scanner) skip() error {
	s.ws()
	if s.i >= len(s.b) {
		return errSyntax
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, err := s.rawString()
		return err
	case c == '{' || c == '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, err := s.rawString(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return nil
				}
			}
			s.i++
		}
		return errSyntax
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	default:
		start := s.i
		for s.i < len(s.b) && bytes.IndexByte([]byte("+-.eE0123456789"), s.b[s.i]) >= 0 {
			s.i++
		}
		if s.i == start {
			return errSyntax
		}
		return nil
	}
}
