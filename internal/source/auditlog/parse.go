// Package auditlog reads Kubernetes apiserver audit logs (audit.k8s.io/v1 Events as JSON lines, plain or
// gzip, rotated sets) in one streaming pass and says who loads the apiserver: top clients by requests and
// LISTs, LISTs of large collections, 409 conflicts by client, resource and object, per-minute series.
package auditlog

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
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

var (
	errSyntax   = errors.New("malformed JSON")
	errNotEvent = errors.New("not an audit event (no verb or stage)")
)

// ParseLine decodes one audit event line. It is a purpose-built scanner: it reads only the fields above and
// skips every other value without allocating, which makes it several times faster than a general JSON
// decoder on audit logs. Any malformed or truncated line is an error.
func ParseLine(line []byte) (Event, error) {
	var p parser
	var ev Event
	err := p.parse(line, &ev)
	return ev, err
}

// parser decodes lines one after another. It keeps the strings it has seen (users, user agents, verbs,
// resources: a log has few of them) so that a line's fields cost a map look-up rather than an allocation;
// past maxInterned distinct strings the new ones are allocated as usual.
type parser struct {
	s      scanner
	intern map[string]string
}

const maxInterned = 1 << 14

// str returns b as a string, shared with earlier lines when the parser interns.
func (p *parser) str(b []byte) string {
	if p.intern == nil {
		return string(b)
	}
	// Every line has a stage and a verb: their usual values need no look-up.
	switch string(b) {
	case "ResponseComplete":
		return "ResponseComplete"
	case "ResponseStarted":
		return "ResponseStarted"
	case "RequestReceived":
		return "RequestReceived"
	case "get":
		return "get"
	case "list":
		return "list"
	case "watch":
		return "watch"
	case "create":
		return "create"
	case "update":
		return "update"
	case "patch":
		return "patch"
	case "delete":
		return "delete"
	}
	if v, ok := p.intern[string(b)]; ok {
		return v
	}
	v := string(b)
	if len(p.intern) < maxInterned {
		p.intern[v] = v
	}
	return v
}

// parse decodes line into ev (which it overwrites). A syntax error says where the line stopped making sense.
func (p *parser) parse(line []byte, ev *Event) error {
	err := p.event(line, ev)
	if err == errSyntax {
		return fmt.Errorf("%w at byte %d of %d", errSyntax, min(p.s.i+1, len(line)), len(line))
	}
	return err
}

