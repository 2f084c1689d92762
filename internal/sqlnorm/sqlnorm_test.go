package sqlnorm

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNormalize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SELECT * FROM orders WHERE id = 42", "SELECT * FROM orders WHERE id = ?"},
		{"select name from users where email = 'a@b.c' and pw='hunter2'", "select name from users where email = ? and pw=?"},
		{"SELECT 'it''s', 'a\\'b', \"col\" FROM t", "SELECT ?, \"col\" FROM t"},
		{"SELECT \"we\"\"ird\", `x` FROM t1 JOIN t2 ON t1.a2 = t2.b3", "SELECT \"we\"\"ird\", `x` FROM t1 JOIN t2 ON t1.a2 = t2.b3"},
		{"  SELECT\n\t1 -- the secret 42\n  FROM   t  ", "SELECT ? FROM t"},
		{"SELECT /* token=abc */ a FROM t /* unterminated secret", "SELECT a FROM t"},
		{"SELECT 3.14, .5, 1e-3, 2E+10, 0x1F, 0b101, -7", "SELECT ?, -?"},
		{"SELECT a FROM t WHERE b = 0xDEADBEEF", "SELECT a FROM t WHERE b = ?"},
		{"SELECT X'0aff', E'esc\\'aped', N'nat', B'101' FROM t", "SELECT ? FROM t"},
		{"SELECT * FROM t WHERE a = $1 AND b = $2", "SELECT * FROM t WHERE a = ? AND b = ?"},
		{"SELECT * FROM t WHERE a = :name AND b = @p1 AND c = ?", "SELECT * FROM t WHERE a = ? AND b = ? AND c = ?"},
		{"SELECT a::int, @@version FROM t", "SELECT a::int, @@version FROM t"},
		{"SELECT $$secret body$$, $fn$ x $fn$ FROM t", "SELECT ? FROM t"},
		{"SELECT $tag$ unterminated secret", "SELECT ?"},
		{"SELECT * FROM t WHERE id IN (1, 2, 3, 4)", "SELECT * FROM t WHERE id IN (?)"},
		{"SELECT * FROM t WHERE id IN ($1,$2,$3)", "SELECT * FROM t WHERE id IN (?)"},
		{"INSERT INTO t (a, b) VALUES (1, 'x'), (2, 'y'), (3, 'z')", "INSERT INTO t (a, b) VALUES (?)"},
		{"SELECT coalesce(a, 1) FROM t WHERE f(?) AND g((?))", "SELECT coalesce(a, ?) FROM t WHERE f(?) AND g((?))"},
		{"SELECT * FROM t WHERE a = 'unterminated secret", "SELECT * FROM t WHERE a = ?"},
		{"SELECT \"unterminated secret", "SELECT ?"},
		{"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<1000000) SELECT count(*) FROM c", "WITH RECURSIVE c(x) AS (SELECT ? UNION ALL SELECT x+? FROM c WHERE x<?) SELECT count(*) FROM c"},
		{"UPDATE t SET a=1,b=2 WHERE c=3", "UPDATE t SET a=?,b=? WHERE c=?"},
		{"SELECT 1abc FROM t", "SELECT ? FROM t"},
		{"SELECT café, 'naïve' FROM tbl", "SELECT café, ? FROM tbl"},
		{"SELECT a\x00b", "SELECT a b"},
		{"", ""},
		{"   ", ""},
	} {
		if got := Normalize(tc.in); got != tc.want {
			t.Errorf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestNormalizeCut(t *testing.T) {
	long := "SELECT " + strings.Repeat("é", 200) + " FROM t"
	got := Normalize(long)
	if n := utf8.RuneCountInString(got); n != MaxRunes || !utf8.ValidString(got) {
		t.Errorf("cut: %d runes, valid %v", n, utf8.ValidString(got))
	}
	// A list long enough to pass the cut many times over still collapses.
	in := "SELECT a FROM t WHERE id IN (" + strings.Repeat("1, ", 10000) + "1) AND b = 'x'"
	if got, want := Normalize(in), "SELECT a FROM t WHERE id IN (?) AND b = ?"; got != want {
		t.Errorf("long IN list: %q, want %q", got, want)
	}
	// The cut is that of the whole statement normalised.
	cols := strings.Repeat("col, ", 40)
	in = "SELECT " + cols + "'secret' FROM t"
	want := ("SELECT " + cols + "? FROM t")[:MaxRunes]
	if got := Normalize(in); got != want {
		t.Errorf("cut: %q, want %q", got, want)
	}
	if got := string(Append([]byte("pre\t"), "SELECT 1", 8)); got != "pre\tSELECT ?" {
		t.Errorf("Append: %q", got)
	}
}

// FuzzNormalize checks that a literal never survives whatever follows
// it, that the result is never longer than MaxRunes and holds no tab,
// newline or NUL (a boundary's text separates its attributes with a tab),
// and that it is valid UTF-8 for valid input.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"SELECT 1", "a IN (1,2)", "'x''y'", "$a$ $a$", "/* */ -- \n", "E'\\''", ":n @m $1 ?", "'"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		got := Normalize(q)
		if utf8.RuneCountInString(got) > MaxRunes {
			t.Fatalf("Normalize(%q) = %q: longer than %d runes", q, got, MaxRunes)
		}
		if strings.ContainsAny(got, "\t\n\x00") {
			t.Fatalf("Normalize(%q) = %q: a tab, a newline or a NUL", q, got)
		}
		if utf8.ValidString(q) && !utf8.ValidString(got) {
			t.Fatalf("Normalize(%q) = %q: not valid UTF-8", q, got)
		}
		const secret, number = "Zq9secretZq9", "918273645"
		if strings.Contains(q, secret) || strings.Contains(q, number) {
			return
		}
		for _, in := range []string{
			"SELECT '" + secret + "', " + number + ", " + q,
			"SELECT E'" + secret + "\\'', $x$" + secret + "$x$ " + q,
			"SELECT /* " + secret + " */ a -- " + secret + "\n" + q,
		} {
			if out := Normalize(in); strings.Contains(out, secret) || strings.Contains(out, number) {
				t.Fatalf("Normalize(%q) = %q shows the literal", in, out)
			}
		}
	})
}
