// Package uuidv4 tests internal/uuidv4 against a library that knows UUIDs.
package uuidv4

import (
	"testing"

	"github.com/google/uuid"

	. "github.com/matrixgo/matrix/internal/uuidv4"
)

// TestRandom checks what a parser that knows UUIDs reads from Random:
// version 4, the RFC variant, and a new value each time.
func TestRandom(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		s := Random()
		u, err := uuid.Parse(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != s {
			t.Fatalf("%q: version %d, variant %v, canonical %q", s, u.Version(), u.Variant(), u.String())
		}
		if seen[s] {
			t.Fatalf("%q twice", s)
		}
		seen[s] = true
	}
}

// TestFormat checks the layout against the library's for fixed bytes.
func TestFormat(t *testing.T) {
	b := [16]byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0xff, 0x77, 0xff, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}
	want := "00112233-4455-4f77-bf99-aabbccddeeff"
	if got := Format(b); got != want {
		t.Errorf("Format = %q, want %q", got, want)
	}
	u, err := uuid.FromBytes(func() []byte { c := b; c[6] = c[6]&0x0f | 0x40; c[8] = c[8]&0x3f | 0x80; return c[:] }())
	if err != nil || u.String() != want {
		t.Errorf("the library reads the same bytes as %q (%v)", u.String(), err)
	}
}

// TestCanonical checks Canonical against the library's parser: a string is
// canonical exactly when the library parses it and writes it back the same.
func TestCanonical(t *testing.T) {
	cases := []string{
		Random(), "00112233-4455-1f77-bf99-aabbccddeeff", "00000000-0000-0000-0000-000000000000",
		"", "00112233-4455-4f77-bf99-aabbccddeef", "00112233-4455-4f77-bf99-aabbccddeefff",
		"00112233-4455-4F77-bf99-aabbccddeeff", "00112233x4455-4f77-bf99-aabbccddeeff",
		"{00112233-4455-4f77-bf99-aabbccddeeff}", "urn:uuid:00112233-4455-4f77-bf99-aabbccddeeff",
		"0011223344554f77bf99aabbccddeeff", "00112233-4455-4g77-bf99-aabbccddeeff",
	}
	for _, s := range cases {
		u, err := uuid.Parse(s)
		want := err == nil && u.String() == s
		if got := Canonical(s); got != want {
			t.Errorf("Canonical(%q) = %v, want %v", s, got, want)
		}
	}
}