func (p *parser) event(line []byte, ev *Event) error {
	*ev = Event{}
	s := &p.s
	s.b, s.i = line, 0
	s.ws()
	if !s.eat('{') {
		return errSyntax
	}
	for more := s.first(); more; more = s.next() {
		key, err := s.key()
		if err != nil {
			return err
		}
		switch string(key) {
		case "stage":
			err = p.strField(&ev.Stage, true)
		case "verb":
			err = p.strField(&ev.Verb, true)
		case "userAgent":
			err = p.strField(&ev.UserAgent, true)
		case "user":
			err = p.user(ev)
		case "objectRef":
			err = p.objectRef(ev)
		case "responseStatus":
			err = p.responseStatus(ev)
		case "requestReceivedTimestamp":
			err = s.time(&ev.Received)
		case "stageTimestamp":
			err = s.time(&ev.StageTime)
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
	if s.err != nil {
		return s.err
	}
	s.ws()
	if s.i != len(s.b) {
		return errSyntax
	}
	if ev.Verb == "" || ev.Stage == "" {
		return errNotEvent
	}
	return nil
}

func (p *parser) user(ev *Event) error {
	s := &p.s
	if !s.eat('{') {
		return s.skip()
	}
	for more := s.first(); more; more = s.next() {
		key, err := s.key()
		if err != nil {
			return err
		}
		if string(key) == "username" {
			err = p.strField(&ev.User, true)
		} else {
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
	return s.err
}

func (p *parser) objectRef(ev *Event) error {
	s := &p.s
	if !s.eat('{') {
		return s.skip()
	}
	for more := s.first(); more; more = s.next() {
		key, err := s.key()
		if err != nil {
			return err
		}
		switch string(key) {
		case "resource":
			err = p.strField(&ev.Resource, true)
		case "subresource":
			err = p.strField(&ev.Subresource, true)
		case "apiGroup":
			err = p.strField(&ev.APIGroup, true)
		case "namespace":
			err = p.strField(&ev.Namespace, true)
		case "name":
			// Object names are many: interning them would fill the table with strings seen once.
			err = p.strField(&ev.Name, false)
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
	return s.err
}

func (p *parser) responseStatus(ev *Event) error {
	s := &p.s
	if !s.eat('{') {
		return s.skip()
	}
	for more := s.first(); more; more = s.next() {
		key, err := s.key()
		if err != nil {
			return err
		}
		if string(key) == "code" {
			err = s.int(&ev.Code)
		} else {
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
	return s.err
}

// strField reads a string value (or null), unescaping it when needed.
func (p *parser) strField(dst *string, intern bool) error {
	raw, esc, null, err := p.s.strValue()
	if err != nil || null {
		return err
	}
	if esc {
		v, err := unescape(raw)
		if err != nil {
			return err
		}
		*dst = v
		return nil
	}
	if intern {
		*dst = p.str(raw)
	} else {
		*dst = string(raw)
	}
	return nil
}

// unescape decodes a JSON string's escapes (rare in audit logs: the slow path is encoding/json's own).
func unescape(raw []byte) (string, error) {
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	var v string
	if err := json.Unmarshal(q, &v); err != nil {
		return "", errSyntax
	}
	return v, nil
}

type scanner struct {
	b []byte
	i int
	// err is the error that ended an object's iteration (first/next return more=false with it set).
	err error
}

func (s *scanner) ws() {
	for s.i < len(s.b) && s.b[s.i] <= ' ' {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// first starts iterating an object's members after its opening brace: false for an empty object.
func (s *scanner) first() bool {
	s.err = nil
	return !s.eat('}')
}

// next moves past a member's value to the next member: false at the closing brace, and on an error, which
// is then in s.err.
func (s *scanner) next() bool {
	if s.eat(',') {
		return true
	}
	if s.eat('}') {
		return false
	}
	s.err = errSyntax
	return false
}

// key reads a member's key and its colon, leaving the scanner at the value. Keys are not unescaped (the
// fields read never need it).
func (s *scanner) key() ([]byte, error) {
	s.ws()
	k, err := s.rawString()
	if err != nil {
		return nil, err
	}
	if !s.eat(':') {
		return nil, errSyntax
	}
	s.ws()
	return k, nil
}

// rawString returns a string's bytes without unescaping, the scanner at its opening quote.
func (s *scanner) rawString() ([]byte, error) {
	raw, _, err := s.stringEsc()
	return raw, err
}

const (
	ones   = 0x0101010101010101
	highs  = 0x8080808080808080
	quotes = ones * '"'
	bslash = ones * '\\'
)

// stringEsc returns a string's bytes without unescaping, and whether it holds an escape, the scanner at its
// opening quote. It looks for the closing quote or a backslash eight bytes at a time.
func (s *scanner) stringEsc() (raw []byte, esc bool, err error) {
	b := s.b
	if s.i >= len(b) || b[s.i] != '"' {
		return nil, false, errSyntax
	}
	start := s.i + 1
	j := start
	for j+8 <= len(b) {
		w := binary.LittleEndian.Uint64(b[j:])
		q, e := w^quotes, w^bslash
		// A byte of q or e is zero where w has a quote or a backslash; the lowest flagged byte is exact.
		if m := ((q-ones)&^q | (e-ones)&^e) & highs; m != 0 {
			j += bits.TrailingZeros64(m) >> 3
			if b[j] == '"' {
				s.i = j + 1
				return b[start:j], esc, nil
			}
			esc = true
			j += 2 // the backslash and the byte it escapes
			continue
		}
		j += 8
	}
	for j < len(b) {
		switch b[j] {
		case '"':
			s.i = j + 1
			return b[start:j], esc, nil
		case '\\':
			esc = true
			j += 2
			continue
		}
		j++
	}
	return nil, false, errSyntax
}

// strValue reads a string value or null: raw bytes, whether they hold escapes, whether it was null.
func (s *scanner) strValue() (raw []byte, esc, null bool, err error) {
	if s.i < len(s.b) && s.b[s.i] == 'n' {
		return nil, false, true, s.literal("null")
	}
	raw, esc, err = s.stringEsc()
	return raw, esc, false, err
}

func (s *scanner) int(dst *int) error {
	start := s.i
	for s.i < len(s.b) && (s.b[s.i] == '-' || (s.b[s.i] >= '0' && s.b[s.i] <= '9')) {
		s.i++
	}
	b := s.b[start:s.i]
	// Status codes are short: convert them by hand, leave the rest to strconv.
	if n := len(b); n > 0 && n <= 9 && b[0] != '-' {
		v := 0
		for _, c := range b {
			if c == '-' {
				return errSyntax
			}
			v = v*10 + int(c-'0')
		}
		*dst = v
		return nil
	}
	v, err := strconv.Atoi(string(b))
	if err != nil {
		return errSyntax
	}
	*dst = v
	return nil
}

func (s *scanner) time(dst *time.Time) error {
	raw, esc, null, err := s.strValue()
	if err != nil || null {
		return err
	}
	if !esc {
		if t, ok := parseRFC3339UTC(raw); ok {
			*dst = t
			return nil
		}
	}
	v := string(raw)
	if esc {
		if v, err = unescape(raw); err != nil {
			return err
		}
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return err
	}
	*dst = t
	return nil
}

// parseRFC3339UTC is time.Parse(time.RFC3339Nano, ...) for the one form the apiserver writes,
// 2026-11-22T10:00:00.123456Z (0 to 9 fraction digits, UTC): ok is false for anything else, which the
// caller leaves to time.Parse, so the two agree on every input.
func parseRFC3339UTC(b []byte) (time.Time, bool) {
	n := len(b)
	if n < 20 || b[n-1] != 'Z' || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false
	}
	d := func(i int) int { return int(b[i]-'0')*10 + int(b[i+1]-'0') }
	for _, i := range [...]int{0, 2, 5, 8, 11, 14, 17} {
		if b[i]-'0' > 9 || b[i+1]-'0' > 9 {
			return time.Time{}, false
		}
	}
	year, month, day, hour, minute, sec := d(0)*100+d(2), d(5), d(8), d(11), d(14), d(17)
	if month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if n > 20 {
		frac := b[19 : n-1]
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return time.Time{}, false
		}
		for _, c := range frac[1:] {
			if c-'0' > 9 {
				return time.Time{}, false
			}
			nsec = nsec*10 + int(c-'0')
		}
		for range 10 - len(frac) {
			nsec *= 10
		}
	} else if b[19] != 'Z' {
		return time.Time{}, false
	}
	secs := daysFromCivil(year, month, day)*86400 + int64(hour*3600+minute*60+sec)
	return time.Unix(secs, int64(nsec)).UTC(), true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is the number of days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's
// algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

func (s *scanner) literal(lit string) error {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return errSyntax
	}
	s.i += len(lit)
	return nil
}

// numByte marks the bytes of a JSON number.
var numByte = [256]bool{'+': true, '-': true, '.': true, 'e': true, 'E': true,
	'0': true, '1': true, '2': true, '3': true, '4': true, '5': true, '6': true, '7': true, '8': true, '9': true}

// skip passes over one value of any type.
func (s *scanner) skip() error {
	s.ws()
	if s.i >= len(s.b) {
		return errSyntax
	}
	switch c := s.b[s.i]; c {
	case '"':
		_, err := s.rawString()
		return err
	case '{', '[':
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
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		start := s.i
		for s.i < len(s.b) && numByte[s.b[s.i]] {
			s.i++
		}
		if s.i == start {
			return errSyntax
		}
		return nil
	}
}
