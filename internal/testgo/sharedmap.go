package testgo

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// SharedMapAge is how long a shared test map that no run has used is kept.
const SharedMapAge = 7 * 24 * time.Hour

// SharedMap returns the path of a method mapping file for tests that build
// with the matrixexec binary exe, kept across test runs in the user's cache
// directory.
//
// The map's identity is part of matrixexec's tool id, so every package
// compiled under a new map is compiled again, the whole standard library
// included: a map made afresh by every run makes every run cold. A map
// kept from run to run lets the go command's build cache serve those
// packages, which is most of a warm run's saving.
//
// The integration and corpus tests share one such map. It is keyed by a
// hash of exe and of the integration test scripts, whose programs the
// scripts inspect through the map and its skipped file: the skipped file is
// append-only, so a map shared with another matrixexec, or with other test
// programs, could hold lines that a script's grep would wrongly find. Maps
// that no run has used for SharedMapAge are removed.
//
// MATRIX_TEST_FRESH_MAP=1, or a user cache directory that cannot be used,
// gives a map in dir instead, made afresh: a run as cold as on a new
// machine.
func SharedMap(dir, exe string) (string, error) {
	fresh := filepath.Join(dir, "methodMapping.txt")
	if os.Getenv("MATRIX_TEST_FRESH_MAP") == "1" {
		return fresh, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return fresh, nil
	}
	f, err := os.Open(exe)
	if err != nil {
		return "", fmt.Errorf("shared test map: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("shared test map: hash %s: %w", exe, err)
	}
	scripts, err := scriptsContent()
	if err != nil {
		return "", err
	}
	h.Write(scripts)
	root := filepath.Join(cache, "matrix", "testmaps")
	key := filepath.Join(root, hex.EncodeToString(h.Sum(nil))[:24])
	if err := os.MkdirAll(key, 0o755); err != nil {
		return fresh, nil
	}
	now := time.Now()
	_ = os.Chtimes(key, now, now) // marks it used
	prune(root, now)
	return filepath.Join(key, "methodMapping.txt"), nil
}

// prune removes the maps under root that no run has used for SharedMapAge.
func prune(root string, now time.Time) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !e.IsDir() || now.Sub(info.ModTime()) < SharedMapAge {
			continue
		}
		_ = os.RemoveAll(filepath.Join(root, e.Name()))
	}
}

// scriptsContent returns the names and contents of the integration test
// scripts (testdata/script and testdata/release), in name order.
func scriptsContent() ([]byte, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return nil, errors.New("shared test map: no source path for package testgo")
	}
	var b []byte
	for _, sub := range []string{"script", "release"} {
		dir := filepath.Join(filepath.Dir(file), "..", "..", "integration", "testdata", sub)
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("shared test map: %w", err)
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				return nil, fmt.Errorf("shared test map: %w", err)
			}
			b = fmt.Appendf(b, "%s/%s\x00%d\x00", sub, e.Name(), len(data))
			b = append(b, data...)
		}
	}
	return b, nil
}
