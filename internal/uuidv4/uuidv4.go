// Package uuidv4 writes version 4 UUIDs (RFC 9562, section 5.4): the ids
// of issues, of the processes an OTLP resource names and of id maps. It is
// the whole of what the tracer and matrixexec need of a UUID library: it
// keeps the tracer that zero-code builds link free of modules outside the
// standard library, so a program's own module graph never has to agree with
// it on one, and matrixexec free of the network packages a UUID library
// imports, so that it links statically and starts fast.
package uuidv4

import (
	"crypto/rand"
	"encoding/hex"
)

// Random returns a new random UUID.
func Random() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand crashes the program instead)
	return Format(b)
}

// Format returns b, random or hashed bytes, as a version 4 UUID: the
// version and variant bits set, in the 8-4-4-4-12 hexadecimal form.
func Format(b [16]byte) string {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:16])
	return string(s[:])
}

// Canonical reports whether s is a UUID, of any version, in the form
// Format writes: 8-4-4-4-12 lower-case hexadecimal digits.
func Canonical(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}
