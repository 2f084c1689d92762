package tracer

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rs/zerolog"
)

// jsonListener writes each issue's content as one JSON object per line.
type jsonListener struct {
	log zerolog.Logger
}

// NewJSONListener returns the default listener: it writes the content of
// each issue to w as one JSON object on one line (keys sorted), through
// zerolog. Each issue is one Write call; w may be shared with other
// writers. Write errors go to zerolog.ErrorHandler.
func NewJSONListener(w io.Writer) Listener {
	return &jsonListener{log: zerolog.New(zerolog.SyncWriter(w))}
}

// OnReportIssue writes the issue's content.
func (l *jsonListener) OnReportIssue(is Issue) {
	l.log.Log().Fields(is.Content).Send()
}

// nopCloser is the closer of a report target the listener does not own.
type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// OpenReport opens a report target for the JSON listener: "stderr" or
// "stdout" for the process' standard streams (the closer then does
// nothing), anything else a file that issues are appended to. A new file is
// created with mode 0600 (owner only: reports name the program's
// functions); an existing file keeps its permissions. A symbolic link is
// never followed (O_NOFOLLOW where the system has it), and a file owned by
// another user is refused. Close the closer after the plugins have stopped.
func OpenReport(target string) (Listener, io.Closer, error) {
	switch target {
	case "":
		return nil, nil, errors.New("tracer: empty report target; want \"stderr\", \"stdout\" or a file path")
	case "stderr":
		return NewJSONListener(os.Stderr), nopCloser{}, nil
	case "stdout":
		return NewJSONListener(os.Stdout), nopCloser{}, nil
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_APPEND|os.O_WRONLY|oNoFollow, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("tracer: open report file (a symbolic link is not followed): %w", err)
	}
	if err := checkReportOwner(f); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("tracer: open report file %s: %w", target, err)
	}
	return NewJSONListener(f), f, nil
}
