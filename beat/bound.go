package beat

import (
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/matrixgo/matrix/internal/abi"
	"github.com/matrixgo/matrix/internal/sqlnorm"
	"github.com/matrixgo/matrix/internal/tracecontext"
)

// boundBuf is the text of a boundary as the runtime hands it to hookBound.
type boundBuf = [abi.ExtBoundWords * 8]byte

// hookBound writes the text of a boundary of kind (abi.BoundDB, …) into
// buf and returns its length, 0 for none. The runtime calls it while the
// goroutine records, when a patched package begins a call out of the
// program (see abi.ExtBound):
//
//   - BoundDB: a is the statement, v the driver; the text is the database
//     system and the statement normalised (sqlnorm).
//   - BoundHTTP: a, b and c are the request's method, scheme and host.
//   - BoundRPC: a is the full method, b the target.
//   - BoundPublish: a is the messaging system, b the server's host.
//
// For a client call or a published message (BoundHTTP, BoundRPC,
// BoundPublish), v is true when the call may
// carry the dispatch's trace context on (it has no traceparent of its
// own). Unless the recorder was started with Config.NoPropagation, the
// call then gets a span id of its own, which ends the text, and out is
// the traceparent to send: the dispatch's trace (Dispatch.TraceID), that
// span id and the trace's flags.
func hookBound(kind int, a, b, c string, v any, buf *boundBuf) (n int, out string) {
	text := buf[:0]
	switch kind {
	case abi.BoundDB:
		text = append(text, dbSystem(v)...)
		text = append(text, abi.BoundSep)
		text = sqlnorm.Append(text, a, abi.BoundStatementMax)
	case abi.BoundHTTP:
		if a == "" {
			a = "GET"
		}
		text = appendAttr(text, a)
		text = append(text, abi.BoundSep)
		text = appendAttr(text, b)
		text = append(text, abi.BoundSep)
		text, out = appendLast(text, len(buf), c, passOn(v))
	case abi.BoundRPC:
		text = appendAttr(text, a)
		text = append(text, abi.BoundSep)
		text, out = appendLast(text, len(buf), rpcHost(b), passOn(v))
	case abi.BoundPublish:
		text = appendAttr(text, a)
		text = append(text, abi.BoundSep)
		text, out = appendLast(text, len(buf), b, passOn(v))
	default:
		return 0, ""
	}
	if len(text) > len(buf) {
		// Cut on a character's boundary (the runtime keeps len(buf)).
		k := len(buf)
		for k > 0 && !utf8.RuneStart(text[k]) {
			k--
		}
		text = text[:k]
	}
	return copy(buf[:], text), out
}

// appendLast appends the last attribute of a client call's text, which
// may grow to limit bytes. When tc names a trace, the call passes it on:
// the id of its span follows, the attribute giving way to it, and out is
// the traceparent to send.
func appendLast(text []byte, limit int, last string, tc tracecontext.Context) (_ []byte, out string) {
	room := limit - len(text) - 1 - hex.EncodedLen(len(tc.SpanID))
	if tc.TraceID == [16]byte{} || room < 0 {
		return appendAttr(text, last), ""
	}
	text = appendAttr(text, last[:min(len(last), room)])
	text = append(text, abi.BoundSep)
	return hex.AppendEncode(text, tc.SpanID[:]), tc.String()
}

// passOn returns the trace context a client call passes on: none unless
// v, the patched package's say, is true and the recorder propagates.
func passOn(v any) tracecontext.Context {
	if v == true && propagating() {
		return outgoing()
	}
	return tracecontext.Context{}
}

// propagating reports whether client calls pass the trace context on.
func propagating() bool {
	r := cur.Load()
	return r != nil && !r.cfg.NoPropagation
}

// outgoing returns the trace context a client call of the recording
// goroutine passes on: the trace of the dispatch it records for (its own
// or, on a goroutine started inside it, the one that started it) and a new
// span id, that of the call. The zero Context when the goroutine records
// for none, or for a test or a benchmark (see outgoingDispatch).
func outgoing() tracecontext.Context {
	d := outgoingDispatch()
	if d == nil {
		return tracecontext.Context{}
	}
	t := d.trace()
	return tracecontext.Context{TraceID: t.id, SpanID: newSpanID(), Flags: t.flags}
}

