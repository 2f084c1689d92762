//go:build unix

package tracer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// oNoFollow makes opening a report file fail on a symbolic link.
const oNoFollow = syscall.O_NOFOLLOW

// oNonblock keeps opening a report file from blocking (on a named pipe
// without a reader); it changes nothing for a regular file.
const oNonblock = syscall.O_NONBLOCK

// checkReportOwner refuses a report file that another user owns: a file
// planted where the program writes its reports.
func checkReportOwner(fi fs.FileInfo) error {
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if euid := os.Geteuid(); int(sys.Uid) != euid {
		return fmt.Errorf("the file is owned by user %d, not by this process' user %d", sys.Uid, euid)
	}
	return nil
}

// openErrorReason explains an error of opening a report file, or "".
func openErrorReason(err error) string {
	switch {
	case errors.Is(err, syscall.ELOOP):
		return "a symbolic link, which is never followed (name the file it points to)"
	case errors.Is(err, syscall.ENOTDIR):
		return "a part of its directory path is not a directory"
	case errors.Is(err, syscall.ENXIO):
		return "a named pipe (FIFO) or device, not a regular file"
	case errors.Is(err, syscall.EISDIR):
		return "a directory, not a regular file"
	}
	return ""
}
