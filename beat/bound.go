package beat

import (
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/matrixgo/matrix/internal/abi"
	"github.com/matrixgo/matrix/internal/sqlnorm"
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
func hookBound(kind int, a, b, c string, v any, buf *boundBuf) int {
	out := buf[:0]
	switch kind {
	case abi.BoundDB:
		out = append(out, dbSystem(v)...)
		out = append(out, abi.BoundSep)
		out = sqlnorm.Append(out, a, abi.BoundStatementMax)
	case abi.BoundHTTP:
		if a == "" {
			a = "GET"
		}
		out = appendAttr(out, a)
		out = append(out, abi.BoundSep)
		out = appendAttr(out, b)
		out = append(out, abi.BoundSep)
		out = appendAttr(out, c)
	case abi.BoundRPC:
		out = appendAttr(out, a)
		out = append(out, abi.BoundSep)
		out = appendAttr(out, rpcHost(b))
	default:
		return 0
	}
	if len(out) > len(buf) {
		// Cut on a character's boundary (the runtime keeps len(buf)).
		k := len(buf)
		for k > 0 && !utf8.RuneStart(out[k]) {
			k--
		}
		out = out[:k]
	}
	return copy(buf[:], out)
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