// outgoingDispatch returns the dispatch whose trace context the recording
// goroutine's client calls pass on: the one it records for, or on a
// goroutine started inside a dispatch, that dispatch. A dispatch with child
// goroutines is never recycled (Dispatch.recycle), so a child's dispatch
// is still its own. nil when the goroutine records for none, or for a test
// or a benchmark: a test's requests are sent as it made them, since a test
// may check them byte for byte, and no trace spans a test run.
func outgoingDispatch() *Dispatch {
	p := rtCurrent()
	if p == nil || p == rtStartupRing() {
		return nil
	}
	if isKid(p) {
		p = (*abi.Ring)(p).Root
	}
	d := (*Dispatch)(p)
	if d.kind == KindTest || d.kind == KindBenchmark {
		return nil
	}
	return d
}

// hookTraceState returns the tracestate and baggage a client call of the
// recording goroutine sends with the traceparent its boundary returned
// (hookBound): the tracestate of the dispatch's request when the trace is
// the caller's, since a tracestate belongs to its traceparent and a
// dispatch that made a trace of its own has none; the baggage in any case.
func hookTraceState() (state, baggage string) {
	d := outgoingDispatch()
	if d == nil {
		return "", ""
	}
	in := d.received()
	if in == (traceIn{}) {
		return "", ""
	}
	if !d.trace().own {
		state = in.state
	}
	return state, in.baggage
}

// newSpanID returns a random span id, never all zero.
func newSpanID() [8]byte {
	var id [8]byte
	binary.LittleEndian.PutUint64(id[:], rand.Uint64()|1<<63)
	return id
}

// appendAttr appends an attribute of a boundary: at most
// abi.BoundStatementMax bytes, control characters (the separator among
// them) and NUL bytes replaced by spaces.
func appendAttr(out []byte, s string) []byte {
	s = s[:min(len(s), abi.BoundStatementMax)]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' || c == 0x7f {
			c = ' '
		}
		out = append(out, c)
	}
	return out
}

// rpcHost returns the host of a gRPC target ("dns:///api.example.com:443",
// "passthrough:///127.0.0.1:50051", "localhost:50051"): what follows the
// scheme's "//" and authority, without a path's query.
func rpcHost(target string) string {
	if i := strings.Index(target, "://"); i >= 0 {
		target = target[i+3:]
		if j := strings.IndexByte(target, '/'); j >= 0 {
			target = target[j+1:] // dns://authority/host: the host
		}
	}
	if j := strings.IndexAny(target, "?#"); j >= 0 {
		target = target[:j]
	}
	return target
}

// dbSystems maps the package of a database/sql driver to the database
// system it speaks, named as OpenTelemetry's db.system.name names it.
var dbSystems = []struct{ pkg, system string }{
	{"modernc.org/sqlite", "sqlite"},
	{"github.com/mattn/go-sqlite3", "sqlite"},
	{"github.com/ncruces/go-sqlite3", "sqlite"},
	{"github.com/glebarez/go-sqlite", "sqlite"},
	{"zombiezen.com/go/sqlite", "sqlite"},
	{"github.com/lib/pq", "postgresql"},
	{"github.com/jackc/pgx", "postgresql"},
	{"github.com/go-sql-driver/mysql", "mysql"},
	{"github.com/microsoft/go-mssqldb", "microsoft.sql_server"},
	{"github.com/denisenkom/go-mssqldb", "microsoft.sql_server"},
	{"github.com/sijms/go-ora", "oracle.db"},
	{"github.com/godror/godror", "oracle.db"},
	{"github.com/ClickHouse/clickhouse-go", "clickhouse"},
	{"github.com/duckdb/duckdb-go", "duckdb"},
	{"github.com/marcboeker/go-duckdb", "duckdb"},
}

// dbSystem names the database system of a driver (a database/sql/driver
// Driver) by the package that declares its type, "" when unknown.
func dbSystem(drv any) string {
	if drv == nil {
		return ""
	}
	t := reflect.TypeOf(drv)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pkg := t.PkgPath()
	for _, s := range dbSystems {
		if pkg == s.pkg || strings.HasPrefix(pkg, s.pkg+"/") {
			return s.system
		}
	}
	return ""
}
