// Package statcache keeps values that matrixexec derives from files, such
// as a tool's -V=full line, in the user's cache directory
// ($XDG_CACHE_HOME/matrixexec), keyed by what they are derived from: file
// paths with their sizes and modification times, as cmd/go keys its own
// file hashes, and any other input the caller adds to the key. A value
// that cannot be read or written is derived again: the cache makes a
// build faster, never different.
package statcache

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"path/filepath"
)

// Key is the key of a cache entry under construction.
type Key struct {
	kind string
	h    hash.Hash
}

// NewKey starts the key of an entry of the given kind.
func NewKey(kind string) *Key {
	k := &Key{kind: kind, h: sha256.New()}
	fmt.Fprintf(k.h, "kind %s\x00", kind)
	return k
}

// String adds a value to the key.
func (k *Key) String(s string) *Key {
	fmt.Fprintf(k.h, "s %d %s\x00", len(s), s)
	return k
}

// File adds a file's path, size and modification time to the key, or
// that it does not exist.
func (k *Key) File(path string) *Key {
	fi, err := os.Stat(path)
	if err != nil {
		fmt.Fprintf(k.h, "f %s missing\x00", path)
		return k
	}
	fmt.Fprintf(k.h, "f %s %d %d %v\x00", path, fi.Size(), fi.ModTime().UnixNano(), fi.Mode())
	return k
}

// Dir adds the regular files of a directory (not its subdirectories) to
// the key as File does, and the directory's own modification time, which
// changes when a file is added, removed or renamed.
func (k *Key) Dir(dir string) *Key {
	k.File(dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		fmt.Fprintf(k.h, "d %s unreadable\x00", dir)
		return k
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			k.File(filepath.Join(dir, e.Name()))
		}
	}
	return k
}

// Sum returns the key's digest.
func (k *Key) Sum() string {
	return hex.EncodeToString(k.h.Sum(nil)[:16])
}

// Path returns the cache file of the key, "" when there is no usable
// cache directory.
func (k *Key) Path() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "matrixexec", k.kind+"-"+k.Sum())
}

// Lookup returns the cache file of the key and its content, nil if it
// has none yet. The file is "" when there is no usable cache directory.
func Lookup(k *Key) (file string, content []byte) {
	file = k.Path()
	if file == "" {
		return "", nil
	}
	content, _ = os.ReadFile(file)
	return file, content
}

// Write writes a cache entry atomically (a temporary file renamed into
// place), ignoring errors: a cache that cannot be written is a slower
// build, not a failed one. It does nothing when path is "".
func Write(path string, data []byte) {
	if path == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), path) != nil {
		os.Remove(f.Name())
	}
}
