//go:build !unix

package tracer

import (
	"errors"
	"os"
)

func mkfifo(string) error { return errors.New("no named pipes") }

func openFIFOReader(string) (*os.File, error) { return nil, errors.New("no named pipes") }
